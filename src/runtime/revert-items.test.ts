import { describe, expect, it } from 'vitest';
import type { InstanceApi, ItemRecord } from '../api/types.js';
import { openCheckpoint } from '../store/checkpoint.js';
import { classify, forwardMovedItems, isSeeded, locateRevertItems, revertDrains, seedRevert } from './revert-items.js';
import type { RevertItem } from './revert-items.js';
import { revertCheckpointPath } from './revert.js';

const item = (id: number, from = 'cluster', to = 'nfs-1'): RevertItem => ({
  kind: 'projects',
  id,
  name: `p${id}`,
  sizeBytes: 10,
  from,
  to,
  forwardMoveId: 100 + id,
});

/** A forward checkpoint: items 1-4 listed on nfs-1 and nfs-2, then moved (one without a move of ours). */
function forwardCheckpoint() {
  const s = openCheckpoint(':memory:');
  const rec = (id: number, storage: string): ItemRecord => ({
    kind: 'projects',
    id,
    storage,
    name: `p${id}`,
    sizeBytes: id,
  });
  s.startRound('projects', 'nfs-1', 1);
  s.recordPage('projects', 'nfs-1', 1, [rec(1, 'nfs-1'), rec(2, 'nfs-1')], 0);
  s.startRound('projects', 'nfs-2', 1);
  s.recordPage('projects', 'nfs-2', 1, [rec(3, 'nfs-2'), rec(4, 'nfs-2'), rec(5, 'nfs-2')], 0);
  for (const id of [1, 2, 3, 4, 5]) s.markIntent('projects', id, 0, id === 2 ? 'cluster-b' : 'cluster');
  s.markMoved('projects', 1, 11, 'finished', 1, null);
  s.markMoved('projects', 2, 12, 'cleanup failed', 1, null);
  s.markMoved('projects', 3, 13, 'finished', 1, null);
  // Found already there: not the forward run's to undo.
  s.markMoved('projects', 4, null, null, 1, 'already on the destination');
  s.markQuarantined('projects', 5, 'checksum', null);
  return s;
}

describe('revert items', () => {
  it('takes only what the forward run moved by a move of its own, each from its recorded destination back to its source', () => {
    const s = forwardCheckpoint();
    const items = forwardMovedItems(s, (row) => row.destination ?? 'cluster');
    expect(items).toEqual([
      { kind: 'projects', id: 1, name: 'p1', sizeBytes: 1, from: 'cluster', to: 'nfs-1', forwardMoveId: 11 },
      { kind: 'projects', id: 2, name: 'p2', sizeBytes: 2, from: 'cluster-b', to: 'nfs-1', forwardMoveId: 12 },
      { kind: 'projects', id: 3, name: 'p3', sizeBytes: 3, from: 'cluster', to: 'nfs-2', forwardMoveId: 13 },
    ]);
    expect(revertDrains(items)).toEqual({ kinds: ['projects'], sources: ['cluster', 'cluster-b'] });
  });

  it('skips an item deleted, moved again, or already back, and keeps one still there or unreadable', () => {
    expect(classify(item(1), { at: 'source' })).toBeNull();
    expect(classify(item(1), { at: 'unknown', why: 'HTTP 500' })).toBeNull();
    expect(classify(item(1), { at: 'gone' })).toMatchObject({ storage: null, reason: 'deleted since the forward run' });
    expect(classify(item(1), { at: 'elsewhere', storage: 'nfs-2' })).toMatchObject({
      storage: 'nfs-2',
      reason: 'moved again since the forward run, now on nfs-2',
    });
    expect(classify(item(1), { at: 'elsewhere', storage: 'nfs-1' })?.reason).toContain('already back on nfs-1');
  });

  it('reads each item where the forward run put it, a few at a time', async () => {
    const where: Record<number, string | null> = { 1: 'cluster', 2: 'nfs-3', 3: 'nfs-1', 4: null };
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
    } as unknown as InstanceApi;
    const groups = [1, 2, 3, 4].map((id) => ({ ...item(id), kind: 'groups' as const }));
    const set = await locateRevertItems(api, groups, new AbortController().signal, 2);
    expect(set.items.map((i) => i.id)).toEqual([1]);
    expect(set.skipped.map((i) => [i.id, i.storage])).toEqual([
      [2, 'nfs-3'],
      [3, 'nfs-1'],
      [4, null],
    ]);
    expect(most).toBe(2);
  });

  it('seeds pinned pending rows and skipped left rows in one transaction, with every listing round done', () => {
    const s = openCheckpoint(':memory:');
    const drains = { kinds: ['projects' as const], sources: ['cluster', 'cluster-b'] };
    expect(isSeeded(s, drains)).toBe(false);
    const skipped = {
      ...item(2, 'cluster-b', 'nfs-2'),
      storage: 'nfs-3',
      reason: 'moved again since the forward run, now on nfs-3',
    };
    seedRevert(s, { items: [item(1)], skipped: [skipped] }, drains, { forward: 'state/it.db', readAt: 5, now: 9 });
    expect(isSeeded(s, drains)).toBe(true);
    expect(s.getItem('projects', 1)).toMatchObject({
      source: 'cluster',
      state: 'pending',
      destination: 'nfs-1',
      listedAt: 5,
      attempts: 0,
    });
    expect(s.getItem('projects', 2)).toMatchObject({
      source: 'cluster-b',
      state: 'left',
      destination: 'nfs-2',
      lastError: skipped.reason,
    });
    for (const source of drains.sources)
      expect(s.getCursor('projects', source)).toMatchObject({ round: 1, done: true });
    expect(s.readEvents().map((e) => e.type)).toEqual(['revert.skipped', 'revert.seeded']);
    // The pin is kept by the first intent (the placement policy never overrides it).
    s.markIntent('projects', 1, 10, 'cluster');
    expect(s.getItem('projects', 1)?.destination).toBe('nfs-1');
  });

  it('keeps its checkpoint beside the forward one', () => {
    expect(revertCheckpointPath('/x/state/it.db')).toBe('/x/state/it.revert.db');
    expect(revertCheckpointPath('/x/my state/run one.sqlite')).toBe('/x/my state/run one.sqlite.revert.db');
  });
});
