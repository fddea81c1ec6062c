/**
 * Rebuilding the engine's queue and running set from the records, at start and after a tick's
 * transaction rolled back: due times are absolute (`moves.due_at_ms`), so a restarted sandbox
 * continues each move where it was.
 */
import type { MoveRow } from '../db.js';
import type { EngineCore, Running } from './core.js';
import { copyFailure, copyWrites, replicates } from './core.js';
import { toQueued } from './admission.js';
import { bandwidthBound, resumeTransfer, resync } from './bandwidth.js';
import { bytesOf } from './room.js';

/** A `started` or `replicated` move with a due time, as it runs again. */
function runningOf(core: EngineCore, row: MoveRow & { due_at_ms: number }, now: number): Running {
  const q = toQueued(row, now);
  const { s, reads } = core;
  const sizeMb = (s.itemById.get(q.kind, q.itemId)?.size_mb ?? 0) + (reads.wikiOf.get(q.kind, q.itemId)?.wiki_mb ?? 0);
  const writes = row.state === 'started' ? copyWrites(core, q, sizeMb) : { mb: sizeMb };
  return {
    ...q,
    phase: row.state === 'replicated' ? 'replicated' : 'started',
    due: row.due_at_ms,
    snapshotChecksum: row.snapshot_checksum ?? '',
    snapshotCommits: row.snapshot_commits ?? 0,
    sizeMb,
    copyMb: writes.mb,
    ...(writes.poolCopyOf === undefined ? {} : { poolCopyOf: writes.poolCopyOf }),
    // A started move's row was last written when it started.
    startedAt: Date.parse(row.updated_at) || now,
  };
}

/** Replaces the queue and the running set with what the records say. */
export function reloadEngine(core: EngineCore): void {
  core.queue.ids = [];
  core.queue.head = 0;
  core.running = [];
  const now = core.clock.now();
  core.tracker.clear(now);
  // The disk model forgets what it timed: a tick that rolled back may have started copies that
  // are queued again now, and the copies running are estimated afresh from their records.
  core.disks?.clear(now);
  for (const row of core.s.activeMoves.iterate()) {
    // `initial` moves were never scheduled (GitLab runs no job for them); the sandbox creates none.
    if (row.state === 'initial') continue;
    if (row.state === 'scheduled') {
      core.queue.ids.push(row.id);
      continue;
    }
    if (row.due_at_ms === null) continue;
    const r = runningOf(core, { ...row, due_at_ms: row.due_at_ms }, now);
    core.running.push(r);
    const failure = copyFailure(core, r, r.snapshotChecksum);
    if (r.phase === 'started' && bandwidthBound(core, r, failure)) resumeTransfer(core, r, bytesOf(r.copyMb), now);
    core.tracker.started(r, now, r.phase === 'started' && replicates(core, r, failure));
  }
  resync(core);
}
