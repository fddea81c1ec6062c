/**
 * The drain loop's decisions, as pure functions of what the loop sees and the time: decide here,
 * do in ./loop.ts. A turn of the loop has two halves. `planLaunch` says how many slots are free
 * (the cap, plus what queue ahead allows early, less the moves in flight) and which pairs are
 * offered them, in order. Once those launches are done, `planWait` says, from what the checkpoint
 * then holds, whether the loop is finished, waits for a listing's next page, or sleeps until the
 * earliest of the next poll, a retry's backoff ending and an early successor's time (woken sooner
 * by a page or a poll's end), and whether that wake-up polls. The halves are apart because the
 * second depends on what the launches found, which only the checkpoint knows: how many items were
 * due, a partial drain's bound recorded, the ends the new moves are expected at.
 *
 * The loop serves (kind, source) pairs in order: the drain's own first, then the drain after it,
 * whose items fill the tail of this one while its own slots would idle.
 */
import { earlyAllowance, nextEarlyAt } from './queue-ahead.js';

/** What the loop does with a pair's items. */
export type PairMode =
  /** They move as the pair's listing commits them, page by page (the listing runs beside the loop). */
  | 'listing'
  /** They move; nothing of the pair is listed meanwhile (listed before, given, or learnt from move records). */
  | 'moving'
  /** The pair's verification re-list runs beside the loop; its items wait for the round after it. */
  | 'verifying';

/** A listing of the pair's source beside the loop: none (not started, or none to run), paging, or done. */
export type ListingState = 'none' | 'paging' | 'done';

/** One (kind, source) pair as the planner sees it. */
export interface PairView {
  /** A later pair is in `listing`: its listing starts when it is served, unless its source is wholly listed. */
  mode: PairMode;
  listing: ListingState;
  /** Its source is wholly in the checkpoint (the listing's cursor is done). */
  listed: boolean;
  /** When its next pending item is due (absolute ms), or null when none will be. */
  nextDueAt: number | null;
  /** Its rows in `scheduling` or `in_flight`. */
  open: number;
  /** Its batches of POSTs not answered yet. */
  posting: number;
}

/** What the loop sees at one point of a turn. */
export interface DrainView {
  /** The cap in force (0 while paused or outside every window). */
  cap: number;
  /** Rows in `scheduling` or `in_flight` across the run: what the cap counts. */
  inFlight: number;
  /** A poll of the moves in flight runs beside the loop. */
  polling: boolean;
  /** `move.until` is set: a later pair takes items only once its source is wholly listed. */
  partial: boolean;
  /** The pairs served, in the order they are offered free slots: the drain's own first. */
  pairs: readonly PairView[];
  /** Queue ahead: `move.queue_ahead`, the measured refill round trip, the moves' expected ends. */
  queueAhead: { depth: number; roundTripMs: number | null; ends: readonly number[] };
  /** The poll cadence: `poll.interval` counted from `anchor`, brought forward to the earliest expected end. */
  poll: { intervalMs: number; minGapMs: number; anchor: number; lastPollAt: number | null; earliestEnd: number | null };
}

/** Slots offered to one pair; each offer takes from what the offers before it left. */
export interface Offer {
  pair: number;
  /** Start the pair's listing first (a later pair whose source is not wholly listed yet). */
  list: boolean;
  /** Take its due items (false: a partial drain's later pair, not wholly listed yet). */
  take: boolean;
  /** Nothing was in flight: a launch here restarts the poll cadence from now. */
  restartsCadence: boolean;
}

/** The first half of a turn: what to launch. */
export interface Launch {
  /** Moves allowed beyond the cap right now, for moves expected to end within the round trip. */
  early: number;
  /** Free slots: the cap plus `early`, less what is in flight (negative when over). */
  free: number;
  /** In order, each only while slots are left. */
  offers: Offer[];
}

/** The second half of a turn: how the loop waits. */
export type Wait =
  /** The loop is done with what it serves. */
  | { do: 'finish' }
  /** Nothing in flight and nothing due: the pair's listing's next page is all there is to wait for. */
  | { do: 'page'; pair: number }
  | {
      do: 'sleep';
      /** Absolute ms. */
      until: number;
      /** Woken sooner by this pair's listing committing its next page. */
      page: number | null;
      /** Woken sooner by the running poll's end. */
      pollEnds: boolean;
      /**
       * Poll when the sleep ran out at or after `at` with no poll running; `await` the poll when
       * nothing else can want the loop meanwhile.
       */
      poll: { at: number; await: boolean } | null;
    };

/** Pair `i` is offered slots: the first unless verifying, a later one once the one before it is listed or verifying. */
function served(v: DrainView, i: number): boolean {
  if (i === 0) return v.pairs[0]?.mode !== 'verifying';
  const before = v.pairs[i - 1];
  return before !== undefined && (before.mode === 'verifying' || before.listing !== 'paging');
}

/** What to launch this turn. */
export function planLaunch(v: DrainView, now: number): Launch {
  const { depth, roundTripMs, ends } = v.queueAhead;
  const early = v.cap > 0 ? earlyAllowance(ends, now, roundTripMs, depth) : 0;
  const free = v.cap + early - v.inFlight;
  const offers: Offer[] = [];
  if (free > 0) {
    v.pairs.forEach((p, i) => {
      if (!served(v, i)) return;
      offers.push({
        pair: i,
        list: i > 0 && p.listing === 'none' && !p.listed,
        // A partial drain spends its budget on the largest items of the whole source: not before it is listed.
        take: i === 0 || !v.partial || p.listed,
        restartsCadence: i === 0 && v.inFlight === 0,
      });
    });
  }
  return { early, free, offers };
}

/**
 * Moves this turn posted beyond the cap, for `drain.queued_ahead` (null: none): `inFlight` before
 * and after the turn's launches.
 */
export function postedEarly(
  cap: number,
  launch: Launch,
  before: number,
  after: number,
): { items: number; beyond: number } | null {
  const beyond = after - cap;
  if (launch.early <= 0 || beyond <= 0 || beyond <= before - cap) return null;
  return { items: beyond - Math.max(0, before - cap), beyond };
}

/**
 * When the next poll is due: `poll.interval` after the anchor, sooner at the earliest expected end,
 * never within `poll.min_interval` of the last poll.
 */
export function nextPollAt(poll: DrainView['poll']): number {
  const latest = poll.anchor + poll.intervalMs;
  if (poll.earliestEnd === null) return latest;
  const soonest = poll.lastPollAt === null ? -Infinity : poll.lastPollAt + poll.minGapMs;
  return Math.min(latest, Math.max(soonest, poll.earliestEnd));
}

/** How to wait, from the view after this turn's launches; `free` is what they left of the turn's slots. */
export function planWait(v: DrainView, now: number, free: number): Wait {
  const own = v.pairs[0];
  if (!own) return { do: 'finish' };
  const ownListed = own.listing !== 'paging';
  if (own.mode === 'verifying') {
    // The re-list is this call's work: done once it is, with nothing of its own still being posted.
    if (ownListed && own.posting === 0) return { do: 'finish' };
  } else if (v.pairs.length > 1 && ownListed && own.posting === 0 && own.open === 0 && own.nextDueAt === null) {
    // Done with its own items: the later pairs' moves in flight are theirs to follow.
    return { do: 'finish' };
  }
  // What can give a free slot work before the next poll: the next page of a listing, or an item's
  // retry backoff ending, of any pair offered slots.
  const offered = v.pairs.filter((_, i) => served(v, i));
  // The first listing still paging: every pair before it is listed, so its pair is served.
  const pageOf = v.pairs.findIndex((p) => p.listing === 'paging');
  const page = free > 0 && pageOf >= 0 ? pageOf : null;
  const dueAt = free > 0 ? earliest(offered.map((p) => p.nextDueAt).filter((t) => t !== null && t > now)) : null;
  if (v.inFlight === 0 && v.pairs.reduce((n, p) => n + p.posting, 0) === 0) {
    if (own.listing === 'paging') return { do: 'page', pair: 0 };
    if (own.nextDueAt === null) return { do: 'finish' };
    // Paused with nothing in flight: look at the control again after a poll interval.
    if (v.cap <= 0) return { do: 'sleep', until: now + v.poll.intervalMs, page: null, pollEnds: false, poll: null };
    // Only items waiting out a retry backoff (or a later pair's listing): until the earliest of them.
    return { do: 'sleep', until: dueAt ?? own.nextDueAt, page, pollEnds: false, poll: null };
  }
  return sleepWithMovesOpen(v, now, free, dueAt, page);
}

/**
 * How a drain with moves open waits (one pair's or the one schedule's): until the next poll, the
 * next item due, or the moment an early successor may go, whichever comes first; `page` is the
 * listing whose next page would wake it.
 */
export function sleepWithMovesOpen(
  v: Pick<DrainView, 'queueAhead' | 'polling' | 'poll'>,
  now: number,
  free: number,
  dueAt: number | null,
  page: number | null,
): Wait {
  // Only with every slot taken can an early successor add a move (free slots mean nothing is due).
  const { depth, roundTripMs, ends } = v.queueAhead;
  const earlyAt = free > 0 ? null : nextEarlyAt(ends, now, roundTripMs, depth);
  // While a poll runs, the next one waits for it (its end wakes the loop; a poll interval at the latest).
  const pollAt = v.polling ? now + v.poll.intervalMs : nextPollAt(v.poll);
  const until = Math.min(pollAt, dueAt ?? Infinity, earlyAt !== null && earlyAt > now ? earlyAt : Infinity);
  // Nothing else can want the loop before the poll ends (no item due, no page, no early successor):
  // the loop waits for it, as an inline poll would.
  const alone = dueAt === null && earlyAt === null && page === null;
  return { do: 'sleep', until, page, pollEnds: v.polling, poll: { at: pollAt, await: alone } };
}

/** The earliest of some moments; null when none is given. */
export function earliest(times: (number | null)[]): number | null {
  let min: number | null = null;
  for (const t of times) if (t !== null && (min === null || t < min)) min = t;
  return min;
}
