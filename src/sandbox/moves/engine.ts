/**
 * The move engine: a pool of workers that carries moves through GitLab's states (reference §2):
 * scheduled -> started -> replicated -> finished, or started -> failed and replicated ->
 * cleanup failed. Terminal states never change.
 *
 * - Scheduling (here, from the routes and from bulk jobs) inserts the move as `scheduled` and sets
 *   the item read-only in one transaction; the move's fate (faults) and duration are fixed then,
 *   so a restart replays the same outcome.
 * - One move per item runs at a time: GitLab's worker takes an exclusive lease on the container for
 *   the whole service run (copy and cleanup). The item is writable again at `replicated`, so a new
 *   move can be scheduled during an earlier one's cleanup. If a worker picks that move up while the
 *   earlier one still runs (holds the lease), the new move fails at once, `scheduled -> failed` with
 *   no error_message (GitLab's `do_fail!`). That transition has no callback, so the read-only flag
 *   the new move set at scheduling stays set, and nothing later clears it (`finish_cleanup` of the
 *   earlier move has no callback either): the item stays read-only, and every later move is refused
 *   with `is read-only`, until an administrator clears the flag. A move that reaches a worker only
 *   after the earlier one ended takes the lease and runs normally. Before 16.6 there is no lease
 *   (./releases.ts): every job runs, two moves of one item may run at once, and a rerun of an
 *   interrupted job leaves its move `started`.
 * - Failure messages (./failures.ts) are stored untruncated, as Sidekiq logs them; the move
 *   entity shows them, truncated as GitLab stores them, from 16.7 only (./entities.ts).
 * - Moves run FIFO by id on at most `workers` at once. Starting snapshots the item's checksum and
 *   commit count; at `replicated` the item moves to the destination with that content and becomes
 *   writable again (no commit can land in between: it is read-only). `failed` leaves the item on
 *   its source, writable, with its content untouched; `cleanup failed` happens after replication.
 * - Timing is simulated with ONE timer, on the sandbox's clock, to the earliest due time. A worker that frees up takes the
 *   next move at the moment it freed up (its due time, not the moment the timer fired), so timer
 *   lateness does not accumulate over thousands of moves; the start is never more than
 *   MAX_LAG_MS in the past, so time spent stopped or stalled is not replayed as work.
 * - Every transition of a tick is written in one transaction; due times are absolute
 *   (`moves.due_at_ms`), so a restart continues moves where they were.
 * - A `stuck` move stays in `started` (and its item read-only) forever: its job died and was run
 *   again only after its 30-minute lease expired (or never), and the service acts only on a
 *   `scheduled` move. It does not keep a worker. An `interrupted` move's job was run again while
 *   the lease was still held: at the end of its copy time it fails with no `error_message`, and
 *   the item is writable again (the `started -> failed` callback). A `failed_after_switch` move
 *   does the same one step later: the item was switched to the destination first, and the source
 *   copy stays behind. See ../faults.ts.
 * - Copies left behind (`cleanup failed`, `failed_after_switch`, and on the destination
 *   `failed_after_copy`: a job killed after the copy, before the switch) are recorded in
 *   `stale_copies`; a later move of the item onto that storage reuses the directory (Gitaly's
 *   ReplicateRepository fetches into a valid existing repository), so its record goes and that
 *   copy writes only what it lacks. A copy that fails with an error removes what is there
 *   (`Repositories::ReplicateService` rescues by removing the target), a reused copy included,
 *   unless the destination's Gitaly cannot be reached.
 * - Room (./room.ts): a storage with a seeded `instance.storage_capacity` has room for
 *   a copy only beside what it holds and what earlier copies into it will write. A move that does
 *   not fit writes until the disk is full and then fails as Gitaly's replication does
 *   (`started -> failed`, Gitaly's tar failure (./failures.ts), writable, still on its source; the partial copy is
 *   removed). The outcome is fixed when the copy starts (fate `no_space`, so a restart replays it);
 *   the first of two copies that only fit alone wins. `load()` tells the room of each storage and
 *   the load the moves put on the instance (./load.ts: jobs running, Gitaly calls, disk time).
 * - Duration (./policy.ts): `moveDurationMs` when set, else 50 ms per MB divided by `speed`
 *   (at least 10 ms); 90% copying (`started`), 10% removing the source copy (`replicated`). A move
 *   to the same storage copies nothing and finishes at once; a move from or to an unreachable
 *   storage fails within 10 ms with a Gitaly UNAVAILABLE message.
 * - Bulk jobs (`bulk_jobs`) wait in Sidekiq's queue first: the bulk POST only enqueues
 *   `<Kind>::ScheduleBulkRepositoryShardMovesWorker`, and the job runs `bulkDelayMs` after it (on
 *   the sandbox's clock, from the job's `created_at`, so a restart keeps the wait), FIFO, one at a
 *   time. While it waits, nothing of it shows in the move records; the queue shows it
 *   (../exporters/sidekiq.ts). Then it is processed one batch per event-loop turn, resuming from its
 *   cursor after a restart; read-only items are skipped, as GitLab's `is read-only` validation
 *   skips them.
 * - Group wikis are moved on every EE tier: the move API and the bulk service
 *   (`GroupWikiRepository.for_shard`) check no licence, and an instance whose licence lapsed (EE
 *   Free) keeps its group wiki repositories (inventory/items.ts `hasGroupWikiRepositories`).
 *   Groups without a wiki repository (not modelled on EE; the Community Edition, which has no group
 *   move routes at all) would take as source `Group#repository_storage`, a weighted pick, copy
 *   nothing and finish (`Groups::UpdateRepositoryStorageService` acts only if the wiki repository
 *   exists).
 */
import type { Logger } from 'pino';
import type { Clock, Timer } from '../../shared/clock.js';
import type { Db, ItemKind, ItemRow, MoveRow, MoveState } from '../db.js';
import { ITEM_KINDS, isoTime } from '../db.js';
import type { Faults, MoveFate } from '../faults.js';
import type { EngineLoad, MoveScheduler, StorageGauge } from '../http/context.js';
import type { InstanceConfig } from '../seed-schema.js';
import { hasGroupWikiRepositories } from '../inventory/items.js';
import { applyContentDrift } from '../inventory/refs-store.js';
import { moveStatements, noteMoveCreated, readWeights } from './store.js';
import { MIN_MOVE_MS, moveDuration, pickStorage, splitDuration } from './policy.js';
import { copyFailureMessage, unavailableError } from './failures.js';
import { hasMoveLease } from './releases.js';
import { bytesOf, createRoomLedger } from './room.js';
import { createPoolKeeper } from './pools.js';
import { createLoadTracker, grpcCodeOf } from './load.js';
import { createCopyBook } from './copies.js';

export interface EngineOptions {
  workers: number;
  speed: number;
  /** Fixed duration of every move in ms; when unset, duration follows repository size. */
  moveDurationMs?: number;
  /** Source of randomness for destination picks (default Math.random). */
  random?: () => number;
  /** Items per bulk-schedule batch (one transaction each); default 500. */
  bulkBatchSize?: number;
  /**
   * How long a bulk job waits in Sidekiq's queue before it runs, from its POST, on the sandbox's
   * clock (ms); default 0. A job runs once it is due and every earlier one has started.
   */
  bulkDelayMs?: number;
}

/** The engine as index.ts runs it; route handlers see only its MoveScheduler side. */
export interface MoveEngine extends MoveScheduler {
  /** Starts processing (resumes moves and bulk jobs left running by a previous process). */
  start(): void;
  /** Stops timers; state stays in the database. */
  close(): void;
  /** Wakes the engine after new moves were created. */
  kick(): void;
  /** For tests: the item kinds it handles. */
  readonly kinds: readonly ItemKind[];
  /** Moves waiting for a worker, moves running, bulk jobs not done. */
  stats(): { queued: number; running: number; bulkJobs: number };
}

/** Everything the engine needs from the service's state. */
export interface EngineDeps {
  db: Db;
  config: InstanceConfig;
  clock: Clock;
  log: Logger;
  faults: Faults;
}

/** How far in the past a freed worker may start its next move (see the module comment). */
export const MAX_LAG_MS = 50;
/** Transitions per tick before yielding to the event loop. */
const MAX_TRANSITIONS_PER_TICK = 5000;

/** A move as the engine carries it (queue entries are only ids, so a million queued moves stay small). */
interface Queued {
  id: number;
  kind: ItemKind;
  itemId: number;
  source: string;
  destination: string;
  fate: string;
  durationMs: number;
  readyAt: number;
}

interface Running extends Queued {
  phase: 'started' | 'replicated';
  due: number;
  snapshotChecksum: string;
  snapshotCommits: number;
  /** The item's size (a project's repository and wiki), for the copies the move makes and leaves. */
  sizeMb: number;
  /** What the copy writes on the destination: the item, plus its pool's objects and pool copy (./pools.ts). */
  copyMb: number;
  /** The fork network whose pool this copy also copies onto the destination, when it does. */
  poolCopyOf?: number;
  /** When the copy started (the room it takes on the destination grows from here). */
  startedAt: number;
}

export function createMoveEngine(deps: EngineDeps, options: EngineOptions): MoveEngine {
  const { db, config, clock, log, faults } = deps;
  const s = moveStatements(db);
  const countItemMoves = db.prepare('SELECT count(*) AS n FROM moves WHERE kind = ? AND item_id = ?');
  /** What scheduling re-reads of the item under its transaction: three columns, not the row's fifteen. */
  const itemForMove = db.prepare<[ItemKind, number], { read_only: number; storage: string; size_mb: number }>(
    'SELECT read_only, storage, size_mb + wiki_mb AS size_mb FROM items WHERE kind = ? AND id = ?',
  );
  /**
   * What a starting move snapshots of its item. A project move copies its wiki after its
   * repository (`mirror_repositories`), so its size is both; `wiki_mb` is the wiki's part.
   */
  const itemForCopy = db.prepare<
    [ItemKind, number],
    { checksum: string; commit_count: number; size_mb: number; wiki_mb: number }
  >('SELECT checksum, commit_count, size_mb + wiki_mb AS size_mb, wiki_mb FROM items WHERE kind = ? AND id = ?');
  const wikiOf = db.prepare<[ItemKind, number], { wiki_mb: number }>(
    'SELECT wiki_mb FROM items WHERE kind = ? AND id = ?',
  );
  const workers = Math.max(1, Math.floor(options.workers));
  const random = options.random ?? Math.random;
  const batchSize = options.bulkBatchSize ?? 500;
  let queue: number[] = [];
  let head = 0;
  let running: Running[] = [];
  let timer: Timer | null = null;
  let timerAt = Number.POSITIVE_INFINITY;
  let immediate: NodeJS.Immediate | null = null;
  let bulkImmediate: NodeJS.Immediate | null = null;
  /** The wake-up of a bulk job still waiting in the queue, and when it is due (sandbox time). */
  let bulkTimer: Timer | null = null;
  let bulkWaitingUntil: number | null = null;
  const bulkDelayMs = Math.max(0, options.bulkDelayMs ?? 0);
  let started = false;
  let closed = false;

  const unreachable = (name: string) => config.unreachable.includes(name);
  /** Whether items of `kind` have a repository for a move to copy (groups: their wiki, EE only). */
  const hasRepository = (kind: ItemKind) => kind !== 'group' || hasGroupWikiRepositories(config);
  const room = createRoomLedger(db, hasRepository);
  // Fork networks: a project's object pool follows (or, before 16.3/16.6, leaves) it at the switch.
  const pools = createPoolKeeper(db, config.version, room);
  // The container's exclusive lease (16.6): before it a second job is never refused, and a rerun
  // of an interrupted job finds its move `started` and does nothing (./releases.ts).
  const lease = hasMoveLease(config.version);
  /** Workers, disks and Gitaly calls the running moves keep busy (./load.ts). */
  const tracker = createLoadTracker();
  const book = createCopyBook(s, room, pools, () => running);

  /**
   * Why the copy fails (the exception, untruncated: the move entity truncates it, from 16.7 only),
   * or null when it succeeds.
   */
  function copyFailure(m: Queued, snapshotChecksum: string): string | null {
    for (const storage of [m.source, m.destination]) {
      if (unreachable(storage)) return unavailableError(storage);
    }
    return copyFailureMessage(m, snapshotChecksum, config.version);
  }

  /** The seeded size of `storage`'s filesystem in bytes, if any. */
  function capacityOf(storage: string): number | undefined {
    return config.storage_capacity?.[storage];
  }

  /** What a started move has written to its destination by `t` (linear over its planned copy time). */
  function copiedBytes(r: Running, t: number): number {
    const full = bytesOf(r.copyMb);
    const { copyMs } = splitDuration(r.durationMs);
    if (copyMs <= 0) return full;
    return Math.round(full * Math.min(1, Math.max(0, (Math.min(t, r.due) - r.startedAt) / copyMs)));
  }

  /**
   * Bytes on `storage` at `t`: settled ones, what started moves have copied onto it, and the source
   * copies of moves in cleanup. With `reserve`, a copy counts whole from its start (what it will
   * write, up to its failure point for a move out of room): what a new copy has to fit beside.
   */
  function usedBytes(storage: string, t: number, reserve = false): number {
    let used = room.settled(storage);
    for (const r of running) {
      if (!copies(r)) continue;
      if (r.phase === 'started' && r.destination === storage)
        used += reserve ? copiedBytes(r, r.due) : copiedBytes(r, t);
      else if (r.phase === 'replicated' && r.source === storage) used += bytesOf(r.sizeMb);
    }
    return used;
  }

  /**
   * Whether `r`'s copy calls ReplicateRepository on a Gitaly: it copies, and neither storage is
   * unreachable (that call fails before any Gitaly handles it, UNAVAILABLE).
   */
  function replicates(r: Queued, failure: string | null): boolean {
    return copies(r) && !(failure !== null && grpcCodeOf(failure) === 'Unavailable');
  }

  /** The gRPC code `r`'s ReplicateRepository call returns: a job killed mid-copy cancels it. */
  function copyCode(r: Running, failure: string | null): string {
    if (failure !== null) return grpcCodeOf(failure) ?? 'OK';
    return r.fate === 'interrupted' ? 'Canceled' : 'OK';
  }

  function createMove(
    kind: ItemKind,
    itemId: number,
    source: string,
    sizeMb: number,
    destination: string,
    now: number,
  ): Queued {
    const iso = isoTime(now);
    // The attempt comes from the records, so a restarted sandbox does not replay an item's first fate.
    const previous = (countItemMoves.get(kind, itemId) as { n: number }).n;
    const fate: MoveFate = faults.moveFate(kind, itemId, previous + 1);
    const durationMs = moveDuration(sizeMb, options.speed, options.moveDurationMs);
    const id = Number(
      s.insertMove.run(kind, itemId, 'scheduled', source, destination, fate, durationMs, iso, iso).lastInsertRowid,
    );
    s.setReadOnly.run(1, kind, itemId);
    noteMoveCreated(db, kind);
    return { id, kind, itemId, source, destination, fate, durationMs, readyAt: now };
  }

  function toQueued(row: MoveRow, now: number): Queued {
    return {
      id: row.id,
      kind: row.kind,
      itemId: row.item_id,
      source: row.source,
      destination: row.destination,
      fate: row.fate,
      durationMs: row.duration_ms,
      readyAt: Math.min(now, Date.parse(row.created_at) || now),
    };
  }

  function startMove(row: MoveRow, at: number, now: number): void {
    const q = toQueued(row, now);
    at = Math.max(at, q.readyAt, now - MAX_LAG_MS);
    const iso = isoTime(at);
    const item = itemForCopy.get(q.kind, q.itemId);
    if (!item) {
      s.setMoveState.run('failed', null, `${q.kind} ${q.itemId} no longer exists`, iso, q.id);
      return;
    }
    const { copyMs } = splitDuration(q.durationMs);
    const failure = copyFailure(q, item.checksum);
    // Without the lease, the rerun of an interrupted job finds the move started and returns.
    if ((q.fate === 'stuck' || (q.fate === 'interrupted' && !lease)) && failure === null) {
      s.startMove.run(null, item.checksum, item.commit_count, iso, q.id);
      return;
    }
    // Same storage: nothing is copied (GitLab's same_filesystem?); unreachable storages fail fast.
    let due = failure !== null ? at + Math.min(copyMs, MIN_MOVE_MS) : q.source === q.destination ? at : at + copyMs;
    const capacity = capacityOf(q.destination);
    const writes = copyWrites(q, item.size_mb);
    const copyMb = writes.mb;
    if (failure === null && capacity !== undefined && copies(q)) {
      // Replication writes until the disk is full, then fails (and the partial copy is removed).
      const free = capacity - usedBytes(q.destination, at, true);
      const need = bytesOf(copyMb);
      if (need > free) {
        // The repository fits and its wiki does not: the wiki's copy fails, and the repository's
        // complete copy stays on the destination (the service's rescue removes nothing).
        q.fate = item.wiki_mb > 0 && bytesOf(copyMb - item.wiki_mb) <= free ? 'no_space_wiki' : 'no_space';
        s.setFate.run(q.fate, q.id);
        due = at + Math.max(MIN_MOVE_MS, Math.round((copyMs * Math.max(0, free)) / need));
      }
    }
    s.startMove.run(due, item.checksum, item.commit_count, iso, q.id);
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
    running.push(r);
    tracker.started(r, at, replicates(q, failure));
  }

  /** Whether the move copies a repository (not to the same storage, and the item has one). */
  function copies(r: Queued): boolean {
    return r.source !== r.destination && hasRepository(r.kind);
  }

  /** What a move's copy writes, and the copies moves leave (./copies.ts). */
  function copyWrites(q: Queued, sizeMb: number): { mb: number; poolCopyOf?: number } {
    return book.writes(q, sizeMb, copies(q));
  }

  /**
   * `track_repository`: the item now lives on the destination, with the content it had when the
   * copy started, and is writable. A copy left there by an earlier move is the one reused.
   */
  function switchToDestination(r: Running, iso: string): void {
    s.replicateItem.run(r.destination, r.snapshotChecksum, r.snapshotCommits, iso, r.kind, r.itemId);
    // A seeded fault: the copy lost a commit and a tag that GitLab's checksum did not see (../inventory/refs.ts).
    if (r.kind === 'project' && copies(r) && applyContentDrift(db, r.itemId))
      log.warn({ project: r.itemId, move: r.id }, 'content drift: the destination lost the newest commit and tag');
    room.moved(r.sizeMb, r.source, r.destination);
    book.drop(r.kind, r.itemId, r.destination);
    if (r.kind === 'project') pools.memberMoved(r.itemId, r.source, r.destination);
  }

  /** The move's copy on its source stays behind (cleanup failed, or the job died after the switch). */
  function leaveSourceCopy(r: Running): void {
    book.leave(r, r.source, r.sizeMb);
  }

  /** Whether an earlier move of this item still runs (started or replicated): its worker holds the lease. */
  function leaseHeld(kind: ItemKind, itemId: number): boolean {
    for (const r of running) if (r.itemId === itemId && r.kind === kind) return true;
    return false;
  }

  /** Starts queued moves while workers are free; `at` is when the worker became free. */
  function fill(at: number, now: number): void {
    while (running.length < workers && head < queue.length) {
      const id = queue[head++] as number;
      const row = s.moveById.get(id);
      // Only a scheduled move starts (GitLab's service does nothing for any other state).
      if (!row || row.state !== 'scheduled') continue;
      // GitLab's per-container exclusive lease: a move scheduled during an earlier one's cleanup
      // fails without a message and leaves the read-only flag it set (see the module comment).
      // Injected (../faults.ts): a job that never runs leaves the move scheduled, read-only.
      if (row.fate === 'stuck_queued') continue;
      if (lease && (leaseHeld(row.kind, row.item_id) || row.fate === 'read_only_left')) {
        s.setMoveState.run(
          'failed',
          null,
          null,
          isoTime(Math.max(at, Date.parse(row.created_at) || at, now - MAX_LAG_MS)),
          id,
        );
        log.debug(
          { move: id, kind: row.kind, item: row.item_id },
          'move failed: the container lease is held by an earlier move',
        );
        continue;
      }
      startMove(row, at, now);
    }
    if (head > 1024 && head * 2 > queue.length) {
      queue = queue.slice(head);
      head = 0;
    }
  }

  function release(index: number, now: number): void {
    const r = running[index] as Running;
    tracker.stopped(r, r.due);
    const last = running.pop() as Running;
    if (index < running.length) running[index] = last;
    fill(r.due, now);
  }

  function advance(index: number, now: number): void {
    const r = running[index] as Running;
    const iso = isoTime(r.due);
    if (r.phase === 'started') {
      const failure = copyFailure(r, r.snapshotChecksum);
      tracker.copied(r, r.due, copyCode(r, failure));
      if (failure !== null || r.fate === 'interrupted') {
        // ReplicateService's rescue removes the target, a copy it was fetching into included; a
        // job killed mid-copy runs no rescue, and an unreachable Gitaly removes nothing.
        if (failure !== null && !unreachable(r.destination)) book.drop(r.kind, r.itemId, r.destination);
        if (r.fate === 'no_space_wiki' && copies(r))
          book.leave(r, r.destination, Math.max(0, r.copyMb - (wikiOf.get(r.kind, r.itemId)?.wiki_mb ?? 0)));
        s.setMoveState.run('failed', null, failure, iso, r.id);
        s.setReadOnly.run(0, r.kind, r.itemId);
        release(index, now);
        return;
      }
      if (r.fate === 'failed_after_copy') {
        // Killed after mirror_repositories, before track_repository: the item stays on its source,
        // the complete copy (its pool's objects in it; the pool copy comes with the switch here)
        // stays on the destination, and the rerun within the lease fails the move without a message.
        if (copies(r))
          book.leave(
            r,
            r.destination,
            r.sizeMb + (r.kind === 'project' ? pools.alternatesMb(r.itemId, r.destination) : 0),
          );
        if (lease) {
          s.setMoveState.run('failed', null, null, iso, r.id);
          s.setReadOnly.run(0, r.kind, r.itemId);
        } else s.setMoveState.run('started', null, null, iso, r.id);
        release(index, now);
        return;
      }
      if (r.fate === 'failed_after_switch') {
        // The job died after track_repository; its rerun failed the still `started` move. The
        // item is on the destination, and the source copy stays (remove_old_paths never ran).
        if (copies(r)) {
          switchToDestination(r, iso);
          leaveSourceCopy(r);
        } else s.setReadOnly.run(0, r.kind, r.itemId);
        if (lease) s.setMoveState.run('failed', null, null, iso, r.id);
        else {
          // No lease, so the rerun did nothing: the move stays started, the item read-only.
          s.setReadOnly.run(1, r.kind, r.itemId);
          s.setMoveState.run('started', null, null, iso, r.id);
        }
        release(index, now);
        return;
      }
      const cleanupMs = r.source === r.destination ? 0 : splitDuration(r.durationMs).cleanupMs;
      r.phase = 'replicated';
      r.due += cleanupMs;
      s.setMoveState.run('replicated', r.due, null, iso, r.id);
      if (hasRepository(r.kind)) switchToDestination(r, iso);
      else s.setReadOnly.run(0, r.kind, r.itemId);
      return;
    }
    if (r.fate === 'cleanup_fail' && r.source !== r.destination) {
      const msg = `Failed to remove ${r.kind} repository from source storage "${r.source}": 4:Deadline Exceeded. (GRPC::DeadlineExceeded)`;
      // The item became writable at `replicated` (as in GitLab, where only started -> replicated
      // and started -> failed set it writable); a newer move may hold the flag by now.
      s.setMoveState.run('cleanup failed', null, msg, iso, r.id);
      if (copies(r)) leaveSourceCopy(r);
    } else {
      s.setMoveState.run('finished', null, null, iso, r.id);
    }
    release(index, now);
  }

  /** Advances every move due by `now`; returns false when it stopped early (more work left). */
  function drain(now: number): boolean {
    for (let n = 0; n < MAX_TRANSITIONS_PER_TICK; n++) {
      let best = -1;
      let bestDue = Number.POSITIVE_INFINITY;
      for (let i = 0; i < running.length; i++) {
        const due = (running[i] as Running).due;
        if (due < bestDue) {
          bestDue = due;
          best = i;
        }
      }
      if (best < 0 || bestDue > now) return true;
      advance(best, now);
    }
    return false;
  }

  const runTick = db.transaction((now: number): boolean => {
    fill(now, now);
    return drain(now);
  });

  /** Whether a tick would change anything (skips an empty transaction on every kick). */
  function hasWork(now: number): boolean {
    if (running.length < workers && head < queue.length) return true;
    for (const r of running) if (r.due <= now) return true;
    return false;
  }

  function onTimer(): void {
    timer = null;
    timerAt = Number.POSITIVE_INFINITY;
    tick();
  }

  function onImmediate(): void {
    immediate = null;
    tick();
  }

  /** One pass: start what can start, advance what is due, then wait for the next due time. */
  function tick(): void {
    if (closed) return;
    let complete = true;
    const now = clock.now();
    try {
      if (hasWork(now)) complete = runTick(now);
    } catch (err) {
      // The transaction rolled back: rebuild the in-memory view from the database.
      log.error({ err }, 'move engine tick failed');
      room.forget();
      load();
    }
    if (!complete) kick();
    else arm();
  }

  function arm(): void {
    if (closed || !started) return;
    if (running.length < workers && head < queue.length) {
      kick();
      return;
    }
    let next = Number.POSITIVE_INFINITY;
    for (const r of running) if (r.due < next) next = r.due;
    if (next === Number.POSITIVE_INFINITY) return;
    if (timer && timerAt <= next) return;
    if (timer) clock.clearTimeout(timer);
    timerAt = next;
    timer = clock.setTimeout(onTimer, Math.max(0, next - clock.now()));
    timer.unref();
  }

  function kick(): void {
    if (!started || closed || immediate) return;
    // A turn of the event loop, not a wait in time: no clock owns it (a simulated clock skips
    // waits, never the work between them).
    immediate = setImmediate(onImmediate);
    immediate.unref();
  }

  /** Rebuilds the queue and the running set from the database (start and error recovery). */
  function load(): void {
    queue = [];
    head = 0;
    running = [];
    const now = clock.now();
    tracker.clear(now);
    for (const row of s.activeMoves.iterate()) {
      // `initial` moves were never scheduled (GitLab runs no job for them); the sandbox creates none.
      if (row.state === 'initial') continue;
      if (row.state === 'scheduled') {
        queue.push(row.id);
        continue;
      }
      const q = toQueued(row, now);
      if (row.due_at_ms !== null) {
        const sizeMb = (s.itemById.get(q.kind, q.itemId)?.size_mb ?? 0) + (wikiOf.get(q.kind, q.itemId)?.wiki_mb ?? 0);
        const writes = row.state === 'started' ? copyWrites(q, sizeMb) : { mb: sizeMb };
        const r: Running = {
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
        running.push(r);
        tracker.started(r, now, r.phase === 'started' && replicates(r, copyFailure(r, r.snapshotChecksum)));
      }
    }
  }

  const scheduleTx = db.transaction((item: ItemRow, dest: string, now: number): Queued | null => {
    // Re-read inside the transaction: the flag is the lock (GitLab's set_repository_read_only!).
    const fresh = itemForMove.get(item.kind, item.id);
    if (!fresh || fresh.read_only) return null;
    if (!hasRepository(item.kind))
      return createMove(item.kind, item.id, pickStorage(readWeights(db), config.storages, random), 0, dest, now);
    return createMove(item.kind, item.id, fresh.storage, fresh.size_mb, dest, now);
  });

  function processBulk(): void {
    bulkImmediate = null;
    if (closed) return;
    const job = s.activeBulk.all()[0];
    if (!job) return;
    const now = clock.now();
    // Still in Sidekiq's queue (not started: nothing walked yet): it runs once due, on this clock.
    if (job.cursor_id === 0) {
      const due = (Date.parse(job.created_at) || now) + bulkDelayMs;
      if (due > now) {
        armBulk(due);
        return;
      }
    }
    bulkWaitingUntil = null;
    const created: Queued[] = [];
    try {
      db.transaction(() => {
        const weights = job.destination === null ? readWeights(db) : {};
        // Without repositories of the kind (group wikis unlicensed) the walk finds none.
        const rows = hasRepository(job.kind) ? s.bulkBatch.all(job.kind, job.source, job.cursor_id, batchSize) : [];
        for (const it of rows) {
          // Read-only items are being moved already: GitLab's `is read-only` validation skips them.
          if (it.read_only) continue;
          const destination = job.destination ?? pickStorage(weights, config.storages, random);
          created.push(createMove(job.kind, it.id, job.source, it.size_mb, destination, now));
        }
        const last = rows.length > 0 ? (rows[rows.length - 1] as { id: number }).id : job.cursor_id;
        s.advanceBulk.run(last, rows.length < batchSize ? 1 : 0, job.id);
      })();
    } catch (err) {
      log.error({ err, job: job.id }, 'bulk schedule batch failed');
      return;
    }
    for (const q of created) queue.push(q.id);
    if (created.length > 0)
      log.debug({ job: job.id, kind: job.kind, scheduled: created.length }, 'bulk batch scheduled');
    kick();
    kickBulk();
  }

  function kickBulk(): void {
    if (!started || closed || bulkImmediate) return;
    bulkImmediate = setImmediate(processBulk);
    bulkImmediate.unref();
  }

  /** Wakes the bulk worker when the waiting job is due (a clock moved by a test wakes it on `kick`). */
  function armBulk(due: number): void {
    bulkWaitingUntil = due;
    if (bulkTimer) clock.clearTimeout(bulkTimer);
    bulkTimer = clock.setTimeout(
      () => {
        bulkTimer = null;
        kickBulk();
      },
      Math.max(0, due - clock.now()),
    );
    bulkTimer.unref();
  }

  return {
    kinds: ITEM_KINDS,
    start() {
      if (started || closed) return;
      started = true;
      load();
      log.debug({ queued: queue.length - head, running: running.length }, 'move engine started');
      kick();
      kickBulk();
    },
    close() {
      closed = true;
      if (timer) clock.clearTimeout(timer);
      if (immediate) clearImmediate(immediate);
      if (bulkImmediate) clearImmediate(bulkImmediate);
      if (bulkTimer) clock.clearTimeout(bulkTimer);
      bulkTimer = null;
      timer = null;
      immediate = null;
      bulkImmediate = null;
    },
    kick() {
      kick();
      // A clock moved on by a test may have made a waiting bulk job due.
      if (bulkWaitingUntil !== null && bulkWaitingUntil <= clock.now()) kickBulk();
    },
    schedule(item, destination) {
      const errors: Record<string, string[]> = {};
      // RepositoryStorageMovable validates presence, then inclusion: "" (or spaces) fails both.
      if (destination !== undefined) {
        const wrong = [
          ...(/^\s*$/.test(destination) ? ["can't be blank"] : []),
          ...(config.storages.includes(destination) ? [] : ['is not included in the list']),
        ];
        if (wrong.length > 0) errors.destination_storage_name = wrong;
      }
      if (item.read_only) errors[item.kind] = ['is read-only'];
      if (Object.keys(errors).length > 0) return { ok: false, errors };
      const dest = destination ?? pickStorage(readWeights(db), config.storages, random);
      const now = clock.now();
      const q = scheduleTx(item, dest, now);
      if (!q) return { ok: false, errors: { [item.kind]: ['is read-only'] } };
      queue.push(q.id);
      kick();
      const iso = isoTime(now);
      const move: MoveRow = {
        id: q.id,
        kind: q.kind,
        item_id: q.itemId,
        state: 'scheduled' satisfies MoveState,
        source: q.source,
        destination: q.destination,
        error_message: null,
        fate: q.fate,
        duration_ms: q.durationMs,
        due_at_ms: null,
        snapshot_checksum: null,
        snapshot_commits: null,
        created_at: iso,
        updated_at: iso,
      };
      return { ok: true, move };
    },
    scheduleBulk(kind, source, destination) {
      s.insertBulk.run(kind, source, destination ?? null, isoTime(clock.now()));
      kickBulk();
    },
    stats() {
      return { queued: queue.length - head, running: running.length, bulkJobs: s.activeBulk.all().length };
    },
    load(): EngineLoad {
      const now = clock.now();
      const numbers = tracker.numbers(now);
      const storages = config.storages.map((storage): StorageGauge => {
        const capacity = capacityOf(storage);
        return {
          storage,
          capacityBytes: capacity ?? null,
          usedBytes: capacity === undefined ? null : usedBytes(storage, now),
          ioSeconds: numbers.ioSeconds.get(storage) ?? 0,
        };
      });
      return { storages, workers, running: numbers.running, replication: numbers.replication };
    },
  };
}
