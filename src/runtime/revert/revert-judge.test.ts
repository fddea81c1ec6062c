import { describe, expect, it } from 'vitest';
import { ApiHttpError } from '../../api/errors.js';
import type { InstanceApi, MoveRecord, MoveState } from '../../api/types.js';
import type { ItemState } from '../../store/types.js';
import type { RevertItem } from '../../actors/index.js';
import { judge, locateRevertItems } from './revert-judge.js';

const item = (id: number, forwardState: ItemState = 'moved'): RevertItem => ({
  kind: 'projects',
  id,
  name: `p${id}`,
  sizeBytes: 10,
  from: 'cluster',
  to: 'nfs-1',
  forwardMoveId: 100 + id,
  forwardState,
});

const move = (id: number, state: MoveState, from = 'nfs-1', to = 'cluster'): MoveRecord => ({
  id,
  kind: 'projects',
  itemId: 1,
  state,
  sourceStorage: from,
  destinationStorage: to,
  errorMessage: null,
  createdAt: '2026-01-01T00:00:00Z',
});

const on = (storage: string | null) =>
  storage === 'cluster'
    ? ({ at: 'source' } as const)
    : storage === null
      ? ({ at: 'unknown', why: 'no repository_storage field' } as const)
      : ({ at: 'elsewhere', storage } as const);

describe('judging one item of a revert', () => {
  it('moves back an item still where the forward run put it, and nothing else', () => {
    expect(judge(item(1), { where: on('cluster'), moves: [move(101, 'finished')] })).toEqual({ verdict: 'move' });
    // A later move that failed left it where it was: still the forward run's to undo.
    expect(
      judge(item(1), { where: on('cluster'), moves: [move(150, 'failed', 'cluster', 'nfs-2'), move(101, 'finished')] }),
    ).toEqual({ verdict: 'move' });
    // No storage field: its move list says where it is.
    expect(judge(item(1), { where: on(null), moves: [move(101, 'finished')] })).toEqual({ verdict: 'move' });
  });

  it('skips and names an item moved again, already back, deleted, or moved away and back since', () => {
    expect(judge(item(1), { where: on('nfs-2'), moves: [move(101, 'finished')] })).toMatchObject({
      verdict: 'skip',
      storage: 'nfs-2',
      reason: 'moved again since the forward run, now on nfs-2',
    });
    expect(judge(item(1), { where: on('nfs-1'), moves: [move(101, 'finished')] })).toMatchObject({
      verdict: 'skip',
      reason: 'already back on nfs-1 (moved by someone else)',
    });
    expect(judge(item(1), { where: { at: 'gone' }, moves: 'gone' })).toMatchObject({
      verdict: 'skip',
      reason: 'deleted since the forward run',
    });
    const awayAndBack = [move(160, 'finished', 'nfs-2', 'cluster'), move(150, 'finished', 'cluster', 'nfs-2')];
    expect(judge(item(1), { where: on('cluster'), moves: [...awayAndBack, move(101, 'finished')] })).toMatchObject({
      verdict: 'skip',
      reason: expect.stringContaining('moved since the forward run (move 160, finished, nfs-2 -> cluster)'),
    });
  });

  it('skips an item someone else is moving right now, whatever it reads as', () => {
    const theirs = move(150, 'started', 'cluster', 'nfs-2');
    expect(judge(item(1), { where: on('cluster'), moves: [theirs, move(101, 'finished')] })).toMatchObject({
      verdict: 'skip',
      reason: 'being moved by someone else (move 150, started, cluster -> nfs-2): left to that move',
    });
    expect(
      judge(item(1), {
        where: on('cluster'),
        moves: [move(150, 'scheduled', 'cluster', 'nfs-1'), move(101, 'finished')],
      }).verdict,
    ).toBe('skip');
  });

  it("calls the forward run's own move still queued or running alive", () => {
    const queued = move(107, 'scheduled');
    expect(judge(item(7, 'quarantined'), { where: on('nfs-1'), moves: [queued] })).toEqual({
      verdict: 'alive',
      move: queued,
    });
    expect(judge(item(7, 'quarantined'), { where: on('nfs-1'), moves: [move(107, 'started')] }).verdict).toBe('alive');
  });

  it("finds an instance without the forward run's move unrecorded", () => {
    expect(judge(item(1), { where: on('cluster'), moves: [] })).toEqual({ verdict: 'unrecorded' });
    expect(judge(item(1), { where: on('cluster'), moves: [move(7, 'finished')] })).toEqual({ verdict: 'unrecorded' });
  });

  it('takes back a row whose move failed after the switch (on the destination by that move), not one left home', () => {
    const afterSwitch = { where: on('cluster'), moves: [move(106, 'failed')] };
    expect(judge(item(6, 'left'), afterSwitch)).toEqual({ verdict: 'move' });
    expect(judge(item(6, 'quarantined'), afterSwitch)).toEqual({ verdict: 'move' });
    expect(judge(item(6, 'pending'), afterSwitch)).toEqual({ verdict: 'move' });
    // The move failed and left it on its source: nothing of the forward run's to undo, nothing listed.
    expect(judge(item(6, 'quarantined'), { where: on('nfs-1'), moves: [move(106, 'failed')] })).toEqual({
      verdict: 'not-ours',
    });
    expect(judge(item(6, 'left'), { where: { at: 'gone' }, moves: 'gone' })).toEqual({ verdict: 'not-ours' });
  });

  it('reads each item and its move list, a few items at a time, and splits them by verdict', async () => {
    const where: Record<number, string | null> = { 1: 'cluster', 2: 'nfs-3', 3: 'nfs-1', 4: null, 5: 'cluster' };
    let inFlight = 0;
    let most = 0;
    const api = {
      getItem: async (_kind: string, id: number) => {
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 1));
        inFlight--;
        const storage = where[id];
        return storage === null ? null : { kind: 'groups', id, storage, name: `g${id}`, sizeBytes: null };
      },
      listItemMoves: async (_kind: string, id: number) => {
        if (id === 4) throw new ApiHttpError({ method: 'GET', path: '/x' }, 404, '404 Group Not Found', null);
        return id === 5 ? [move(105, 'scheduled')] : [move(100 + id, 'finished')];
      },
    } as unknown as InstanceApi;
    const groups = [1, 2, 3, 4, 5].map((id) => ({ ...item(id), kind: 'groups' as const }));
    const set = await locateRevertItems(api, groups, new AbortController().signal, 2);
    expect(set.items.map((i) => i.id)).toEqual([1]);
    expect(set.skipped.map((i) => [i.id, i.storage])).toEqual([
      [2, 'nfs-3'],
      [3, 'nfs-1'],
      [4, null],
    ]);
    expect(set.alive.map((m) => [m.id, m.moveId, m.state])).toEqual([[5, 105, 'scheduled']]);
    expect(set.unrecorded).toEqual([]);
    expect(most).toBe(2);
  });
});
