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
 *
 * The parts: ./core.ts (shared state and questions about a move), ./admission.ts (scheduling and
 * a worker taking a move), ./steps.ts (the state steps), ./ticker.ts (timing), ./reload.ts
 * (rebuilding from the records) and ./bulk.ts (bulk jobs).
 */
import type { ItemKind, ItemRow, MoveRow, MoveState } from '../db.js';
import { ITEM_KINDS, isoTime } from '../db.js';
import type { EngineLoad, MoveScheduler, ScheduleOutcome, StorageGauge } from '../http/context.js';
import { readWeights } from './store.js';
import { pickStorage } from './policy.js';
import type { EngineCore, EngineDeps, EngineOptions, Queued } from './core.js';
import { capacityOf, createEngineCore, hasRepository, usedBytes } from './core.js';
import { createMove } from './admission.js';
import { createTicker } from './ticker.js';
import { createBulkWorker } from './bulk.js';

export type { EngineDeps, EngineOptions } from './core.js';
export { MAX_LAG_MS } from './core.js';

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

/** GitLab's validation of a move's destination and item (RepositoryStorageMovable), before any write. */
function validate(core: EngineCore, item: ItemRow, destination: string | undefined): Record<string, string[]> {
  const errors: Record<string, string[]> = {};
  // RepositoryStorageMovable validates presence, then inclusion: "" (or spaces) fails both.
  if (destination !== undefined) {
    const wrong = [
      ...(/^\s*$/.test(destination) ? ["can't be blank"] : []),
      ...(core.config.storages.includes(destination) ? [] : ['is not included in the list']),
    ];
    if (wrong.length > 0) errors.destination_storage_name = wrong;
  }
  if (item.read_only) errors[item.kind] = ['is read-only'];
  return errors;
}

/** The record of a move just scheduled, as the route returns it. */
function scheduledRow(q: Queued, now: number): MoveRow {
  const iso = isoTime(now);
  return {
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
}

/** Room and disk time of every configured storage, jobs and Gitaly calls, at `now`. */
function engineLoad(core: EngineCore, now: number): EngineLoad {
  const numbers = core.tracker.numbers(now);
  const storages = core.config.storages.map((storage): StorageGauge => {
    const capacity = capacityOf(core, storage);
    const modelled = core.disks?.counters(storage, now);
    const whole = core.copiedBytes.get(storage);
    return {
      storage,
      capacityBytes: capacity ?? null,
      usedBytes: capacity === undefined ? null : usedBytes(core, storage, now),
      // A disk with a bandwidth is as busy as its copies and other tenants keep it (./disks.ts).
      ioSeconds:
        core.disks?.limits(storage) === true ? (modelled?.busySeconds ?? 0) : (numbers.ioSeconds.get(storage) ?? 0),
      // The disk model counts its copies' bytes as they go; the others count whole at their end.
      readBytes: (modelled?.readBytes ?? 0) + (whole?.read ?? 0),
      writtenBytes: (modelled?.writtenBytes ?? 0) + (whole?.written ?? 0),
    };
  });
  return { storages, workers: core.workers, running: numbers.running, replication: numbers.replication };
}

export function createMoveEngine(deps: EngineDeps, options: EngineOptions): MoveEngine {
  const core = createEngineCore(deps, options);
  const { db, config, clock, log } = core;
  const ticker = createTicker(core);
  const bulk = createBulkWorker(core, ticker.kick, () => ticker.started && !ticker.closed);

  const scheduleTx = db.transaction((item: ItemRow, dest: string, now: number): Queued | null => {
    // Re-read inside the transaction: the flag is the lock (GitLab's set_repository_read_only!).
    const fresh = core.reads.itemForMove.get(item.kind, item.id);
    if (!fresh || fresh.read_only) return null;
    const { kind, id } = item;
    if (!hasRepository(config, kind))
      return createMove(
        core,
        { kind, id, source: pickStorage(readWeights(db), config.storages, core.random), sizeMb: 0 },
        dest,
        now,
      );
    return createMove(core, { kind, id, source: fresh.storage, sizeMb: fresh.size_mb }, dest, now);
  });

  return {
    kinds: ITEM_KINDS,
    start() {
      if (ticker.started || ticker.closed) return;
      ticker.start();
      log.debug(
        { queued: core.queue.ids.length - core.queue.head, running: core.running.length },
        'move engine started',
      );
      bulk.kick();
    },
    close() {
      ticker.close();
      bulk.close();
    },
    kick() {
      ticker.kick();
      // A clock moved on by a test may have made a waiting bulk job due.
      bulk.kickIfDue();
    },
    schedule(item, destination): ScheduleOutcome {
      const errors = validate(core, item, destination);
      if (Object.keys(errors).length > 0) return { ok: false, errors };
      const dest = destination ?? pickStorage(readWeights(db), config.storages, core.random);
      const now = clock.now();
      const q = scheduleTx(item, dest, now);
      if (!q) return { ok: false, errors: { [item.kind]: ['is read-only'] } };
      core.queue.ids.push(q.id);
      ticker.kick();
      return { ok: true, move: scheduledRow(q, now) };
    },
    scheduleBulk(kind, source, destination) {
      core.s.insertBulk.run(kind, source, destination ?? null, isoTime(clock.now()));
      bulk.kick();
    },
    stats() {
      return {
        queued: core.queue.ids.length - core.queue.head,
        running: core.running.length,
        bulkJobs: core.s.activeBulk.all().length,
      };
    },
    load(): EngineLoad {
      return engineLoad(core, clock.now());
    },
  };
}
