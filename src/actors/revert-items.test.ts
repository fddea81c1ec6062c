import { describe, expect, it } from 'vitest';
import type { ItemRecord } from '../api/types.js';
import { openCheckpoint } from '../store/checkpoint.js';
import { forwardMovedItems, isSeeded, revertDrains, seedRevert } from './revert-items.js';
import type { RevertItem } from './revert-items.js';
import { revertCheckpointPath } from '../runtime/paths.js';

const item = (id: number, from = 'cluster', to = 'nfs-1'): RevertItem => ({
  kind: 'projects',
  id,
  name: `p${id}`,
  sizeBytes: 10,
  from,
  to,
  forwardMoveId: 100 + id,
  forwardState: 'moved',
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
  // A bulk job's move that failed after the switch (the row left, "now on cluster"), and a move
  // quarantined as stuck in the queue: both hold a move of the forward run.
  s.startRound('projects', 'nfs-1', 1);
  s.recordPage('projects', 'nfs-1', 1, [rec(6, 'nfs-1'), rec(7, 'nfs-1')], 0);
  for (const id of [6, 7]) s.markIntent('projects', id, 0, 'cluster');
  s.markInFlight('projects', 6, 16, 'started', 1);
  s.markLeft('projects', 6, 2, 'now on cluster');
  s.markInFlight('projects', 7, 17, 'scheduled', 1);
  s.markQuarantined('projects', 7, 'stuck: move 17 still scheduled', { at: 3, readOnly: true });
  return s;
}

describe('revert items', () => {
  it('takes every item the forward run made a move for, each from its recorded destination back to its source', () => {
    const s = forwardCheckpoint();
    const items = forwardMovedItems(s, (row) => row.destination ?? 'cluster');
    const one = (id: number, from: string, to: string, state: string) => ({
      kind: 'projects',
      id,
      name: `p${id}`,
      sizeBytes: id,
      from,
      to,
      forwardMoveId: 10 + id,
      forwardState: state,
    });
    expect(items).toEqual([
      one(1, 'cluster', 'nfs-1', 'moved'),
      one(2, 'cluster-b', 'nfs-1', 'moved'),
      one(3, 'cluster', 'nfs-2', 'moved'),
      one(6, 'cluster', 'nfs-1', 'left'),
      one(7, 'cluster', 'nfs-1', 'quarantined'),
    ]);
    expect(revertDrains(items)).toEqual({ kinds: ['projects'], sources: ['cluster', 'cluster-b'] });
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
