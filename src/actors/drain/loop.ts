/**
 * The drain loop: it performs what the turn planner (./turn.ts) decides, and nothing else, for
 * either schedule it runs (a drain by kind with the drain after it, or the one schedule of every
 * pair). Each turn it reads the cap in force and what the checkpoint holds, changes the pairs'
 * phases as planned (a listing starts, a verification re-list starts, a pair is done and its result
 * recorded), launches POST batches into the free slots (their intents committed before the first
 * await, so the cap counts them at once), then waits as planned and polls when the poll is due.
 * POST batches, polls and listings run beside the loop and are measured (the refill round trip): a
 * slow answer never keeps a retry whose backoff ended, or another pair's items, from their slots.
 * A failure beside the loop is kept for the next turn to throw. The turn is inline in `run`: an
 * async hop more per turn would move the moment it looks again relative to the batches and polls
 * beside it.
 */
import type { PairOutput } from '../../machine/types.js';
import { DEFAULT_EXPOSURE_BUDGET } from '../../plan/queue-ahead-field.js';
import type { ItemRow } from '../../store/types.js';
import { capInForce } from '../cap.js';
import type { ActorDeps } from '../types.js';
import { event, noteControl, throwIfAborted, waitUntil, waitUntilOr } from './context.js';
import type { DrainCtx } from './context.js';
import { startListing } from './listing.js';
import type { Listing } from './listing.js';
import { MoveModel } from './move-model.js';
import { expectEnd, expectLook, pollInFlight } from './poll.js';
import type { Forecast } from './poll.js';
import { AUTO_START, RefillRoundTrip, nextAutoDepth } from './queue-ahead.js';
import type { AutoDepthState } from './queue-ahead.js';
import { drainResult } from './result.js';
import { scheduleBatch } from './schedule-batch.js';
import { planLaunch, planSteps, planWait, postedEarly } from './turn.js';
import type { DrainView, Launch, Offer, PairView, Phase, ScheduleKind, Step, Wait } from './turn.js';
import { boundReached, dueItems, dueTogether, nextDueAt } from './until.js';
import type { DueRow } from './until.js';
import type { DrainStore } from '../../store/views.js';

/** Items per scheduling chunk (one intent transaction, its POSTs, one outcome transaction). */
export const SCHEDULE_CHUNK = 50;

/**
 * What one call of the loop serves by kind: this drain's pair in a phase, and the drain after it
 * (`next`), whose items fill this one's tail in throttled mode. `verifying` re-lists round `round`
 * of this drain's source beside the next drain's moves, and returns when that listing is done.
 */
export type Serve =
  | { mode: 'listing'; next: DrainCtx | null }
  | { mode: 'moving'; next?: DrainCtx | null }
  | { mode: 'verifying'; round: number; next: DrainCtx };

/**
 * Schedules and polls until what `serve` asks is done: this (kind, source) has nothing pending or in
 * flight, or (with a next drain) nothing of its own left to follow, or (verifying) its re-list is
 * done. The cap counts rows in `scheduling` too, so a batch's slots are taken from the moment its
 * intents are committed. Never returns or throws with a POST unanswered or a poll's outcomes unapplied.
 */
export async function moveItems(ctx: DrainCtx, serve: Serve): Promise<void> {
  const listing =
    serve.mode === 'moving' ? null : startListing(ctx, serve.mode === 'verifying' ? serve.round : undefined);
  const members = [member(ctx, 0, serve.mode, listing, false)];
  if (serve.next) members.push(member(serve.next, 1, 'listing', null, true));
  await new Loop(ctx, 'by-kind', members).drive();
}

/**
 * Drains every pair of `ctxs` in one schedule until each is verified (or out of rounds); returns
 * each pair's result, in the order given. Wholly listed pairs start moving at once (a partial drain
 * lists every pair before it calls this). Never returns or throws with a POST unanswered or a
 * poll's outcomes unapplied.
 */
export async function moveTogether(ctxs: readonly DrainCtx[]): Promise<PairOutput[]> {
  const first = ctxs[0];
  if (!first) throw new Error('the one schedule needs at least one pair');
  const members = ctxs.map((ctx, pair) =>
    member(ctx, pair, ctx.store.getCursor(ctx.kind, ctx.source)?.done ? 'moving' : 'listing', null, false),
  );
  const loop = new Loop(first, 'together', members);
  await loop.drive();
  return loop.results();
}

/** A pair the loop serves, with what the loop holds of it. */
interface Member {
  ctx: DrainCtx;
  pair: number;
  phase: Phase;
  listing: Listing | null;
  /** Its POST batches not answered yet. */
  posting: Set<Promise<void>>;
  /** Verification re-lists this call started for it. */
  rounds: number;
  result: PairOutput | null;
  /** The next drain of a drain by kind: its listing fails the drain when it is offered slots. */
  ahead: boolean;
}

function member(ctx: DrainCtx, pair: number, phase: Phase, listing: Listing | null, ahead: boolean): Member {
  return { ctx, pair, phase, listing, posting: new Set(), rounds: 0, result: null, ahead };
}

/** A turn's wait when it sleeps. */
type SleepWait = Extract<Wait, { do: 'sleep' }>;

/** One call's loop: what it holds between turns, and the I/O that performs each decision. */
class Loop {
  private readonly deps: ActorDeps<DrainStore>;
  /** Completion prediction: the expected ends of the moves in flight, learnt by each poll. */
  private readonly forecast: Forecast;
  private readonly roundTrip = new RefillRoundTrip();
  /** The poll cadence counts from here: the last poll's start, or a launch into an empty run. */
  private anchor: number;
  /** A batch or poll that failed: thrown at the next turn's start. */
  private failed: { err: unknown } | null = null;
  private controlSeen: string | null = null;
  /** The poll running beside the loop, if any. */
  private polling: Promise<void> | null = null;
  /** The cap the last turn saw (`queue_ahead: auto` stays within it). */
  private lastCap = 0;
  private auto: AutoDepthState = AUTO_START;
  /**
   * Pairs of a merged offer found with nothing due, until their next item's backoff ends: not asked
   * again before then, unless a poll or a POST batch ended since (either can send items back to
   * pending). A pair asked at every turn was a tenth of the one schedule's CPU.
   */
  private readonly dry = new Map<number, { until: number; epoch: number }>();
  /** Polls and POST batches ended: what can make a dry pair's items due again. */
  private epoch = 0;

  constructor(
    /** The drain the loop's polls and events are stamped with. */
    private readonly ctx: DrainCtx,
    private readonly schedule: ScheduleKind,
    private readonly members: readonly Member[],
  ) {
    this.deps = ctx.deps;
    // Poll when the earliest move in flight is expected to end, never later than `poll.interval`
    // after the last poll (or after scheduling into an empty run), never sooner than
    // `poll.min_interval` after it.
    this.forecast = {
      model: new MoveModel(ctx.store),
      lastPollAt: null,
      earliestEnd: null,
      minGapMs: this.deps.plan.poll.minIntervalMs,
      ends: [],
      kinds: new Map(),
    };
    this.anchor = this.deps.clock.now();
  }

  /** Runs the loop, then waits for everything it started beside it. */
  async drive(): Promise<void> {
    try {
      await this.run();
    } finally {
      await this.settled();
    }
  }

  results(): PairOutput[] {
    return this.members.map((m) => m.result ?? { source: m.ctx.source, kind: m.ctx.kind, ...drainResult(m.ctx) });
  }

  private async run(): Promise<void> {
    const { ctx, deps } = this;
    for (;;) {
      if (this.failed) throw this.failed.err;
      for (const m of this.members) if (!m.ahead) m.listing?.check();
      throwIfAborted(ctx);
      const { cap, control } = await capInForce(deps);
      this.lastCap = cap;
      this.controlSeen = noteControl(ctx, control, cap, this.controlSeen);
      const now = deps.clock.now();
      for (const step of planSteps(this.view(cap))) await this.apply(step);
      const before = this.view(cap);
      const plan = planLaunch(before, now);
      const launched = this.launch(plan, now);
      const after = this.view(cap);
      const early = postedEarly(cap, plan, before.inFlight, after.inFlight);
      if (early && launched.last)
        event(launched.last, 'drain.queued_ahead', { ...early, roundTripMs: Math.round(this.roundTrip.ms ?? 0) });
      const wait = planWait(after, now, plan.free - launched.count);
      if (wait.do === 'finish') return;
      if (wait.do === 'again') continue;
      if (wait.do === 'page') {
        await this.members[wait.pair]?.listing?.nextPage();
        continue;
      }
      // Slept here rather than in an async method (see wakes).
      const wakes = this.wakes(wait, wait.page === null ? null : (this.members[wait.page]?.listing ?? null));
      const woke =
        wakes.length > 0
          ? await waitUntilOr(ctx, wait.until, Promise.race(wakes))
          : (await waitUntil(ctx, wait.until), 'deadline');
      // Woken for a page, a due item, an early successor or a poll's end: schedule first, poll when it is time.
      if (!this.pollsNow(wait, woke)) continue;
      const started = this.poll();
      if (wait.poll?.await) await started;
    }
  }

  /** Waits for everything started beside the loop: the poll, the POST batches, the listings. */
  private async settled(): Promise<void> {
    await this.polling;
    await Promise.allSettled(this.members.flatMap((m) => [...m.posting]));
    for (const m of this.members) await m.listing?.stop();
  }

  /** Performs one pair's change of phase. */
  private async apply(step: Step): Promise<void> {
    const m = this.members[step.pair] as Member;
    const { ctx } = m;
    // A verification can send items back to pending: whatever was known of the pair's due items is old.
    this.dry.delete(step.pair);
    if (step.do === 'list') m.listing = startListing(ctx);
    else if (step.do === 'move') {
      await m.listing?.stop();
      m.listing = null;
      m.phase = 'moving';
    } else if (step.do === 'verify') {
      // Independent verification: a finished move whose item is still listed goes back to pending.
      const round = ctx.store.getCursor(ctx.kind, ctx.source)?.round ?? 1;
      m.listing = startListing(ctx, round + 1);
      m.phase = 'verifying';
      m.rounds++;
    } else {
      await m.listing?.stop();
      m.listing = null;
      m.phase = 'done';
      const res = drainResult(ctx);
      event(ctx, 'drain.finished', { ...res });
      ctx.deps.log.info({ kind: ctx.kind, source: ctx.source, ...res }, 'drain finished');
      m.result = { source: ctx.source, kind: ctx.kind, ...res };
    }
  }

  /**
   * What the loop sees now. The checkpoint reads are made when the planner asks for them, once per
   * view: most turns need few of them (every slot taken, nothing due), and the loop looks twice
   * per turn (three times with the phase changes, which read no count of the run).
   */
  private view(cap: number): DrainView {
    const { store, plan } = this.deps;
    let inFlight: number | undefined;
    return {
      schedule: this.schedule,
      cap,
      get inFlight() {
        return (inFlight ??= store.countInFlight());
      },
      polling: this.polling !== null,
      partial: plan.move.until !== undefined,
      pairs: this.members.map((m) => pairView(m, store)),
      queueAhead: { depth: this.depth(), roundTripMs: this.roundTrip.ms, ends: this.forecast.ends },
      poll: {
        intervalMs: plan.poll.intervalMs,
        minGapMs: this.forecast.minGapMs,
        anchor: this.anchor,
        lastPollAt: this.forecast.lastPollAt,
        earliestEnd: this.forecast.earliestEnd,
      },
    };
  }

  /**
   * Performs the offers of `plan`, each while slots are left; returns how many moves were launched,
   * and the pair of the last one (early successors are the last ones of a turn).
   */
  private launch(plan: Launch, now: number): { count: number; last: DrainCtx | null } {
    let left = plan.free;
    let last: DrainCtx | null = null;
    for (const offer of plan.offers) {
      if (left <= 0) break;
      const ms = offer.pairs.map((i) => this.members[i] as Member);
      for (const m of ms) {
        if (offer.list) m.listing = startListing(m.ctx);
        // The next drain's listing fails the drain when it is offered slots (the others', at every turn).
        if (m.ahead) m.listing?.check();
      }
      if (!offer.take) continue;
      const due = this.due(offer, ms, now, left);
      if (due.length === 0) continue;
      this.post(offer, due, now);
      left -= due.length;
      last = (this.members[(due.at(-1) as DueRow).pair] as Member).ctx;
    }
    return { count: plan.free - left, last };
  }

  /** Up to `limit` due items of the offer's pairs: one pair's in its own order, or merged into the one order. */
  private due(offer: Offer, ms: readonly Member[], now: number, limit: number): DueRow[] {
    if (!offer.merge) {
      const m = ms[0] as Member;
      return dueItems(m.ctx, now, limit).map((row) => ({ pair: m.pair, row }));
    }
    const served = ms.filter((m) => {
      const d = this.dry.get(m.pair);
      return !d || d.epoch !== this.epoch || now >= d.until;
    });
    if (served.length === 0) return [];
    const short = new Set<number>();
    const due = dueTogether(
      served.map((m) => ({ ctx: m.ctx, pair: m.pair })),
      now,
      limit,
      short,
    );
    // A pair still being listed gets items with every page: only a moving one can be dry.
    for (const m of served)
      if (short.has(m.pair) && m.phase === 'moving')
        this.dry.set(m.pair, { until: nextDueAt(m.ctx) ?? Infinity, epoch: this.epoch });
    return due;
  }

  /**
   * Posts `due` grouped by pair (a batch posts one pair's items; the order within each group is
   * kept), each group's moves expected by its own kind's model; the first group of an offer made
   * into an empty run restarts the poll cadence.
   */
  private post(offer: Offer, due: readonly DueRow[], now: number): void {
    const byPair = new Map<number, ItemRow[]>();
    for (const d of due) byPair.set(d.pair, [...(byPair.get(d.pair) ?? []), d.row]);
    let restarts = offer.restartsCadence;
    for (const [pair, rows] of byPair) {
      const m = this.members[pair] as Member;
      if (m.ahead) event(this.ctx, 'drain.ahead', { kind: m.ctx.kind, source: m.ctx.source, items: rows.length });
      this.expectLaunched(m.ctx, rows, now, restarts);
      restarts = false;
      // scheduleBatch commits its intents synchronously, before its first await.
      this.postChunks(m, rows);
    }
  }

  /** Successors allowed beyond the cap: `move.queue_ahead`, or what `auto` chose from the last polls. */
  private depth(): number {
    const q = this.deps.plan.move.queueAhead;
    return q === 'auto' ? this.auto.depth : q;
  }

  /** Expected ends of the moves `rows` (of `pairCtx`) launched now; a launch into an empty run restarts the poll cadence. */
  private expectLaunched(pairCtx: DrainCtx, rows: readonly ItemRow[], now: number, restartsCadence: boolean): void {
    const { forecast } = this;
    if (restartsCadence) {
      this.anchor = now;
      forecast.earliestEnd = null;
    }
    for (const row of rows) {
      const d = forecast.model.predict(pairCtx.kind, row.sizeBytes);
      if (d !== null) expectEnd(forecast, pairCtx.kind, now + d);
      else expectLook(forecast, pairCtx.kind, now + forecast.minGapMs);
    }
  }

  /** Chunks, each recorded when its own POSTs are answered: a move becomes pollable (and its slot reusable) sooner. */
  private postChunks(m: Member, rows: ItemRow[]): void {
    for (let i = 0; i < rows.length; i += SCHEDULE_CHUNK) this.postBatch(m, rows.slice(i, i + SCHEDULE_CHUNK));
  }

  /** Posts `rows` of `m` in the background; the cap counts them once their intents commit. */
  private postBatch(m: Member, rows: ItemRow[]): void {
    const { deps } = this;
    const startedAt = deps.clock.now();
    const batch: Promise<void> = this.settle(scheduleBatch(m.ctx, rows), () => {
      this.roundTrip.notePost(deps.clock.now() - startedAt);
      deps.onProgress?.();
    }).finally(() => {
      m.posting.delete(batch);
      this.epoch++;
    });
    m.posting.add(batch);
  }

  /** Starts a poll beside the loop; the cadence counts from its start, not its end. */
  private poll(): Promise<void> {
    const { ctx, deps } = this;
    this.anchor = deps.clock.now();
    const startedAt = this.anchor;
    const p = this.settle(pollInFlight(ctx, this.forecast), () => {
      this.roundTrip.notePoll(deps.clock.now() - startedAt);
      this.noteSample();
      deps.onProgress?.();
    }).finally(() => {
      this.polling = null;
      this.epoch++;
    });
    this.polling = p;
    return p;
  }

  /**
   * What can end a turn's sleep early: the next page of `page`'s listing, and the running poll's end
   * when the wait asks for it. Synchronous, so that the loop still awaits its sleep inline (one more
   * async hop per turn would move the moment the loop looks again relative to the batches and polls
   * running beside it).
   */
  private wakes(wait: SleepWait, page: Listing | null): Promise<void>[] {
    return [page?.nextPage(), wait.pollEnds ? this.polling : null].filter(
      (e): e is Promise<void> => e !== null && e !== undefined,
    );
  }

  /** After a sleep: whether this turn polls (not when woken early, while a poll runs, or before its time). */
  private pollsNow(wait: SleepWait, woke: 'event' | 'deadline'): boolean {
    return wait.poll !== null && woke !== 'event' && this.polling === null && this.deps.clock.now() >= wait.poll.at;
  }

  /** `queue_ahead: auto`: the depth after this poll. */
  private noteSample(): void {
    const sample = this.forecast.sample;
    if (this.deps.plan.move.queueAhead !== 'auto' || !sample) return;
    const before = this.auto.depth;
    this.auto = nextAutoDepth(this.auto, sample, {
      roundTripMs: this.roundTrip.ms,
      cap: this.lastCap,
      exposureBudget: this.deps.plan.move.exposureBudget ?? DEFAULT_EXPOSURE_BUDGET,
    });
    if (this.auto.depth !== before)
      this.deps.log.debug({ depth: this.auto.depth, roundTripMs: this.roundTrip.ms }, 'queue_ahead auto: depth');
  }

  /** `work` with its outcome applied: `done` when it succeeds; a failure kept for the next turn to throw. */
  private settle(work: Promise<unknown>, done: () => void): Promise<void> {
    return work.then(done, (err: unknown) => {
      this.failed ??= { err };
    });
  }
}

/** A pair as the planner sees it, its checkpoint reads made on first use. */
function pairView(m: Member, store: DrainStore): PairView {
  let listed: boolean | undefined;
  let due: number | null | undefined;
  let counts: ReturnType<DrainStore['countStates']> | undefined;
  let bounded: boolean | undefined;
  const c = () => (counts ??= store.countStates(m.ctx.kind, m.ctx.source));
  return {
    phase: m.phase,
    listing: m.listing === null ? 'none' : m.listing.done ? 'done' : 'paging',
    posting: m.posting.size,
    rounds: m.rounds,
    get listed() {
      return (listed ??= store.getCursor(m.ctx.kind, m.ctx.source)?.done ?? false);
    },
    get nextDueAt() {
      if (due === undefined) due = nextDueAt(m.ctx);
      return due;
    },
    get open() {
      return c().scheduling + c().in_flight;
    },
    get remaining() {
      return c().pending + c().scheduling + c().in_flight;
    },
    get bounded() {
      return (bounded ??= boundReached(m.ctx));
    },
  };
}
