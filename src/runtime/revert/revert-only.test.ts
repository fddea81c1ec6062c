import { describe, expect, it } from 'vitest';
import type { RevertItem } from '../../actors/index.js';
import { refuseOtherOpenItems, renamedSinceList, selectByList } from './revert-only.js';
import type { RevertList } from './revert-only.js';

const item = (id: number, over: Partial<RevertItem> = {}): RevertItem => ({
  kind: 'projects',
  id,
  name: `acme/p${id}`,
  sizeBytes: null,
  from: 'cluster',
  to: 'nfs-1',
  forwardMoveId: 100 + id,
  forwardState: 'moved',
  ...over,
});

const list = (ids: number[], over: { source?: string; destination?: string } = {}): RevertList => ({
  file: 'l.jsonl',
  digest: 'd',
  items: ids.map((id, i) => ({
    kind: 'projects',
    id,
    path: `acme/p${id}`,
    sizeBytes: null,
    source: over.source ?? 'nfs-1',
    destination: over.destination ?? 'cluster',
    line: i + 2,
  })),
});

describe('revert --only: the list against the forward run', () => {
  it('chooses the listed items the forward run moved, between the storages it moved them', () => {
    const moved = [item(1), item(2), item(3, { to: 'nfs-2' })];
    const l = list([1, 3, 9]);
    const s = selectByList(moved, l, 'f.db');
    expect(s.chosen.map((i) => i.id)).toEqual([1]);
    expect(s.notMoved).toEqual([
      expect.objectContaining({
        id: 3,
        reason: 'the forward run moved it from nfs-2 to cluster, the list says nfs-1 -> cluster',
      }),
      expect.objectContaining({ id: 9, reason: 'the forward run did not move it' }),
    ]);
  });

  it('refuses a list none of whose items the forward run moved (exit 2)', () => {
    expect(() => selectByList([item(1)], list([5]), 'f.db')).toThrow(
      expect.objectContaining({ code: 'SHARDMOVE_ITEMS_FILE_INVALID' }),
    );
  });

  it('refuses while items of an earlier revert not in the list are still to move (exit 4), naming the list to resume', () => {
    const open = [
      { kind: 'projects' as const, id: 1, state: 'pending' },
      { kind: 'projects' as const, id: 4, state: 'in_flight' },
    ];
    expect(() =>
      refuseOtherOpenItems(open, list([1, 4]), { revertFile: 'r.db', last: 'a.jsonl', command: 'c' }),
    ).not.toThrow();
    let err: unknown;
    try {
      refuseOtherOpenItems(open, list([1]), { revertFile: 'r.db', last: 'a.jsonl', command: 'shardmove revert p' });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'SHARDMOVE_ITEMS_OTHER_LIST' });
    expect(String((err as Error).message)).toMatch(
      /holds 1 item\(s\) of an earlier revert not in l\.jsonl still to move back \(projects 4 \(in_flight\)\).*--only a\.jsonl/,
    );
  });

  it('skips an item renamed since the list was made', () => {
    const names = new Map([
      ['projects:1', 'acme/p1'],
      ['projects:2', 'acme/renamed'],
    ]);
    const r = renamedSinceList([item(1), item(2)], list([1, 2]), names);
    expect(r.keep.map((i) => i.id)).toEqual([1]);
    expect(r.renamed).toEqual([
      expect.objectContaining({
        id: 2,
        storage: 'cluster',
        reason: expect.stringMatching(/renamed since the list was made/),
      }),
    ]);
  });
});
