import { describe, expect, it } from 'vitest';
import type { InstanceApi, MoveRecord } from '../../api/types.js';
import { openCheckpoint } from '../../store/checkpoint.js';
import { bulkJobItems, withBulkJobItems } from './revert-bulk.js';
import type { RevertItem } from '../../actors/index.js';

const T0 = Date.parse('2026-06-01T12:00:00Z');

const move = (id: number, itemId: number, at: number, from = 'nfs-1', to = 'cluster'): MoveRecord => ({
  id,
  kind: 'projects',
  itemId,
  itemName: `g/p${itemId}`,
  state: 'finished',
  sourceStorage: from,
  destinationStorage: to,
  errorMessage: null,
  createdAt: new Date(at).toISOString(),
});

describe("a bulk forward run's job, read back from the instance", () => {
  it('takes every move of the job its checkpoint does not record, newest pages first, back to the bulk POST', async () => {
    const s = openCheckpoint(':memory:');
    s.startRound('projects', 'nfs-1', 1);
    s.recordPage(
      'projects',
      'nfs-1',
      1,
      [1, 2, 4].map((id) => ({ kind: 'projects' as const, id, storage: 'nfs-1', name: `p${id}`, sizeBytes: id })),
      T0,
    );
    s.setBulk({ kind: 'projects', source: 'nfs-1', state: 'posted', intentAt: T0, seenMaxMoveId: 0 });
    // Item 1's move was attributed; 2's was not (the run was killed); 3 was never listed by the run.
    s.markIntent('projects', 1, T0, 'cluster');
    s.markMoved('projects', 1, 11, 'finished', T0, null);
    const all = [
      move(15, 4, T0 + 5_000, 'nfs-2'), // another source
      move(14, 4, T0 + 4_000, 'nfs-1', 'nfs-3'), // not onto a destination of the run
      move(13, 3, T0 + 3_000),
      move(12, 2, T0 + 2_000),
      move(11, 1, T0 + 1_000),
      move(10, 4, T0 - 3_600_000), // long before the bulk POST: someone else's
      move(9, 4, T0 - 7_200_000),
    ];
    const pages: number[] = [];
    const api = {
      listMoves: async (_k: string, page: number, perPage: number) => {
        pages.push(page);
        const moves = all.slice((page - 1) * 2, page * 2);
        expect(perPage).toBe(100);
        return { moves, nextPage: page * 2 < all.length ? page + 1 : null };
      },
    } as unknown as Pick<InstanceApi, 'listMoves'>;
    const items = await bulkJobItems(api, s, ['nfs-1', 'nfs-2'], ['cluster']);
    expect(items.map((i) => [i.id, i.forwardMoveId, i.forwardState, i.name])).toEqual([
      [3, 13, 'left', 'g/p3'],
      [2, 12, 'pending', 'p2'],
    ]);
    expect(items[0]).toMatchObject({ from: 'cluster', to: 'nfs-1' });
    // nfs-2 has no bulk row: its list is not read; nfs-1's stops at the page older than the POST.
    expect(pages).toEqual([1, 2, 3]);
  });

  it("keeps one item per id, the job's move in place of an older one of the run's", () => {
    const it = (id: number, forwardMoveId: number): RevertItem => ({
      kind: 'projects',
      id,
      name: `p${id}`,
      sizeBytes: 1,
      from: 'cluster',
      to: 'nfs-1',
      forwardMoveId,
      forwardState: 'pending',
    });
    expect(withBulkJobItems([it(1, 11), it(2, 5)], [it(2, 12), it(3, 13)]).map((i) => [i.id, i.forwardMoveId])).toEqual(
      [
        [1, 11],
        [2, 12],
        [3, 13],
      ],
    );
  });
});
