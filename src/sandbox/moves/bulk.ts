/**
 * Bulk jobs (`bulk_jobs`): the bulk POST only enqueues `<Kind>::ScheduleBulkRepositoryShardMovesWorker`,
 * and the job runs `bulkDelayMs` after it (on the sandbox's clock, from the job's `created_at`, so a
 * restart keeps the wait), FIFO, one at a time. Then it is processed one batch per event-loop turn
 * (one transaction each), resuming from its cursor after a restart; read-only items are skipped, as
 * GitLab's `is read-only` validation skips them.
 */
import type { Timer } from '../../shared/clock.js';
import { pickStorage } from './policy.js';
import { readWeights } from './store.js';
import type { EngineCore, Queued } from './core.js';
import { hasRepository } from './core.js';
import { createMove } from './admission.js';

/** The bulk worker. */
export interface BulkWorker {
  /** Processes the next batch on the next turn of the event loop. */
  kick(): void;
  /** Kicks when a job waiting in the queue is due by now (a clock moved by a test). */
  kickIfDue(): void;
  close(): void;
}

/** Schedules one batch of `job`'s items; returns the moves it created, or null when the job still waits. */
function runBatch(core: EngineCore, batchSize: number, now: number) {
  const { db, s, config } = core;
  const job = s.activeBulk.all()[0];
  if (!job) return { job: undefined, created: [] as Queued[] };
  const created: Queued[] = [];
  db.transaction(() => {
    const weights = job.destination === null ? readWeights(db) : {};
    // Without repositories of the kind (group wikis unlicensed) the walk finds none.
    const rows = hasRepository(config, job.kind) ? s.bulkBatch.all(job.kind, job.source, job.cursor_id, batchSize) : [];
    for (const it of rows) {
      // Read-only items are being moved already: GitLab's `is read-only` validation skips them.
      if (it.read_only) continue;
      const destination = job.destination ?? pickStorage(weights, config.storages, core.random);
      created.push(
        createMove(core, { kind: job.kind, id: it.id, source: job.source, sizeMb: it.size_mb }, destination, now),
      );
    }
    const last = rows.length > 0 ? (rows[rows.length - 1] as { id: number }).id : job.cursor_id;
    s.advanceBulk.run(last, rows.length < batchSize ? 1 : 0, job.id);
  })();
  return { job, created };
}

/** `wake` kicks the engine's ticks after a batch queued moves; `live` says whether the engine runs. */
export function createBulkWorker(core: EngineCore, wake: () => void, live: () => boolean): BulkWorker {
  const { clock, log, s } = core;
  const batchSize = core.options.bulkBatchSize ?? 500;
  const bulkDelayMs = Math.max(0, core.options.bulkDelayMs ?? 0);
  let immediate: NodeJS.Immediate | null = null;
  /** The wake-up of a bulk job still waiting in the queue, and when it is due (sandbox time). */
  let timer: Timer | null = null;
  let waitingUntil: number | null = null;

  function process(): void {
    immediate = null;
    if (!live()) return;
    const job = s.activeBulk.all()[0];
    if (!job) return;
    const now = clock.now();
    // Still in Sidekiq's queue (not started: nothing walked yet): it runs once due, on this clock.
    if (job.cursor_id === 0) {
      const due = (Date.parse(job.created_at) || now) + bulkDelayMs;
      if (due > now) {
        arm(due);
        return;
      }
    }
    waitingUntil = null;
    let created: Queued[];
    try {
      created = runBatch(core, batchSize, now).created;
    } catch (err) {
      log.error({ err, job: job.id }, 'bulk schedule batch failed');
      return;
    }
    for (const q of created) core.queue.ids.push(q.id);
    if (created.length > 0)
      log.debug({ job: job.id, kind: job.kind, scheduled: created.length }, 'bulk batch scheduled');
    wake();
    kick();
  }

  function kick(): void {
    if (!live() || immediate) return;
    immediate = setImmediate(process);
    immediate.unref();
  }

  /** Wakes the bulk worker when the waiting job is due (a clock moved by a test wakes it on `kick`). */
  function arm(due: number): void {
    waitingUntil = due;
    if (timer) clock.clearTimeout(timer);
    timer = clock.setTimeout(
      () => {
        timer = null;
        kick();
      },
      Math.max(0, due - clock.now()),
    );
    timer.unref();
  }

  return {
    kick,
    kickIfDue() {
      if (waitingUntil !== null && waitingUntil <= clock.now()) kick();
    },
    close() {
      if (immediate) clearImmediate(immediate);
      if (timer) clock.clearTimeout(timer);
      immediate = null;
      timer = null;
    },
  };
}
