/**
 * The one schedule's decisions (`move.order: together`), pure, as ./turn.ts is for a drain per pair:
 * decide here, do in ./together-loop.ts. Every (kind, source) pair of the run is served at once and
 * its due items join one largest-first order (./order.ts); what stays per pair is its listing and
 * its verification. A turn has three parts:
 *
 * - `planSteps`: what changes for each pair. A pair is first listed (a few first listings at a time,
 *   in the run's order; its items move as its pages land), then moving, and once its last item ended
 *   (nothing due, in flight or being posted) its source is listed again, independently, to verify:
 *   items still listed go back to pending and the pair moves again, at most MAX_EXTRA_ROUNDS times,
 *   as the drain of one pair does. A pair whose verification finds nothing left (or, for a partial
 *   drain whose bound is reached, nothing placed left) is done.
 * - `planScheduleLaunch`: the free slots (the cap, plus what queue ahead allows early, less the moves
 *   in flight) and which pairs' items may take them: every pair being listed or moving (a partial
 *   drain's only once listed, so its budget goes to the largest items of the whole source).
 * - `planScheduleWait`: whether the schedule is done, waits for a listing's page, or sleeps until the
 *   earliest of the next poll, a retry's backoff and an early successor's time.
 */
import { earlyAllowance } from './queue-ahead.js';
import { MAX_EXTRA_ROUNDS } from './result.js';
import { earliest, sleepWithMovesOpen } from './turn.js';
import type { DrainView, ListingState, Wait } from './turn.js';

/** Where a pair is in the one schedule. */
export type Phase = 'listing' | 'moving' | 'verifying' | 'done';

/** One (kind, source) pair as the planner sees it; the checkpoint reads are made on first use. */
export interface SchedulePairView {
  phase: Phase;
  listing: ListingState;
  /** Its source is wholly in the checkpoint (the listing's cursor is done). */
  listed: boolean;
  /** When its next pending item is due (absolute ms), or null when none will be. */
  nextDueAt: number | null;
  /** Its rows in `scheduling` or `in_flight`. */
  open: number;
  /** Its batches of POSTs not answered yet. */
  posting: number;
  /** Verification re-lists this process started for it. */
  rounds: number;
  /** Its items pending, being scheduled or in flight. */
  remaining: number;
  /** A partial drain's bound is reached for its source. */
  bounded: boolean;
}

export interface ScheduleView extends Omit<DrainView, 'pairs'> {
  pairs: readonly SchedulePairView[];
}

/** A change of one pair's phase. */
export type Step =
  /** Start its first listing (it waited for the one before it). */
  | { pair: number; do: 'list' }
  /** Its listing or verification is done: its items move. */
  | { pair: number; do: 'move' }
  /** Its last item ended: list its source again, independently. */
  | { pair: number; do: 'verify' }
  /** Nothing of it is left to do. */
  | { pair: number; do: 'finish' };

/** The free slots and the pairs whose due items take them, in the one order. */
export interface ScheduleLaunch {
  /** Moves allowed beyond the cap right now, for moves expected to end within the round trip. */
  early: number;
  /** Free slots: the cap plus `early`, less what is in flight (negative when over). */
  free: number;
  /** The pairs whose due items are merged into the launch. */
  take: number[];
  /** Nothing was in flight: a launch restarts the poll cadence from now. */
  restartsCadence: boolean;
}

/** A pair's items may take slots: it is listed or moving (a partial drain's once its source is wholly listed). */
function offered(v: ScheduleView, p: SchedulePairView): boolean {
  if (p.phase === 'moving') return true;
  return p.phase === 'listing' && p.listing !== 'none' && (!v.partial || p.listed);
}

/**
 * First listings run at once, at most this many: the largest items of every pair are known early
 * (a pair listed after the others would give its large items only once smaller ones took the
 * slots), and the instance serves a few keyset walks at a time, not one per kind and source.
 */
export const LISTINGS_AT_ONCE = 4;

/** What changes for each pair this turn. */
export function planSteps(v: ScheduleView): Step[] {
  const steps: Step[] = [];
  let listing = v.pairs.filter((p) => p.phase === 'listing' && p.listing === 'paging').length;
  v.pairs.forEach((p, pair) => {
    if (p.phase === 'listing') {
      if (p.listing === 'done' || (p.listing === 'none' && p.listed)) steps.push({ pair, do: 'move' });
      else if (p.listing === 'none' && listing < LISTINGS_AT_ONCE) {
        steps.push({ pair, do: 'list' });
        listing++;
      }
    } else if (p.phase === 'moving') {
      if (p.posting === 0 && p.open === 0 && p.nextDueAt === null)
        steps.push({ pair, do: p.rounds >= MAX_EXTRA_ROUNDS ? 'finish' : 'verify' });
    } else if (p.phase === 'verifying' && p.listing === 'done' && p.posting === 0) {
      // A reached bound leaves unplaced items pending on purpose: done once nothing placed is open.
      const settled = p.remaining === 0 || (p.bounded && p.open === 0 && p.nextDueAt === null);
      steps.push({ pair, do: settled ? 'finish' : 'move' });
    }
  });
  return steps;
}

/** What to launch this turn. */
export function planScheduleLaunch(v: ScheduleView, now: number): ScheduleLaunch {
  const { depth, roundTripMs, ends } = v.queueAhead;
  const early = v.cap > 0 ? earlyAllowance(ends, now, roundTripMs, depth) : 0;
  const free = v.cap + early - v.inFlight;
  const take = free > 0 ? v.pairs.flatMap((p, i) => (offered(v, p) ? [i] : [])) : [];
  return { early, free, take, restartsCadence: v.inFlight === 0 };
}

/** How to wait, from the view after this turn's launches; `free` is what they left of the turn's slots. */
export function planScheduleWait(v: ScheduleView, now: number, free: number): Wait | { do: 'again' } {
  if (v.pairs.every((p) => p.phase === 'done')) return { do: 'finish' };
  // A pair's phase can change now (its last move ended with this turn's outcomes): look again at once.
  if (planSteps(v).length > 0) return { do: 'again' };
  const offers = v.pairs.filter((p) => offered(v, p));
  // What can give a free slot work before the next poll: a listing's next page, or a retry's backoff ending.
  const pageOf = v.pairs.findIndex((p) => p.listing === 'paging');
  const page = free > 0 && pageOf >= 0 ? pageOf : null;
  const dueAt = free > 0 ? earliest(offers.map((p) => p.nextDueAt).filter((t) => t !== null && t > now)) : null;
  if (v.inFlight === 0 && v.pairs.every((p) => p.posting === 0)) {
    if (pageOf >= 0) return { do: 'page', pair: pageOf };
    // Paused with nothing in flight: look at the control again after a poll interval.
    if (v.cap <= 0) return { do: 'sleep', until: now + v.poll.intervalMs, page: null, pollEnds: false, poll: null };
    // Only items waiting out a retry backoff: until the earliest of them (a poll interval at most, to be safe).
    const due = earliest(offers.map((p) => p.nextDueAt));
    return { do: 'sleep', until: due ?? now + v.poll.intervalMs, page: null, pollEnds: false, poll: null };
  }
  return sleepWithMovesOpen(v, now, free, dueAt, page);
}
