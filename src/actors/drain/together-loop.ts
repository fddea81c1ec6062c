/**
 * The one schedule's loop (`move.order: together`): it performs what ./schedule-turn.ts decides.
 * Each turn it changes the pairs' phases (a first listing starts, a verification re-list starts, a
 * pair is done and its result recorded), reads the cap, launches the due items of every pair served
 * in one largest-first order into the free slots, then waits as planned and polls when the poll is
 * due. POST batches, polls and listings run beside the loop, as in the loop of one pair (./loop.ts).
 */
import type { PairOutput } from '../../machine/types.js';
import type { ActorStore } from '../../store/types.js';
import { capInForce } from '../cap.js';
import { event, noteControl, throwIfAborted, waitUntil, waitUntilOr } from './context.js';
import type { DrainCtx } from './context.js';
import { startListing } from './listing.js';
import type { Listing } from './listing.js';
import { LoopCore } from './loop-core.js';
import { drainResult } from './result.js';
import { planScheduleLaunch, planScheduleWait, planSteps } from './schedule-turn.js';
import type { Phase, ScheduleLaunch, SchedulePairView, ScheduleView, Step } from './schedule-turn.js';
import { postedEarly } from './turn.js';
import { boundReached, dueTogether, nextDueAt } from './until.js';

/** A pair of the one schedule, with what the loop holds of it. */
interface Member {
  ctx: DrainCtx;
  pair: number;
  phase: Phase;
  listing: Listing | null;
  /** Its POST batches not answered yet. */
  posting: Set<Promise<void>>;
  rounds: number;
  result: PairOutput | null;
}

/**
 * Drains every pair of `ctxs` in one schedule until each is verified (or out of rounds); returns
 * each pair's result, in the order given. `listed` pairs start moving at once (a partial drain
 * lists every pair before it calls this). Never returns or throws with a POST unanswered or a
 * poll's outcomes unapplied.
 */
export async function moveTogether(ctxs: readonly DrainCtx[]): Promise<PairOutput[]> {
  const loop = new TogetherLoop(ctxs);
  try {
    await loop.run();
  } finally {
    await loop.settled();
  }
  return loop.results();
}

class TogetherLoop extends LoopCore {
  private readonly members: Member[];
  /**
   * Pairs found with nothing due, until their next item's backoff ends: not asked again before
   * then, unless a poll or a POST batch ended since (either can send items back to pending). A
   * pair asked at every turn was a tenth of the loop's CPU.
   */
  private readonly dry = new Map<number, { until: number; epoch: number }>();
  /** Polls and POST batches ended: what can make a dry pair's items due again. */
  private epoch = 0;

  constructor(ctxs: readonly DrainCtx[]) {
    const first = ctxs[0];
    if (!first) throw new Error('the one schedule needs at least one pair');
    super(first);
    this.members = ctxs.map((ctx, pair) => ({
      ctx,
      pair,
      phase: ctx.store.getCursor(ctx.kind, ctx.source)?.done ? 'moving' : 'listing',
      listing: null,
      posting: new Set(),
      rounds: 0,
      result: null,
    }));
  }

  protected override changed(): void {
    this.epoch++;
  }

  results(): PairOutput[] {
    return this.members.map((m) => m.result ?? { source: m.ctx.source, kind: m.ctx.kind, ...drainResult(m.ctx) });
  }

  async run(): Promise<void> {
    const { ctx, deps } = this;
    for (;;) {
      if (this.failed) throw this.failed.err;
      for (const m of this.members) m.listing?.check();
      throwIfAborted(ctx);
      const { cap, control } = await capInForce(deps);
      this.lastCap = cap;
      this.controlSeen = noteControl(ctx, control, cap, this.controlSeen);
      const now = deps.clock.now();
      for (const step of planSteps(this.view(cap))) await this.apply(step);
      const before = this.view(cap);
      const plan = planScheduleLaunch(before, now);
      const launched = this.launch(plan, now);
      const after = this.view(cap);
      const early = postedEarly(
        cap,
        { early: plan.early, free: plan.free, offers: [] },
        before.inFlight,
        after.inFlight,
      );
      if (early && launched.last)
        event(launched.last, 'drain.queued_ahead', { ...early, roundTripMs: Math.round(this.roundTrip.ms ?? 0) });
      const wait = planScheduleWait(after, now, plan.free - launched.count);
      if (wait.do === 'finish') return;
      if (wait.do === 'again') continue;
      if (wait.do === 'page') {
        await this.members[wait.pair]?.listing?.nextPage();
        continue;
      }
      // Slept here rather than in an async method (see wakes in ./loop-core.ts).
      const wakes = this.wakes(wait, wait.page === null ? null : (this.members[wait.page]?.listing ?? null));
      const woke =
        wakes.length > 0
          ? await waitUntilOr(ctx, wait.until, Promise.race(wakes))
          : (await waitUntil(ctx, wait.until), 'deadline');
      if (!this.pollsNow(wait, woke)) continue;
      const started = this.poll();
      if (wait.poll?.await) await started;
    }
  }

  /** Waits for everything started beside the loop: the poll, the POST batches, the listings. */
  async settled(): Promise<void> {
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

  /** What the loop sees now; each pair's checkpoint reads are made when the planner asks for them. */
  private view(cap: number): ScheduleView {
    const { store, plan } = this.deps;
    return {
      cap,
      inFlight: store.countInFlight(),
      polling: this.polling !== null,
      partial: plan.move.until !== undefined,
      pairs: this.members.map((m) => memberView(m, store)),
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
   * Launches the due items of the pairs `plan` offers, in one order; returns how many, and the pair
   * of the last one (early successors are the last ones of a turn).
   */
  private launch(plan: ScheduleLaunch, now: number): { count: number; last: DrainCtx | null } {
    const none = { count: 0, last: null };
    if (plan.free <= 0 || plan.take.length === 0) return none;
    const served = plan.take
      .map((i) => this.members[i] as Member)
      .filter((m) => {
        const d = this.dry.get(m.pair);
        return !d || d.epoch !== this.epoch || now >= d.until;
      });
    if (served.length === 0) return none;
    const short = new Set<number>();
    const due = dueTogether(
      served.map((m) => ({ ctx: m.ctx, pair: m.pair })),
      now,
      plan.free,
      short,
    );
    // A pair still being listed gets items with every page: only a listed one can be dry.
    for (const m of served)
      if (short.has(m.pair) && m.phase === 'moving')
        this.dry.set(m.pair, { until: nextDueAt(m.ctx) ?? Infinity, epoch: this.epoch });
    if (due.length === 0) return none;
    // Grouped by pair (a batch posts one pair's items); the order within each group is kept.
    const byPair = new Map<number, typeof due>();
    for (const d of due) byPair.set(d.pair, [...(byPair.get(d.pair) ?? []), d]);
    let first = plan.restartsCadence;
    for (const [pair, rows] of byPair) {
      const m = this.members[pair] as Member;
      const items = rows.map((d) => d.row);
      this.expectLaunched(m.ctx, items, now, first);
      first = false;
      this.postChunks(m.ctx, m.posting, items);
    }
    const last = due.at(-1);
    return { count: due.length, last: last ? (this.members[last.pair] as Member).ctx : null };
  }
}

/** A pair as the planner sees it, its checkpoint reads made on first use. */
function memberView(m: Member, store: ActorStore): SchedulePairView {
  let listed: boolean | undefined;
  let due: number | null | undefined;
  let counts: ReturnType<ActorStore['countStates']> | undefined;
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
