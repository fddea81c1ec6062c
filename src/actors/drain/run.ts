/**
 * The drain step for one (source, kind): enumerate into the checkpoint, move every item with at
 * most `plan.move.concurrency` moves in flight across the run (or the operator's live override,
 * none while paused), re-enumerate the source to verify
 * independently, and repeat (bounded) until only quarantined items remain. Bulk mode starts with
 * one bulk POST (./drain-bulk.ts) and then finishes the same way. Every step is safe to repeat
 * after a kill: all progress lives in the checkpoint.
 */
import type { DrainInput, DrainOutput } from '../../machine/types.js';
import { newestMoveId, runBulkPhase } from './bulk.js';
import { capInForce } from '../cap.js';
import {
  createDrainCtx,
  event,
  noteControl,
  throwIfAborted,
  waitUntil,
  waitUntilOr,
  waitWhilePaused,
} from './context.js';
import type { DrainCtx } from './context.js';
import { pollInFlight, recheckStuck, trackedKinds } from './poll.js';
import type { PollPlanner } from './poll.js';
import { scheduleBatch } from './schedule-batch.js';
import { runCensus } from './census.js';
import { boundReached, dueItems, nextDueAt, planPlacement } from './until.js';
import { preparePlacement } from './placement.js';
import { enumerateRound } from './enumerate.js';
import { locate } from './locate.js';
import { MoveModel } from './move-model.js';
import { reconcileScheduling } from './reconcile.js';
import { earlyAllowance, nextEarlyAt, RefillRoundTrip } from './queue-ahead.js';
import type { ItemRow } from '../../store/types.js';
import type { ActorDeps } from '../types.js';

/** Enumeration rounds after the first: each one re-checks the source after moves ended. */
const MAX_EXTRA_ROUNDS = 5;
/** Items per scheduling chunk (one intent transaction, its POSTs, one outcome transaction). */
const SCHEDULE_CHUNK = 50;

function result(ctx: DrainCtx): DrainOutput {
  const c = ctx.store.countStates(ctx.kind, ctx.source);
  const out: DrainOutput = {
    moved: c.moved + c.left,
    quarantined: c.quarantined,
    remaining: c.pending + c.scheduling + c.in_flight,
  };
  if (!boundReached(ctx)) return out;
  // A reached `move.until` bound: what was never placed stays on the source, as the plan asked.
  const kept = ctx.store.countUnplaced(ctx.kind, ctx.source);
  return { ...out, remaining: out.remaining - kept, kept };
}

/**
 * Schedules and polls until this (kind, source) has nothing pending or in flight. POST batches run
 * in the background, so polling keeps its cadence while the instance answers them; the cap counts
 * rows in `scheduling` too, so a batch's slots are taken from the moment its intents are committed.
 * `verifying`: `listing` is this drain's verification re-list, run alongside the next drain's moves
 * (issue 25 item 2); this drain's own items wait for the next round, and the call returns when the
 * listing is done.
 */
async function moveAll(
  ctx: DrainCtx,
  listing: Listing | null = null,
  ahead: DrainCtx | null = null,
  verifying = false,
): Promise<void> {
  const { deps, store, kind, source } = ctx;
  const interval = deps.plan.poll.intervalMs;
  const queueAhead = deps.plan.move.queueAhead;
  // Completion prediction (issue 11): poll when the earliest move in flight is expected to end,
  // never later than `poll.interval` after the last poll (or after scheduling into an empty run),
  // never sooner than `poll.min_interval` after it.
  const planner: PollPlanner = {
    model: new MoveModel(store),
    lastPollAt: null,
    earliestEnd: null,
    minGapMs: deps.plan.poll.minIntervalMs,
    ends: [],
  };
  const roundTrip = new RefillRoundTrip();
  let anchor = deps.clock.now();
  const nextPollAt = () => {
    const latest = anchor + interval;
    if (planner.earliestEnd === null) return latest;
    const soonest = planner.lastPollAt === null ? -Infinity : planner.lastPollAt + planner.minGapMs;
    return Math.min(latest, Math.max(soonest, planner.earliestEnd));
  };
  const expectEnds = (rows: readonly ItemRow[]) => {
    const now = deps.clock.now();
    for (const row of rows) {
      const d = planner.model.predict(kind, row.sizeBytes);
      if (d === null) continue;
      planner.ends.push(now + d);
      if (planner.earliestEnd === null || now + d < planner.earliestEnd) planner.earliestEnd = now + d;
    }
  };
  const launched = new Set<Promise<void>>();
  /** This drain's own batches (the rest fill its tail with the next drain's items). */
  const launchedOwn = new Set<Promise<void>>();
  let failed: { err: unknown } | null = null;
  let controlSeen: string | null = null;
  let aheadListing: Listing | null = null;
  /** The poll running beside the loop, if any. */
  let polling: Promise<void> | null = null;
  const launch = (rows: ItemRow[], on: DrainCtx = ctx) => {
    const startedAt = deps.clock.now();
    const p: Promise<void> = scheduleBatch(on, rows)
      .then(
        () => {
          roundTrip.notePost(deps.clock.now() - startedAt);
          deps.onProgress?.();
        },
        (err: unknown) => {
          failed ??= { err };
        },
      )
      .finally(() => {
        launched.delete(p);
        launchedOwn.delete(p);
      });
    launched.add(p);
    if (on === ctx) launchedOwn.add(p);
  };
  /** Schedules up to `free` due items of `on`; returns how many were launched. */
  const fill = (on: DrainCtx, free: number): number => {
    const due = dueItems(on, deps.clock.now(), free);
    if (due.length === 0) return 0;
    if (on === ctx && store.countInFlight() === 0) {
      anchor = deps.clock.now();
      planner.earliestEnd = null;
    }
    if (on !== ctx) event(ctx, 'drain.ahead', { kind: on.kind, source: on.source, items: due.length });
    expectEnds(due);
    // Chunks, each recorded when its own POSTs are answered: a move becomes pollable (and its
    // slot reusable) without waiting for the slowest POST of a large batch. scheduleBatch
    // commits its intents synchronously, before its first await.
    for (let i = 0; i < due.length; i += SCHEDULE_CHUNK) launch(due.slice(i, i + SCHEDULE_CHUNK), on);
    return due.length;
  };
  const listed = () => !listing || listing.done;
  /** This drain has nothing left to do: nothing in flight or being posted, nothing pending. */
  const ownDone = () => {
    if (launchedOwn.size > 0 || !listed()) return false;
    const c = store.countStates(kind, source);
    return c.scheduling + c.in_flight === 0 && nextDueAt(ctx) === null;
  };
  try {
    for (;;) {
      if (failed) throw (failed as { err: unknown }).err;
      listing?.check();
      throwIfAborted(ctx);
      const { cap, control } = await capInForce(ctx.deps);
      controlSeen = noteControl(ctx, control, cap, controlSeen);
      const inFlight = store.countInFlight();
      // Queue ahead (issue 25): one successor beyond the cap per move expected to end within the
      // measured refill round trip, at most `move.queue_ahead` (the cap counts those already posted).
      const early = cap > 0 ? earlyAllowance(planner.ends, deps.clock.now(), roundTrip.ms, queueAhead) : 0;
      let free = cap + early - inFlight;
      if (free > 0 && !verifying) free -= fill(ctx, free);
      // One pipeline across drains (issue 11): with this drain's listing done and nothing of its
      // own due, free slots take the next drain's items (listed ahead in the background), so the
      // cap stays full through this drain's tail. Its own retries still come first, each turn.
      if (free > 0 && ahead && (listed() || verifying)) {
        if (!aheadListing && !store.getCursor(ahead.kind, ahead.source)?.done) aheadListing = startListing(ahead);
        aheadListing?.check();
        // A partial drain takes the largest items of the whole source: not before it is listed.
        if (!deps.plan.move.until || store.getCursor(ahead.kind, ahead.source)?.done) free -= fill(ahead, free);
      }
      const beyond = store.countInFlight() - cap;
      if (early > 0 && beyond > 0 && beyond > inFlight - cap) {
        event(ctx, 'drain.queued_ahead', {
          items: beyond - Math.max(0, inFlight - cap),
          beyond,
          roundTripMs: Math.round(roundTrip.ms ?? 0),
        });
      }
      // Done with its own items: the next drain's moves in flight are that drain's to follow.
      if (verifying ? listed() && launchedOwn.size === 0 : ahead && ownDone()) return;
      // What can give a free slot work before the next poll (issue 25 item 2): the next page of a
      // listing, an item's retry backoff ending (this drain's or the next one's), or a move coming
      // within the round trip of its expected end (queue ahead).
      const aheadOpen = ahead !== null && (listed() || verifying);
      const page =
        free <= 0
          ? null
          : listing && !listing.done
            ? listing
            : aheadOpen && aheadListing && !aheadListing.done
              ? aheadListing
              : null;
      const now = deps.clock.now();
      const dueAt =
        free > 0
          ? earliest(
              [verifying ? null : nextDueAt(ctx), aheadOpen ? nextDueAt(ahead) : null].filter(
                (t) => t !== null && t > now,
              ),
            )
          : null;
      if (store.countInFlight() === 0 && launched.size === 0) {
        if (listing && !listing.done) {
          // Nothing to do until the listing commits its next page.
          await listing.nextPage();
          continue;
        }
        if (nextDueAt(ctx) === null) return;
        if (cap <= 0) {
          // Paused with nothing in flight: look at the control again after a poll interval.
          await waitUntil(ctx, deps.clock.now() + interval);
          continue;
        }
        // Only items waiting out a retry backoff (or the next drain's listing): sleep until the
        // earliest absolute next-attempt time, or the next page.
        const until = dueAt ?? nextDueAt(ctx) ?? now;
        if (page) await waitUntilOr(ctx, until, page.nextPage());
        else await waitUntil(ctx, until);
        continue;
      }
      // Only with every slot taken can an early successor add a move (free slots mean nothing is due).
      const earlyAt = free > 0 ? null : nextEarlyAt(planner.ends, now, roundTrip.ms, queueAhead);
      // While a poll runs, the next one waits for it (its end wakes the loop; a poll interval at the
      // latest); a due item or a page does not.
      const pollAt = polling ? now + interval : nextPollAt();
      const wakeAt = Math.min(pollAt, dueAt ?? Infinity, earlyAt !== null && earlyAt > now ? earlyAt : Infinity);
      const events = [page?.nextPage(), polling].filter((e): e is Promise<void> => e !== null && e !== undefined);
      const woke =
        events.length > 0
          ? await waitUntilOr(ctx, wakeAt, Promise.race(events))
          : (await waitUntil(ctx, wakeAt), 'deadline');
      // Woken for a page, a due item, an early successor or a poll's end: schedule first, poll when it is time.
      if (woke === 'event' || polling || deps.clock.now() < pollAt) continue;
      // The poll runs beside the loop (issue 25 item 2): a slow poll must not keep a retry whose
      // backoff ended, or the next drain's items, from their free slots. The cadence counts from the
      // start of a poll: its own duration is not added to the interval.
      anchor = deps.clock.now();
      const pollStarted = anchor;
      polling = pollInFlight(ctx, planner)
        .then(
          () => {
            roundTrip.notePoll(deps.clock.now() - pollStarted);
            deps.onProgress?.();
          },
          (err: unknown) => {
            failed ??= { err };
          },
        )
        .finally(() => {
          polling = null;
        });
      // Nothing else can want the loop before the poll ends (no item due, no page, no early
      // successor): wait for it here, as an inline poll would.
      if (dueAt === null && earlyAt === null && !page) await polling;
    }
  } finally {
    // Never return or throw with a POST unanswered or a poll's outcomes unapplied.
    await polling;
    await Promise.allSettled([...launched]);
    await listing?.stop();
    await aheadListing?.stop();
  }
}

function earliest(times: (number | null)[]): number | null {
  let min: number | null = null;
  for (const t of times) if (t !== null && (min === null || t < min)) min = t;
  return min;
}

/** The first enumeration round running beside the scheduler, so moves start with the first page. */
interface Listing {
  readonly done: boolean;
  /** Resolves when the next page is committed or the listing ends. */
  nextPage(): Promise<void>;
  /** Throws the listing's error, if it failed. */
  check(): void;
  /** Stops the listing at its next page and waits for it. */
  stop(): Promise<void>;
}

/** Lists (kind, source) in the background: the open round, or round `next` when given. */
function startListing(ctx: DrainCtx, next?: number): Listing {
  let done = false;
  let error: { err: unknown } | null = null;
  let stopping = false;
  let wake: (() => void) | null = null;
  const poke = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const run = enumerateRound(ctx, next, { onPage: poke, stop: () => stopping }).then(
    () => undefined,
    (err: unknown) => {
      error = { err };
    },
  );
  void run.finally(() => {
    done = true;
    poke();
  });
  return {
    get done() {
      return done;
    },
    nextPage: () => (done ? Promise.resolve() : new Promise<void>((r) => (wake = r))),
    check() {
      if (error) throw error.err;
    },
    async stop() {
      stopping = true;
      await run;
    },
  };
}

/**
 * A kind whose storage the instance does not expose (pre-flight's `records` mode): no listing can
 * say what is on the source, so the instance's own bulk job does. Each sweep is one bulk POST for
 * the source, followed through the move records it creates; those records are how items become
 * known. Failed moves are retried per item by id. Then a new sweep asks again; a sweep whose job
 * creates no move except for items already quarantined confirms that nothing else of the kind is on
 * the source (`confirmedAt`, which verification reads). A sweep resumed after a restart may have
 * missed its own count, so it never confirms: the next one does.
 */
async function drainByRecords(ctx: DrainCtx): Promise<void> {
  const { store, kind, source, deps } = ctx;
  for (let sweep = 1; sweep <= 1 + MAX_EXTRA_ROUNDS; sweep++) {
    let bulk = store.getBulk(kind, source);
    if (bulk?.confirmedAt) return;
    // Only the first sweep of an invocation can be one a restart interrupted.
    const resumed = sweep === 1 && bulk?.state === 'posted';
    const round = (store.getCursor(kind, source)?.round ?? 0) + (resumed ? 0 : 1);
    if (!resumed) {
      store.startRound(kind, source, round);
      // A new sweep: its job's moves are those above the newest move now (our own per-item retries
      // of the last sweep are below it, and are not evidence that anything is on the source).
      bulk = {
        kind,
        source,
        state: 'intent',
        intentAt: deps.clock.now(),
        seenMaxMoveId: await newestMoveId(ctx),
        confirmedAt: null,
      };
      store.setBulk(bulk);
      event(ctx, 'records.sweep', { sweep: round, above: bulk.seenMaxMoveId });
    }
    await waitWhilePaused(ctx);
    const seen = await runBulkPhase(ctx, { learn: true, round });
    // Per-item retries of what failed, with the usual backoff and quarantine.
    await moveAll(ctx);
    store.finishRound(kind, source, round);
    if (!resumed && seen.found === 0) {
      const done = store.getBulk(kind, source);
      if (done) store.setBulk({ ...done, confirmedAt: deps.clock.now() });
      event(ctx, 'records.confirmed', { sweep: round, quarantined: seen.quarantined });
      deps.log.info(
        { kind, source, sweep: round },
        'bulk move found nothing else on the source: verified by move records',
      );
      return;
    }
  }
  event(ctx, 'records.unconfirmed', { sweeps: 1 + MAX_EXTRA_ROUNDS });
  deps.log.warn({ kind, source }, 'every bulk move still found items on the source: not confirmed empty');
}

/**
 * The drain of given items (`shardmove revert`): the checkpoint already holds every row to move,
 * so nothing is listed and nothing else on the source is touched. Each pending row is moved as in
 * a throttled drain (a stale row is read before its POST: one that left the source is not moved);
 * instead of listing the source again, each moved row is read on its own, and one still on the
 * source goes back to pending (GitLab 345591), within the same bound of extra rounds.
 */
async function drainGiven(ctx: DrainCtx): Promise<DrainOutput> {
  const { deps, kind, source } = ctx;
  for (let extra = 0; ; extra++) {
    await moveAll(ctx);
    if (extra >= MAX_EXTRA_ROUNDS) break;
    if ((await recheckGiven(ctx)) === 0) break;
  }
  const res = result(ctx);
  event(ctx, 'drain.finished', { ...res });
  deps.log.info({ kind, source, ...res, given: true }, 'drain of given items finished');
  return res;
}

/** Rows read at once (every moved row of the drain is read in each recheck round). */
const RECHECK_PARALLEL = 8;

/** Reads every moved row of this drain; those still on the source go back to pending. Returns how many. */
async function recheckGiven(ctx: DrainCtx): Promise<number> {
  const { store, kind, source, deps } = ctx;
  const round = (store.getCursor(kind, source)?.round ?? 1) + 1;
  const moved = store.itemsInState(kind, source, 'moved', Number.MAX_SAFE_INTEGER).filter((r) => r.moveId !== null);
  const still: ItemRow[] = [];
  for (let i = 0; i < moved.length; i += RECHECK_PARALLEL) {
    throwIfAborted(ctx);
    const rows = moved.slice(i, i + RECHECK_PARALLEL);
    const seen = await Promise.all(rows.map((r) => locate(ctx, r.id)));
    rows.forEach((r, j) => seen[j]?.at === 'source' && still.push(r));
  }
  store.batch(() => {
    store.startRound(kind, source, round);
    if (still.length > 0) {
      const res = store.recordPage(
        kind,
        source,
        round,
        still.map((r) => ({ kind, id: r.id, storage: source, name: r.name, sizeBytes: r.sizeBytes })),
        deps.clock.now(),
      );
      for (const b of res.back) event(ctx, 'item.still_on_source', { id: b.id, moveId: b.moveId, reason: b.lastError });
    }
    store.finishRound(kind, source, round);
  });
  return still.length;
}

/** Dry run: enumerate (read-only on the instance), record what would be scheduled, estimate. */
async function dryRun(ctx: DrainCtx): Promise<DrainOutput> {
  const cur = ctx.store.getCursor(ctx.kind, ctx.source);
  await enumerateRound(ctx, cur?.done ? cur.round + 1 : undefined);
  // Which projects are hidden or pending deletion: the listing above cannot tell (`shardmove twin`).
  await runCensus(ctx);
  // Where each item would go, and where a partial drain would stop (issue 23): recorded in the dry
  // run's own checkpoint, which no real run can resume, for its report and `status`.
  planPlacement(ctx);
  const res = result(ctx);
  const { concurrency } = ctx.deps.plan.move;
  event(ctx, 'drain.dry_run', {
    wouldSchedule: res.remaining,
    concurrency,
    // One POST per item plus about one move-list page per poll and one listing page per 100 items.
    estimatedRequests: Math.ceil(res.remaining * 1.1 + res.remaining / 50),
  });
  ctx.deps.log.info(
    { kind: ctx.kind, source: ctx.source, wouldSchedule: res.remaining },
    'dry run: items that would be moved',
  );
  return res;
}

/** Dry run of a `records` kind: nothing can be listed, so say what would be done and why. */
function dryRunByRecords(ctx: DrainCtx): DrainOutput {
  event(ctx, 'drain.dry_run', { wouldSchedule: null, by: 'records', bulkPosts: 1 });
  ctx.deps.log.info(
    { kind: ctx.kind, source: ctx.source },
    'dry run: the instance does not expose the storage of this kind; one bulk move per source would move them, their number is unknown',
  );
  return { moved: 0, quarantined: 0, remaining: 0, byRecords: true };
}

/**
 * Drains one kind off one source storage (throttled or bulk per the plan). Resumable: call again
 * with the same checkpoint after a crash or an abort. Throws DrainError SHARDMOVE_ABORTED when
 * `deps.signal` aborts.
 */
export async function runDrain(deps: ActorDeps, input: DrainInput): Promise<DrainOutput> {
  const ctx = createDrainCtx(deps, input.source, input.kind);
  const byRecords = input.access === 'records';
  if (deps.itemsGiven && (deps.dryRun || deps.plan.move.mode !== 'throttled')) {
    // A listing or a bulk job would take in every item of the source: given items are moved one by one.
    throw new Error('given items are drained in throttled mode by a real run only');
  }
  // The source's free space (move.until: {free}) is read now, as this drain starts.
  await preparePlacement(deps, input.source);
  if (deps.dryRun) return byRecords ? dryRunByRecords(ctx) : dryRun(ctx);
  event(ctx, 'drain.started', { mode: byRecords ? 'records' : deps.plan.move.mode });
  for (const kind of trackedKinds(ctx)) await reconcileScheduling({ ...ctx, kind });
  await recheckStuck(ctx);
  if (deps.itemsGiven) return drainGiven(ctx);
  if (byRecords) {
    await drainByRecords(ctx);
    const res = { ...result(ctx), byRecords: true };
    event(ctx, 'drain.finished', { ...res, by: 'records' });
    deps.log.info({ kind: ctx.kind, source: ctx.source, ...res }, 'drain finished (by move records)');
    return res;
  }
  const cursor = ctx.store.getCursor(ctx.kind, ctx.source);
  // A partial drain (move.until) lists its source first: its budget goes to the largest items of
  // the whole source, not of the pages listed so far.
  const pipelined = deps.plan.move.mode === 'throttled' && !cursor?.done && !deps.plan.move.until;
  // Bulk attributes the job's moves to enumerated items, so it needs the whole listing first.
  if (!pipelined) await enumerateRound(ctx);
  if (deps.plan.move.mode === 'bulk') {
    await waitWhilePaused(ctx);
    await runBulkPhase(ctx);
    // The listing is as old as the bulk job: list again before any per-item POST, so an item that
    // left the source meanwhile (moved by someone else) is not moved onto its own storage.
    const cur = ctx.store.getCursor(ctx.kind, ctx.source);
    await enumerateRound(ctx, cur?.done ? cur.round + 1 : undefined);
  }
  for (let extra = 0; ; extra++) {
    // The next drain's items fill this one's tail only in throttled mode, into a listed kind.
    const ahead =
      input.ahead && deps.plan.move.mode === 'throttled' && input.ahead.access !== 'records'
        ? createDrainCtx(deps, input.ahead.source, input.ahead.kind)
        : null;
    await moveAll(ctx, extra === 0 && pipelined ? startListing(ctx) : null, ahead);
    const round = ctx.store.getCursor(ctx.kind, ctx.source)?.round ?? 1;
    if (extra >= MAX_EXTRA_ROUNDS) break;
    // Independent verification: a finished move whose item is still listed goes back to pending.
    // With a next drain, the re-list runs alongside that drain's moves, so its slots do not idle.
    if (ahead) await moveAll(ctx, startListing(ctx, round + 1), ahead, true);
    else await enumerateRound(ctx, round + 1);
    const c = ctx.store.countStates(ctx.kind, ctx.source);
    if (c.pending + c.scheduling + c.in_flight === 0) break;
    // A reached bound leaves unplaced items pending on purpose: done once nothing placed is open.
    if (boundReached(ctx) && c.scheduling + c.in_flight === 0 && nextDueAt(ctx) === null) break;
  }
  const res = result(ctx);
  event(ctx, 'drain.finished', { ...res });
  deps.log.info({ kind: ctx.kind, source: ctx.source, ...res }, 'drain finished');
  return res;
}
