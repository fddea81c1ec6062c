/**
 * The drain loop: it performs what the turn planner (./turn.ts) decides, and nothing else. Each turn
 * it reads the cap in force and what the checkpoint holds, launches POST batches into the free slots
 * (their intents committed before the first await, so the cap counts them at once), then waits as
 * planned and polls when the poll is due. POST batches and polls run beside the loop, so a slow
 * answer never keeps a retry whose backoff ended, or the next drain's items, from their slots.
 */
import { capInForce } from '../cap.js';
import type { ActorStore } from '../../store/types.js';
import { event, noteControl, throwIfAborted, waitUntil, waitUntilOr } from './context.js';
import type { DrainCtx } from './context.js';
import { startListing } from './listing.js';
import type { Listing } from './listing.js';
import { LoopCore } from './loop-core.js';
import { planLaunch, planWait, postedEarly } from './turn.js';
import type { DrainView, Launch, PairMode, PairView } from './turn.js';
import { dueItems, nextDueAt } from './until.js';

/**
 * What one call of the loop serves: this drain's pair in a mode, and the drain after it (`next`),
 * whose items fill this one's tail in throttled mode. `verifying` re-lists round `round` of this
 * drain's source beside the next drain's moves, and returns when that listing is done.
 */
export type Serve =
  | { mode: 'listing'; next: DrainCtx | null }
  | { mode: 'moving'; next?: DrainCtx | null }
  | { mode: 'verifying'; round: number; next: DrainCtx };

/** A pair the loop serves, with what the loop holds of it. */
interface Served {
  ctx: DrainCtx;
  mode: PairMode;
  listing: Listing | null;
  /** Its POST batches not answered yet. */
  posting: Set<Promise<void>>;
}

/**
 * Schedules and polls until what `serve` asks is done: this (kind, source) has nothing pending or in
 * flight, or (with a next drain) nothing of its own left to follow, or (verifying) its re-list is
 * done. The cap counts rows in `scheduling` too, so a batch's slots are taken from the moment its
 * intents are committed. Never returns or throws with a POST unanswered or a poll's outcomes unapplied.
 */
export async function moveItems(ctx: DrainCtx, serve: Serve): Promise<void> {
  const loop = new Loop(ctx, serve);
  try {
    await loop.run();
  } finally {
    await loop.settled();
  }
}

/** One call's loop: what it holds between turns, and the I/O that performs each decision. */
class Loop extends LoopCore {
  private readonly own: Served;
  private readonly pairs: Served[];

  constructor(ctx: DrainCtx, serve: Serve) {
    super(ctx);
    const listing =
      serve.mode === 'moving' ? null : startListing(ctx, serve.mode === 'verifying' ? serve.round : undefined);
    this.own = { ctx, mode: serve.mode, listing, posting: new Set() };
    this.pairs = [this.own];
    if (serve.next) this.pairs.push({ ctx: serve.next, mode: 'listing', listing: null, posting: new Set() });
  }

  async run(): Promise<void> {
    const { ctx, deps } = this;
    for (;;) {
      if (this.failed) throw this.failed.err;
      this.own.listing?.check();
      throwIfAborted(ctx);
      const { cap, control } = await capInForce(deps);
      this.lastCap = cap;
      this.controlSeen = noteControl(ctx, control, cap, this.controlSeen);
      const now = deps.clock.now();
      const before = this.view(cap);
      const plan = planLaunch(before, now);
      const left = this.launch(plan, now);
      const after = this.view(cap);
      const early = postedEarly(cap, plan, before.inFlight, after.inFlight);
      if (early) event(ctx, 'drain.queued_ahead', { ...early, roundTripMs: Math.round(this.roundTrip.ms ?? 0) });
      const wait = planWait(after, now, left);
      if (wait.do === 'finish') return;
      if (wait.do === 'page') {
        await this.pairs[wait.pair]?.listing?.nextPage();
        continue;
      }
      // Slept here rather than in an async method (see wakes in ./loop-core.ts).
      const wakes = this.wakes(wait, wait.page === null ? null : (this.pairs[wait.page]?.listing ?? null));
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
  async settled(): Promise<void> {
    await this.polling;
    await Promise.allSettled(this.pairs.flatMap((p) => [...p.posting]));
    for (const p of this.pairs) await p.listing?.stop();
  }

  /**
   * What the loop sees now. A pair's checkpoint reads are made when the planner asks for them, once
   * per view: most turns need few of them (every slot taken, nothing due), and the loop looks twice
   * per turn.
   */
  private view(cap: number): DrainView {
    const { store, plan } = this.deps;
    return {
      cap,
      inFlight: store.countInFlight(),
      polling: this.polling !== null,
      partial: plan.move.until !== undefined,
      pairs: this.pairs.map((p) => pairView(p, store)),
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

  /** Performs the offers of `plan`, each while slots are left; returns the slots left. */
  private launch(plan: Launch, now: number): number {
    let left = plan.free;
    for (const offer of plan.offers) {
      if (left <= 0) break;
      const p = this.pairs[offer.pair] as Served;
      if (offer.list) p.listing = startListing(p.ctx);
      // A later pair's listing fails the drain when that pair is offered slots (the own one's, at every turn).
      if (p !== this.own) p.listing?.check();
      if (offer.take) left -= this.fill(p, left, now, offer.restartsCadence);
    }
    return left;
  }

  /** Schedules up to `limit` due items of `p`; returns how many were launched. */
  private fill(p: Served, limit: number, now: number, restartsCadence: boolean): number {
    const due = dueItems(p.ctx, now, limit);
    if (due.length === 0) return 0;
    if (p !== this.own) event(this.ctx, 'drain.ahead', { kind: p.ctx.kind, source: p.ctx.source, items: due.length });
    // Each move expected by its own kind's model: the next drain's items may be of another kind.
    this.expectLaunched(p.ctx, due, now, restartsCadence);
    // scheduleBatch commits its intents synchronously, before its first await.
    this.postChunks(p.ctx, p.posting, due);
    return due.length;
  }
}

/** A pair as the planner sees it, its checkpoint reads made on first use. */
function pairView(p: Served, store: ActorStore): PairView {
  let listed: boolean | undefined;
  let due: number | null | undefined;
  let open: number | undefined;
  return {
    mode: p.mode,
    listing: p.listing === null ? 'none' : p.listing.done ? 'done' : 'paging',
    posting: p.posting.size,
    get listed() {
      return (listed ??= store.getCursor(p.ctx.kind, p.ctx.source)?.done ?? false);
    },
    get nextDueAt() {
      if (due === undefined) due = nextDueAt(p.ctx);
      return due;
    },
    get open() {
      if (open === undefined) {
        const c = store.countStates(p.ctx.kind, p.ctx.source);
        open = c.scheduling + c.in_flight;
      }
      return open;
    },
  };
}
