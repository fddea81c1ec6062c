/**
 * Bulk mode's first phase for one (source, kind): one bulk POST with the explicit destination
 * (intent recorded before; after an ambiguous failure, look for the moves it created before posting
 * again; after a 429, which proves it was not applied, wait for `Retry-After` and post again), then
 * follow the moves it creates through the move lists until none is in flight. Failed and untouched
 * items are left pending: the throttled loop (./loop.ts) retries them per item.
 */
import { holdForStop, waitForGates } from '../write-gate.js';
import type { MoveRecord } from '../../api/types.js';
import { event, throwIfAborted, waitUntil } from './context.js';
import type { DrainCtx } from './context.js';
import { BULK_UNCONFIRMED, DrainError, classifyPostError } from '../errors.js';
import { applyMove } from './outcome.js';
import { pollInFlight } from './poll.js';
import { MOVES_PER_PAGE, pollMoves } from './track-moves.js';

/** Polls without any new bulk move and nothing in flight before the bulk job is considered done. */
const IDLE_POLLS = 2;
/**
 * How long the bulk job may take to create its first move (GitLab runs it as a Sidekiq job, which
 * can queue) before idle polls count: falling back to per-item POSTs too early would race it. Twelve
 * poll intervals, at most a minute (a minute at the default 5 s interval).
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

async function postBulk(ctx: DrainCtx): Promise<void> {
  const { deps, store, kind, source, destination } = ctx;
  let bulk = store.getBulk(kind, source);
  if (bulk?.state === 'posted') return;
  if (bulk && (await bulkMovesAppeared(ctx, bulk.seenMaxMoveId))) {
    store.setBulk({ ...bulk, state: 'posted' });
    event(ctx, 'bulk.adopted', { above: bulk.seenMaxMoveId });
    return;
  }
  if (!bulk) {
    bulk = { kind, source, state: 'intent', intentAt: deps.clock.now(), seenMaxMoveId: await newestMoveId(ctx) };
    store.setBulk(bulk);
  }
  // The bulk POST is a write: outside every window, or while a rule holds, it waits (the write gates).
  await waitForGates(deps, 'the bulk move');
  let ambiguous = 0;
  for (let attempt = 1; ; attempt++) {
    // After the reads before it (the newest move id, a look for the job after an unclear answer)
    // or a wait on a 429: a stop asked for since keeps the POST unsent.
    await holdForStop(deps, 'the bulk move');
    event(ctx, 'bulk.intent', { destination, attempt });
    try {
      await deps.api.scheduleBulk(kind, source, destination);
      store.setBulk({ ...bulk, state: 'posted' });
      event(ctx, 'bulk.posted', { destination });
      return;
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
      // The job may have been enqueued: look before posting again.
      if (await bulkMovesAppeared(ctx, bulk.seenMaxMoveId)) {
        store.setBulk({ ...bulk, state: 'posted' });
        event(ctx, 'bulk.adopted', { above: bulk.seenMaxMoveId });
        return;
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
}

/**
 * Posts the bulk move (once per bulk row) and follows it until nothing of it is in flight. Returns
 * what the job's move records showed; after a restart only the moves discovered since.
 */
export async function runBulkPhase(ctx: DrainCtx, opts: BulkPhaseOptions = {}): Promise<BulkPhaseResult> {
  const { deps, store, kind, source } = ctx;
  const learn = opts.learn ?? false;
  const acc: BulkPhaseResult = { found: 0, quarantined: 0 };
  const c = store.countStates(kind, source);
  if (!learn && c.pending === 0 && store.getBulk(kind, source)?.state !== 'posted') return acc;
  await postBulk(ctx);
  let idle = 0;
  let seenAny = false;
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
    const started =
      seenAny ||
      deps.clock.now() >= bulk.intentAt + Math.min(BULK_START_GRACE_MAX_MS, BULK_START_GRACE_POLLS * interval);
    idle = found === 0 && inFlight === 0 && started ? idle + 1 : 0;
    // Without `learn` the enumerated items are the whole job: done when none is left to see.
    if (!learn && store.countStates(kind, source).pending === 0 && inFlight === 0) return acc;
  }
  event(ctx, 'bulk.settled', { ...acc });
  return acc;
}
