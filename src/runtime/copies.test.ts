import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { copiesOf } from '../report/copies.js';
import { openCheckpoint } from '../store/checkpoint.js';
import type { Checkpoint } from '../store/checkpoint.js';
import { withCopyKnowledge } from './copies.js';
import { revertCheckpointPath } from './paths.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A forward checkpoint whose project 1 moved to cluster with its copy left on nfs-1 (cleanup failed). */
function forward(): { file: string; store: Checkpoint } {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-copies-'));
  dirs.push(dir);
  const file = join(dir, 'it.db');
  const store = openCheckpoint(file);
  store.claimMode('run');
  store.startRound('projects', 'nfs-1', 1);
  store.recordPage(
    'projects',
    'nfs-1',
    1,
    [{ kind: 'projects', id: 1, storage: 'nfs-1', name: 'g/p1', sizeBytes: 1 }],
    0,
  );
  store.markInFlight('projects', 1, 70, 'started', 0);
  store.markMoved('projects', 1, 70, 'cleanup failed', 1, 'cleanup failed, source copy left behind');
  return { file, store };
}

const view = (file: string, store: Checkpoint) =>
  withCopyKnowledge(file, store, (k) => copiesOf(store.summary(2), { destination: 'cluster', ...k }));

describe("the copy knowledge beside a forward run's checkpoint", () => {
  it('lists the copy as the run recorded it when no revert sits beside', () => {
    const { file, store } = forward();
    expect(view(file, store).left.map((c) => [c.id, c.source, c.known])).toEqual([[1, 'nfs-1', 'checkpoint']]);
    store.close();
  });

  it('takes a copy the revert moved its item back onto as live, and one it is moving back onto too', () => {
    const { file, store } = forward();
    const revert = openCheckpoint(revertCheckpointPath(file));
    revert.claimMode('revert');
    revert.startRound('projects', 'cluster', 1);
    revert.recordPage(
      'projects',
      'cluster',
      1,
      [{ kind: 'projects', id: 1, storage: 'cluster', name: 'g/p1', sizeBytes: 1 }],
      0,
    );
    revert.pinDestination('projects', 1, 'nfs-1');
    expect(view(file, store).live.map((c) => c.why)).toEqual([
      'the revert is moving it back onto it: the move fetches into this copy',
    ]);
    revert.markInFlight('projects', 1, 90, 'started', 0);
    revert.markMoved('projects', 1, 90, 'finished', 1, null);
    revert.close();
    const v = view(file, store);
    expect(v.left).toEqual([]);
    expect(v.live).toEqual([
      expect.objectContaining({ id: 1, storage: 'nfs-1', why: expect.stringContaining('move 90') }),
    ]);
    store.close();
  });

  it('calls no copy safe to remove when the revert beside cannot be read', () => {
    const { file, store } = forward();
    writeFileSync(
      revertCheckpointPath(file),
      'not a database at all, but a careless copy of something else\n'.repeat(100),
    );
    const v = view(file, store);
    expect(v.left.map((c) => [c.id, c.known, c.itemStorage])).toEqual([[1, 'unknown', null]]);
    expect(v.left[0]!.note).toMatch(/the revert's checkpoint .*it\.revert\.db cannot be read/);
    store.close();
  });
});
