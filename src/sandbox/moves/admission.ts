/**
 * Admission: a move enters the records as `scheduled` (the item read-only in the same
 * transaction, its fate and duration fixed then), and a free worker takes it FIFO, refusing it at
 * once when an earlier move of the item still holds the container's lease (./engine.ts).
 */
import type { ItemKind, MoveRow } from '../db.js';
import { isoTime } from '../db.js';
import type { MoveFate } from '../faults.js';
import { noteMoveCreated } from './store.js';
import { MIN_MOVE_MS, moveDuration, splitDuration } from './policy.js';
import { bytesOf } from './room.js';
import type { EngineCore, Queued, Running } from './core.js';
import { bandwidthBound, startTransfer } from './bandwidth.js';
import { MAX_LAG_MS, capacityOf, copies, copyFailure, copyWrites, replicates, usedBytes } from './core.js';

/** Inserts a `scheduled` move of the item and sets it read-only (the caller holds the transaction). */
export function createMove(
  core: EngineCore,
  item: { kind: ItemKind; id: number; source: string; sizeMb: number },
  destination: string,
  now: number,
): Queued {
  const { s, reads } = core;
  const { kind, id: itemId, source } = item;
  const iso = isoTime(now);
  // The attempt comes from the records, so a restarted sandbox does not replay an item's first fate.
  const previous = (reads.countItemMoves.get(kind, itemId) as { n: number }).n;
  const fate: MoveFate = core.faults.moveFate(kind, itemId, previous + 1);
  const durationMs = moveDuration(item.sizeMb, core.options.speed, core.options.moveDurationMs);
  const id = Number(
    s.insertMove.run(kind, itemId, 'scheduled', source, destination, fate, durationMs, iso, iso).lastInsertRowid,
  );
  s.setReadOnly.run(1, kind, itemId);
  noteMoveCreated(core.db, kind);
  return { id, kind, itemId, source, destination, fate, durationMs, readyAt: now };
}

/** The engine's view of a stored move. */
export function toQueued(row: MoveRow, now: number): Queued {
  const { id, kind, source, destination, fate } = row;
  const readyAt = Math.min(now, Date.parse(row.created_at) || now);
  return { id, kind, itemId: row.item_id, source, destination, fate, durationMs: row.duration_ms, readyAt };
}

/** Whether an earlier move of this item still runs (started or replicated): its worker holds the lease. */
function leaseHeld(core: EngineCore, kind: ItemKind, itemId: number): boolean {
  for (const r of core.running) if (r.itemId === itemId && r.kind === kind) return true;
  return false;
}

/** Starts queued moves while workers are free; `at` is when the worker became free. */
export function fill(core: EngineCore, at: number, now: number): void {
  const { queue, s } = core;
  while (core.running.length < core.workers && queue.head < queue.ids.length) {
    const id = queue.ids[queue.head++] as number;
    const row = s.moveById.get(id);
    // Only a scheduled move starts (GitLab's service does nothing for any other state).
    if (!row || row.state !== 'scheduled') continue;
    // GitLab's per-container exclusive lease: a move scheduled during an earlier one's cleanup
    // fails without a message and leaves the read-only flag it set (see ./engine.ts).
    // Injected (../faults.ts): a job that never runs leaves the move scheduled, read-only.
    if (row.fate === 'stuck_queued') continue;
    if (core.lease && (leaseHeld(core, row.kind, row.item_id) || row.fate === 'read_only_left')) {
      s.setMoveState.run(
        'failed',
        null,
        null,
        isoTime(Math.max(at, Date.parse(row.created_at) || at, now - MAX_LAG_MS)),
        id,
      );
      core.log.debug(
        { move: id, kind: row.kind, item: row.item_id },
        'move failed: the container lease is held by an earlier move',
      );
      continue;
    }
    startMove(core, row, at, now);
  }
  if (queue.head > 1024 && queue.head * 2 > queue.ids.length) {
    queue.ids = queue.ids.slice(queue.head);
    queue.head = 0;
  }
}

/** A worker takes the move at `at`: it snapshots the item and its copy's end is fixed. */
function startMove(core: EngineCore, row: MoveRow, at: number, now: number): void {
  const { s } = core;
  const q = toQueued(row, now);
  at = Math.max(at, q.readyAt, now - MAX_LAG_MS);
  const iso = isoTime(at);
  const item = core.reads.itemForCopy.get(q.kind, q.itemId);
  if (!item) {
    s.setMoveState.run('failed', null, `${q.kind} ${q.itemId} no longer exists`, iso, q.id);
    return;
  }
  const { copyMs } = splitDuration(q.durationMs);
  const failure = copyFailure(core, q, item.checksum);
  // Without the lease, the rerun of an interrupted job finds the move started and returns.
  if ((q.fate === 'stuck' || (q.fate === 'interrupted' && !core.lease)) && failure === null) {
    s.startMove.run(null, item.checksum, item.commit_count, iso, q.id);
    return;
  }
  // Same storage: nothing is copied (GitLab's same_filesystem?); unreachable storages fail fast.
  let due = failure !== null ? at + Math.min(copyMs, MIN_MOVE_MS) : q.source === q.destination ? at : at + copyMs;
  const capacity = capacityOf(core, q.destination);
  const writes = copyWrites(core, q, item.size_mb);
  const copyMb = writes.mb;
  /** What the transfer moves: all it writes, or up to the disk's end for a copy out of room. */
  let transferBytes = bytesOf(copyMb);
  let outOfRoom = false;
  if (failure === null && capacity !== undefined && copies(core, q)) {
    // Replication writes until the disk is full, then fails (and the partial copy is removed).
    const free = capacity - usedBytes(core, q.destination, at, true);
    const need = bytesOf(copyMb);
    if (need > free) {
      // The repository fits and its wiki does not: the wiki's copy fails, and the repository's
      // complete copy stays on the destination (the service's rescue removes nothing).
      q.fate = item.wiki_mb > 0 && bytesOf(copyMb - item.wiki_mb) <= free ? 'no_space_wiki' : 'no_space';
      s.setFate.run(q.fate, q.id);
      due = at + Math.max(MIN_MOVE_MS, Math.round((copyMs * Math.max(0, free)) / need));
      transferBytes = Math.max(0, free);
      outOfRoom = true;
    }
  }
  const r: Running = {
    ...q,
    phase: 'started',
    due,
    snapshotChecksum: item.checksum,
    snapshotCommits: item.commit_count,
    sizeMb: item.size_mb,
    copyMb,
    ...(writes.poolCopyOf === undefined ? {} : { poolCopyOf: writes.poolCopyOf }),
    startedAt: at,
  };
  core.running.push(r);
  if (bandwidthBound(core, q, failure)) startTransfer(core, r, transferBytes, outOfRoom);
  s.startMove.run(r.due, item.checksum, item.commit_count, iso, q.id);
  core.tracker.started(r, at, replicates(core, q, failure));
}
