/**
 * The state steps of one running move at its due time: the end of its copy (`started` to
 * `replicated`, or to `failed` by its fate), then the end of its cleanup (`finished` or
 * `cleanup failed`). A move that ends frees its worker, which takes the next queued move at that
 * moment (./admission.ts).
 */
import { isoTime } from '../db.js';
import { applyContentDrift } from '../inventory/refs-store.js';
import { FIXED_CLEANUP_MS, fixedPartMs, splitDuration } from './policy.js';
import { bytesOf } from './room.js';
import { countCopied, endTransfer } from './bandwidth.js';
import type { EngineCore, Running } from './core.js';
import { copies, copyCode, copyFailure, hasRepository, unreachable } from './core.js';
import { fill } from './admission.js';

/** Frees the worker of `running[index]` and lets it take the next move at the move's due time. */
function release(core: EngineCore, index: number, now: number): void {
  const { running } = core;
  const r = running[index] as Running;
  core.tracker.stopped(r, r.due);
  const last = running.pop() as Running;
  if (index < running.length) running[index] = last;
  fill(core, r.due, now);
}

/**
 * `track_repository`: the item now lives on the destination, with the content it had when the
 * copy started, and is writable. A copy left there by an earlier move is the one reused.
 */
function switchToDestination(core: EngineCore, r: Running, iso: string): void {
  core.s.replicateItem.run(r.destination, r.snapshotChecksum, r.snapshotCommits, iso, r.kind, r.itemId);
  // A seeded fault: the copy lost a commit and a tag that GitLab's checksum did not see (../inventory/refs.ts).
  if (r.kind === 'project' && copies(core, r) && applyContentDrift(core.db, r.itemId))
    core.log.warn({ project: r.itemId, move: r.id }, 'content drift: the destination lost the newest commit and tag');
  core.room.moved(r.sizeMb, r.source, r.destination);
  core.book.drop(r.kind, r.itemId, r.destination);
  if (r.kind === 'project') core.pools.memberMoved(r.itemId, r.source, r.destination);
}

/** The move's copy on its source stays behind (cleanup failed, or the job died after the switch). */
function leaveSourceCopy(core: EngineCore, r: Running): void {
  core.book.leave(r, r.source, r.sizeMb);
}

/** The copy failed (its error, or a job killed mid-copy): the item stays on its source, writable. */
function failCopy(core: EngineCore, r: Running, failure: string | null, iso: string): void {
  const { s } = core;
  // ReplicateService's rescue removes the target, a copy it was fetching into included; a
  // job killed mid-copy runs no rescue, and an unreachable Gitaly removes nothing.
  if (failure !== null && !unreachable(core, r.destination)) core.book.drop(r.kind, r.itemId, r.destination);
  if (r.fate === 'no_space_wiki' && copies(core, r)) {
    const wikiMb = core.reads.wikiOf.get(r.kind, r.itemId)?.wiki_mb ?? 0;
    core.book.leave(r, r.destination, Math.max(0, r.copyMb - wikiMb));
  }
  s.setMoveState.run('failed', null, failure, iso, r.id);
  s.setReadOnly.run(0, r.kind, r.itemId);
}

/**
 * Killed after mirror_repositories, before track_repository: the item stays on its source, the
 * complete copy (its pool's objects in it; the pool copy comes with the switch here) stays on the
 * destination, and the rerun within the lease fails the move without a message.
 */
function dieAfterCopy(core: EngineCore, r: Running, iso: string): void {
  const { s } = core;
  if (copies(core, r))
    core.book.leave(
      r,
      r.destination,
      r.sizeMb + (r.kind === 'project' ? core.pools.alternatesMb(r.itemId, r.destination) : 0),
    );
  if (core.lease) {
    s.setMoveState.run('failed', null, null, iso, r.id);
    s.setReadOnly.run(0, r.kind, r.itemId);
  } else s.setMoveState.run('started', null, null, iso, r.id);
}

/**
 * The job died after track_repository; its rerun failed the still `started` move. The item is on
 * the destination, and the source copy stays (remove_old_paths never ran).
 */
function dieAfterSwitch(core: EngineCore, r: Running, iso: string): void {
  const { s } = core;
  if (copies(core, r)) {
    switchToDestination(core, r, iso);
    leaveSourceCopy(core, r);
  } else s.setReadOnly.run(0, r.kind, r.itemId);
  if (core.lease) s.setMoveState.run('failed', null, null, iso, r.id);
  else {
    // No lease, so the rerun did nothing: the move stays started, the item read-only.
    s.setReadOnly.run(1, r.kind, r.itemId);
    s.setMoveState.run('started', null, null, iso, r.id);
  }
}

/** The copy's end: returns true when the move ended (its worker is free), false when cleanup follows. */
function endCopy(core: EngineCore, r: Running, iso: string): boolean {
  const failure = copyFailure(core, r, r.snapshotChecksum);
  core.tracker.copied(r, r.due, copyCode(r, failure));
  endTransfer(core, r);
  if (failure === null && copies(core, r)) countCopied(core, r, bytesOf(r.copyMb));
  if (failure !== null || r.fate === 'interrupted') failCopy(core, r, failure, iso);
  else if (r.fate === 'failed_after_copy') dieAfterCopy(core, r, iso);
  else if (r.fate === 'failed_after_switch') dieAfterSwitch(core, r, iso);
  else {
    const cleanupMs =
      r.source === r.destination
        ? 0
        : r.tailMs !== undefined
          ? fixedPartMs(FIXED_CLEANUP_MS, core.options.speed)
          : splitDuration(r.durationMs).cleanupMs;
    r.phase = 'replicated';
    r.due += cleanupMs;
    core.s.setMoveState.run('replicated', r.due, null, iso, r.id);
    if (hasRepository(core.config, r.kind)) switchToDestination(core, r, iso);
    else core.s.setReadOnly.run(0, r.kind, r.itemId);
    return false;
  }
  return true;
}

/** The cleanup's end: the source copy is removed (`finished`), or stays (`cleanup failed`). */
function endCleanup(core: EngineCore, r: Running, iso: string): void {
  if (r.fate === 'cleanup_fail' && r.source !== r.destination) {
    const msg = `Failed to remove ${r.kind} repository from source storage "${r.source}": 4:Deadline Exceeded. (GRPC::DeadlineExceeded)`;
    // The item became writable at `replicated` (as in GitLab, where only started -> replicated
    // and started -> failed set it writable); a newer move may hold the flag by now.
    core.s.setMoveState.run('cleanup failed', null, msg, iso, r.id);
    if (copies(core, r)) leaveSourceCopy(core, r);
  } else {
    core.s.setMoveState.run('finished', null, null, iso, r.id);
  }
}

/** Carries `running[index]`, which is due, one step on. */
export function advance(core: EngineCore, index: number, now: number): void {
  const r = core.running[index] as Running;
  const iso = isoTime(r.due);
  if (r.phase === 'started') {
    if (endCopy(core, r, iso)) release(core, index, now);
    return;
  }
  endCleanup(core, r, iso);
  release(core, index, now);
}
