/**
 * Bulk mode's first phase for one (source, kind): one bulk POST with the explicit destination
 * (intent recorded before; after an ambiguous failure, look for the moves it created before posting
 * again; after a 429, which proves it was not applied, wait for `Retry-After` and post again), then
 * follow the moves it creates through the move lists until none is in flight. Failed and untouched
 * items are left pending: the throttled loop (./loop.ts) retries them per item.
 */
import { holdForStop, waitForGates } from '../write-gate.js';
import { recordQueueHold } from '../cap.js';
import { bulkJobQueue, judgeBulkQueue } from './bulk-queue.js';
import type { BulkQueueState } from './bulk-queue.js';
import type { MoveRecord } from '../../api/types.js';
import { event, throwIfAborted, waitUntil } from './context.js';
import type { DrainCtx } from './context.js';
import { BULK_UNCONFIRMED, DrainError, classifyPostError } from '../errors.js';
import { applyMove } from './outcome.js';
import { recordBulkFingerprints } from './content.js';
import { pollInFlight } from './poll.js';
import { MOVES_PER_PAGE, pollMoves } from './track-moves.js';

/** Polls without any new bulk move and nothing in flight before the bulk job is considered done. */
const IDLE_POLLS = 2;
/**
 * How long the bulk job may take to create its first move before idle polls count, when Sidekiq's
 * queue cannot be read (./bulk-queue.ts): falling back to per-item POSTs too early would race it.
 * Twelve poll intervals, at most a minute (a minute at the default 5 s interval). A job the queue
 * shows waiting is waited for however long it waits; without the queue, nothing proves it ran.
 */
const BULK_START_GRACE_POLLS = 12;
const BULK_START_GRACE_MAX_MS = 60_000;

/** The longest Retry-After a throttled bulk POST waits for, and the wait when the 429 names none. */
const BULK_THROTTLE_MAX_WAIT_MS = 300_000;
const BULK_THROTTLE_DEFAULT_WAIT_MS = 60_000;
/** Shortest wait between two bulk POSTs answered 429 (a `Retry-After: 0` must not spin). */
const BULK_THROTTLE_MIN_WAIT_MS = 1_000;

/** How long to wait after a 429 on the bulk POST: `Retry-After`, capped, with a floor. */
export function bulkThrottleWaitMs(retryAfterMs: number | null): number {
  return Math.min(
    BULK_THROTTLE_MAX_WAIT_MS,
    Math.max(BULK_THROTTLE_MIN_WAIT_MS, retryAfterMs ?? BULK_THROTTLE_DEFAULT_WAIT_MS),
  );
}

/** Newest move id of the kind (the baseline above which moves belong to our bulk job). */
export async function newestMoveId(ctx: DrainCtx): Promise<number> {
  const page = await ctx.deps.api.listMoves(ctx.kind, 1, 1);
  return page.moves[0]?.id ?? 0;
}

/** Moves of our bulk job created above `above`, found on the first move-list page. */
async function bulkMovesAppeared(ctx: DrainCtx, above: number): Promise<boolean> {
  const page = await ctx.deps.api.listMoves(ctx.kind, 1, MOVES_PER_PAGE);
  return page.moves.some((m) => m.id > above && m.sourceStorage === ctx.source);
}

/** Posts the bulk move once; returns the time its job was enqueued by, on this process's clock. */
async function postBulk(ctx: DrainCtx): Promise<number> {
  const { deps, store, kind, source, destination } = ctx;
  let bulk = store.getBulk(kind, source);
  // Posted by an earlier process: its job was enqueued before now, which is all that is known.
  if (bulk?.state === 'posted') return deps.clock.now();
  if (bulk && (await bulkMovesAppeared(ctx, bulk.seenMaxMoveId))) {
    store.setBulk({ ...bulk, state: 'posted' });
    event(ctx, 'bulk.adopted', { above: bulk.seenMaxMoveId });
    return deps.clock.now();
  }
  if (!bulk) {
    bulk = { kind, source, state: 'intent', intentAt: deps.clock.now(), seenMaxMoveId: await newestMoveId(ctx) };
    store.setBulk(bulk);
  }
  // The bulk POST is a write: outside every window, or while a rule holds, it waits (the write gates).
  await waitForGates(deps, 'the bulk move');
  // The sampled projects' fingerprints (verify.content), after the wait, before the first POST only.
  await recordBulkFingerprints(ctx, bulk.intentAt);
  let ambiguous = 0;
  for (let attempt = 1; ; attempt++) {
    // After the reads before it (the newest move id, a look for the job after an unclear answer)
    // or a wait on a 429: a stop asked for since keeps the POST unsent.
    await holdForStop(deps, 'the bulk move');
    event(ctx, 'bulk.intent', { destination, attempt });
    try {
      await deps.api.scheduleBulk(kind, source, destination);
      const answeredAt = deps.clock.now();
      store.setBulk({ ...bulk, state: 'posted' });
      event(ctx, 'bulk.posted', { destination });
      return answeredAt;
    } catch (err) {
      const failure = classifyPostError(err);
      event(ctx, 'bulk.post_failed', {
        failure: failure.kind,
        error: err instanceof Error ? err.message : String(err),
      });
      if (failure.kind === 'throttled') {
        // A 429 proves the POST was not applied: wait as the instance asks, then post again.
        const waitMs = bulkThrottleWaitMs(failure.retryAfterMs);
        event(ctx, 'bulk.throttled', { waitMs });
        deps.log.warn({ kind, source, waitMs }, 'bulk move throttled (429): posting again after Retry-After');
        await waitUntil(ctx, deps.clock.now() + waitMs);
        continue;
      }
      if (failure.kind !== 'ambiguous') throw err;
      // The job may have been enqueued: look before posting again. A job still in Sidekiq's queue
      // has no move yet, so wait until the queue is past this POST, then look once more.
      if (
        (await bulkMovesAppeared(ctx, bulk.seenMaxMoveId)) ||
        ((await waitOutQueue(ctx, deps.clock.now())) && (await bulkMovesAppeared(ctx, bulk.seenMaxMoveId)))
      ) {
        store.setBulk({ ...bulk, state: 'posted' });
        event(ctx, 'bulk.adopted', { above: bulk.seenMaxMoveId });
        return deps.clock.now();
      }
      if (++ambiguous >= 2) break;
    }
  }
  throw new DrainError(BULK_UNCONFIRMED, `bulk move of ${kind} off ${source} could not be confirmed`);
}

/** What the follow loop learnt from a bulk job's move records. */
export interface BulkPhaseResult {
  /** Moves attributed to items not quarantined before (new items, pending ones, ones that came back). */
  found: number;
  /** Moves the job created for items already quarantined (left to the instance, not counted as new). */
  quarantined: number;
  /**
   * Whether the job is known to have run: a move of it was seen, or Sidekiq's queue showed it gone
   * (./bulk-queue.ts). False: nothing proves it ran, and a job still queued would look the same.
   */
  ran: boolean;
  /** Why it could not be proven to have run (the queue unreadable), when `ran` is false. */
  unproven?: string;
}

/**
 * Attributes newly discovered bulk moves to their items (as attempts of ours). With `learn` (the
 * storage is not exposed, so nothing was enumerated), a move off the source is how an item becomes
 * known: unknown items are recorded, and moved or left ones go back to pending (the job found them
 * on the source again). Moves for quarantined items are followed as one more attempt and counted
 * apart (they prove nothing new is on the source).
 */
function attribute(ctx: DrainCtx, moves: MoveRecord[], round: number, learn: boolean, acc: BulkPhaseResult): void {
  const { store, kind, source, deps } = ctx;
  store.batch(() => {
    for (const m of moves) {
      if (m.kind !== kind || m.sourceStorage !== source) continue;
      const now = deps.clock.now();
      if (learn) {
        const name = m.itemName ?? `(${kind} ${m.itemId})`;
        store.recordPage(kind, source, round, [{ kind, id: m.itemId, storage: source, name, sizeBytes: null }], now);
      }
      const row = store.getItem(kind, m.itemId);
      if (row?.state === 'quarantined') {
        // GitLab's bulk service schedules every container still on the storage, quarantined ones
        // included: the move is followed as one more attempt (it may well move the item), but it is
        // no evidence that anything new is on the source, so it is counted apart.
        acc.quarantined++;
        event(ctx, 'bulk.move_for_quarantined', { id: m.itemId, moveId: m.id, moveState: m.state });
        if (store.markIntentFromQuarantine(kind, m.itemId, now))
          applyMove(ctx, { ...row, state: 'scheduling', attempts: row.attempts + 1, intentAt: now }, m, now);
        continue;
      }
      if (!row || row.state !== 'pending') continue;
      if (!store.markIntent(kind, m.itemId, now)) continue;
      event(ctx, 'bulk.move_seen', { id: m.itemId, moveId: m.id, moveState: m.state });
      applyMove(ctx, { ...row, state: 'scheduling', attempts: row.attempts + 1, intentAt: now }, m, now);
      acc.found++;
    }
  });
}

/** Options of `runBulkPhase`. */
export interface BulkPhaseOptions {
  /** Learn items from the move records (storage not exposed): see `attribute`. */
  learn?: boolean;
  /** The enumeration round learnt items are recorded in. */
  round?: number;
  /**
   * How many items the job must still reach, when they are not the pending ones (projects the
   * per-item routes cannot reach, quarantined until the job moves them: ./unreachable.ts). Given,
   * the phase posts even with nothing pending and is done once this is 0 and nothing is in flight.
   */
  wanted?: () => number;
}

/**
 * Posts the bulk move (once per bulk row) and follows it until nothing of it is in flight. Returns
 * what the job's move records showed; after a restart only the moves discovered since.
 */
export async function runBulkPhase(ctx: DrainCtx, opts: BulkPhaseOptions = {}): Promise<BulkPhaseResult> {
  const { deps, store, kind, source } = ctx;
  const learn = opts.learn ?? false;
  const acc: BulkPhaseResult = { found: 0, quarantined: 0, ran: false };
  const c = store.countStates(kind, source);
  const wanted = opts.wanted ?? (() => store.countStates(kind, source).pending);
  if (!learn && !opts.wanted && c.pending === 0 && store.getBulk(kind, source)?.state !== 'posted') return acc;
  const enqueuedBy = await postBulk(ctx);
  let idle = 0;
  let seenAny = false;
  let left = false;
  let held = false;
  let unproven: string | undefined;
  const interval = deps.plan.poll.intervalMs;
  while (idle < IDLE_POLLS) {
    throwIfAborted(ctx);
    await waitUntil(ctx, deps.clock.now() + interval);
    const bulk = store.getBulk(kind, source);
    if (!bulk) return acc;
    const { discovered } = await pollMoves(deps.api, kind, [], bulk.seenMaxMoveId);
    const newest = discovered.reduce((a, m) => Math.max(a, m.id), bulk.seenMaxMoveId);
    const before = acc.found + acc.quarantined;
    attribute(ctx, discovered, opts.round ?? 1, learn, acc);
    store.setBulk({ ...bulk, seenMaxMoveId: newest });
    const inFlight = await pollInFlight(ctx);
    deps.onProgress?.();
    const found = acc.found + acc.quarantined - before;
    seenAny ||= found > 0;
    let started = seenAny || left;
    if (!started) {
      // Nothing of the job seen yet: it may still wait in Sidekiq's queue, where the API shows nothing.
      const q = await readBulkQueue(ctx, enqueuedBy);
      if (q.state === 'queued') {
        const reason = `${kind} off ${source}: queue ${q.queue} holds ${q.backlog} job(s), the oldest ${q.latencyS} s old`;
        if (!held) {
          event(ctx, 'bulk.queued', { queue: q.queue, backlog: q.backlog, latencyS: q.latencyS });
          deps.log.info({ kind, source, ...q }, "bulk move's job still waits in Sidekiq's queue: waiting for it");
        }
        recordQueueHold(deps, reason);
        held = true;
      } else {
        if (held) recordQueueHold(deps, null);
        held = false;
        if (q.state === 'left') {
          left = true;
          unproven = undefined;
          event(ctx, 'bulk.dequeued', { queues: q.queues });
        } else {
          if (unproven === undefined) {
            event(ctx, 'bulk.queue_unknown', { reason: q.reason });
            deps.log.warn(
              { kind, source, reason: q.reason },
              "Sidekiq's queue cannot be read: the bulk job cannot be proven to have run",
            );
          }
          unproven = q.reason;
        }
      }
      started =
        left ||
        (q.state === 'unknown' &&
          deps.clock.now() >= bulk.intentAt + Math.min(BULK_START_GRACE_MAX_MS, BULK_START_GRACE_POLLS * interval));
    }
    idle = found === 0 && inFlight === 0 && started ? idle + 1 : 0;
    // Without `learn` the enumerated items are the whole job: done when none is left to see.
    if (!learn && wanted() === 0 && inFlight === 0) break;
  }
  if (held) recordQueueHold(deps, null);
  acc.ran = seenAny || left;
  if (!acc.ran && unproven !== undefined) acc.unproven = unproven;
  if (idle >= IDLE_POLLS) event(ctx, 'bulk.settled', { found: acc.found, quarantined: acc.quarantined, ran: acc.ran });
  return acc;
}

/**
 * After an unanswered bulk POST: waits while Sidekiq's queue may hold a job enqueued by `by` (held
 * on the progress line), then one poll interval for its first moves. False when the queue cannot be
 * read (nothing to wait for: the caller decides as before).
 */
async function waitOutQueue(ctx: DrainCtx, by: number): Promise<boolean> {
  const { deps } = ctx;
  let held = false;
  for (;;) {
    const q = await readBulkQueue(ctx, by);
    if (q.state === 'left') break;
    if (q.state === 'unknown') {
      if (held) recordQueueHold(deps, null);
      return false;
    }
    recordQueueHold(
      deps,
      `${ctx.kind} off ${ctx.source}: queue ${q.queue} holds ${q.backlog} job(s), the oldest ${q.latencyS} s old`,
    );
    held = true;
    deps.onProgress?.();
    await waitUntil(ctx, deps.clock.now() + deps.plan.poll.intervalMs);
  }
  if (held) recordQueueHold(deps, null);
  await waitUntil(ctx, deps.clock.now() + deps.plan.poll.intervalMs);
  return true;
}

/** Sidekiq's queue as it bears on our job; any failure to read it is `unknown`, never a failed drain. */
async function readBulkQueue(ctx: DrainCtx, enqueuedBy: number): Promise<BulkQueueState> {
  const { deps, kind } = ctx;
  const readAt = deps.clock.now();
  try {
    const metrics = await deps.api.queueMetrics();
    return judgeBulkQueue(metrics, bulkJobQueue(kind, deps.instanceVersion?.() ?? null), enqueuedBy, readAt);
  } catch (err) {
    throwIfAborted(ctx);
    const why = err instanceof Error ? err.message : String(err);
    return { state: 'unknown', reason: `GET /api/v4/sidekiq/queue_metrics failed (${why})` };
  }
}
