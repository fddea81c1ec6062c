/**
 * The drain loop's decisions, as pure functions of what the loop sees and the time: decide here,
 * do in ./loop.ts. The loop runs a schedule: (kind, source) pairs, each in a phase, whose due items
 * take the free slots in an order. There are two schedules:
 *
 * - `by-kind`: the drain's own pair first (being listed, moving, or verifying: its phase is given
 *   by ./run.ts for the call, and the call ends once the pair is done with), then the drain after
 *   it, whose items fill the tail of this one while its own slots would idle. Each pair takes the
 *   slots in its own order, one after the other. A bulk plan's leftovers, a kind moved by move
 *   records and a revert's given items are this schedule with the own pair alone, moving.
 * - `together` (`move.order: together`): every pair of the run at once, their due items merged into
 *   one largest-first order (./order.ts). What stays per pair is its listing and its verification,
 *   stepped here: first listed (a few at a time, in the run's order; its items move as its pages
 *   land), then moving, and once its last item ended its source is listed again, independently:
 *   items still listed go back to pending and the pair moves again, at most MAX_EXTRA_ROUNDS times.
 *   A pair whose verification finds nothing left (or, once a partial drain's bound is reached,
 *   nothing placed left) is done; the call ends when every pair is.
 *
 * A turn of the loop: `planSteps` says which pairs change phase; `planLaunch` how many slots are
 * free (the cap, plus what queue ahead allows early, less the moves in flight) and which pairs are
 * offered them, in order; once those launches are done, `planWait` says, from what the checkpoint
 * then holds, whether the loop is finished, looks again at once, waits for a listing's next page,
 * or sleeps until the earliest of the next poll, a retry's backoff ending and an early successor's
 * time (woken sooner by a page or a poll's end), and whether that wake-up polls. Launch and wait
 * are apart because the second depends on what the launches found, which only the checkpoint
 * knows: how many items were due, a partial drain's bound recorded, the ends the new moves are
 * expected at.
 */
import { earlyAllowance, nextEarlyAt } from './queue-ahead.js';
import { MAX_EXTRA_ROUNDS } from './result.js';

/** Which pairs a call of the loop serves, and how their items take the slots (see above). */
export type ScheduleKind = 'by-kind' | 'together';

/**
 * Where a pair is: its items move as its listing commits them, page by page (`listing`: the listing
 * runs beside the loop; a later pair of `by-kind` lists when it is first served, unless its source
 * is wholly listed); they move with nothing listed meanwhile (`moving`: listed before, given, or
 * learnt from move records); its verification re-list runs beside the loop and its items wait for
 * the round after it (`verifying`); nothing of it is left to do (`done`, `together` only).
 */
export type Phase = 'listing' | 'moving' | 'verifying' | 'done';

/** A listing of the pair's source beside the loop: none (not started, or none to run), paging, or done. */
export type ListingState = 'none' | 'paging' | 'done';

/** One (kind, source) pair as the planner sees it; the checkpoint reads are made on first use. */
export interface PairView {
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
  /** Verification re-lists this call started for it. */
  rounds: number;
  /** Its items pending, being scheduled or in flight. */
  remaining: number;
  /** A partial drain's bound is reached for its source. */
  bounded: boolean;
}

/** What the loop sees at one point of a turn. */
export interface DrainView {
  schedule: ScheduleKind;
  /** The cap in force (0 while paused or outside every window). */
  cap: number;
  /** Rows in `scheduling` or `in_flight` across the run: what the cap counts. */
  inFlight: number;
  /** A poll of the moves in flight runs beside the loop. */
  polling: boolean;
  /** `move.until` is set: a pair takes items only once its source is wholly listed (`by-kind`: a later one). */
  partial: boolean;
  /** The pairs served, in the run's order (`by-kind`: the drain's own first). */
  pairs: readonly PairView[];
  /** Queue ahead: `move.queue_ahead`, the measured refill round trip, the moves' expected ends. */
  queueAhead: { depth: number; roundTripMs: number | null; ends: readonly number[] };
  /** The poll cadence: `poll.interval` counted from `anchor`, brought forward to the earliest expected end. */
  poll: { intervalMs: number; minGapMs: number; anchor: number; lastPollAt: number | null; earliestEnd: number | null };
}

/** A change of one pair's phase. */
export type Step =
  /** Start its first listing (it waited for the ones before it). */
  | { pair: number; do: 'list' }
  /** Its listing or verification is done: its items move. */
  | { pair: number; do: 'move' }
  /** Its last item ended: list its source again, independently. */
  | { pair: number; do: 'verify' }
  /** Nothing of it is left to do. */
  | { pair: number; do: 'finish' };

/** Slots offered to some pairs; each offer takes from what the offers before it left. */
export interface Offer {
  /** The pairs whose due items take the slots: one, or (merged) several in one largest-first order. */
  pairs: number[];
  /** Their items are merged into the one order (the one schedule's, a partial drain's budget shared per source). */
  merge: boolean;
  /** Start the pair's listing first (a later pair of `by-kind` whose source is not wholly listed yet). */
  list: boolean;
  /** Take their due items (false: a partial drain's later pair, not wholly listed yet). */
  take: boolean;
  /** Nothing was in flight: a launch here restarts the poll cadence from now. */
  restartsCadence: boolean;
}

/** What to launch in a turn. */
export interface Launch {
  /** Moves allowed beyond the cap right now, for moves expected to end within the round trip. */
  early: number;
  /** Free slots: the cap plus `early`, less what is in flight (negative when over). */
  free: number;
  /** In order, each only while slots are left. */
  offers: Offer[];
}

/** How the loop waits. */
export type Wait =
  /** The loop is done with what it serves. */
  | { do: 'finish' }
  /** A pair's phase can change now (its last move ended with this turn's outcomes): look again at once. */
  | { do: 'again' }
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

/**
 * First listings of the one schedule run at once, at most this many: the largest items of every
 * pair are known early (a pair listed after the others would give its large items only once
 * smaller ones took the slots), and the instance serves a few keyset walks at a time.
 */
export const LISTINGS_AT_ONCE = 4;

/** Whether pair `i`'s items may take slots this turn. */
function served(v: DrainView, i: number): boolean {
  const p = v.pairs[i];
  if (!p) return false;
  if (v.schedule === 'together') {
    // Listed or moving (a partial drain's once its source is wholly listed).
    if (p.phase === 'moving') return true;
    return p.phase === 'listing' && p.listing !== 'none' && (!v.partial || p.listed);
  }
  // By kind: the own pair unless verifying; a later one once the one before it is listed or verifying.
  if (i === 0) return p.phase !== 'verifying';
  const before = v.pairs[i - 1];
  return before !== undefined && (before.phase === 'verifying' || before.listing !== 'paging');
}

/** What changes for each pair this turn (the one schedule's: `by-kind` phases are the caller's). */
export function planSteps(v: DrainView): Step[] {
  const steps: Step[] = [];
  if (v.schedule !== 'together') return steps;
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
export function planLaunch(v: DrainView, now: number): Launch {
  const { depth, roundTripMs, ends } = v.queueAhead;
  const early = v.cap > 0 ? earlyAllowance(ends, now, roundTripMs, depth) : 0;
  const free = v.cap + early - v.inFlight;
  const offers: Offer[] = [];
  const take = free > 0 ? v.pairs.flatMap((_, i) => (served(v, i) ? [i] : [])) : [];
  if (v.schedule === 'together') {
    if (take.length > 0)
      offers.push({ pairs: take, merge: true, list: false, take: true, restartsCadence: v.inFlight === 0 });
  } else {
    for (const i of take) {
      const p = v.pairs[i] as PairView;
      offers.push({
        pairs: [i],
        merge: false,
        list: i > 0 && p.listing === 'none' && !p.listed,
        // A partial drain spends its budget on the largest items of the whole source: not before it is listed.
        take: i === 0 || !v.partial || p.listed,
        restartsCadence: i === 0 && v.inFlight === 0,
      });
    }
  }
  return { early, free, offers };
}

/**
 * Moves this turn posted beyond the cap, for `drain.queued_ahead` (null: none): `inFlight` before
 * and after the turn's launches.
 */
export function postedEarly(
  cap: number,
  launch: Pick<Launch, 'early'>,
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

/** Whether the call is done with what it serves. */
function finished(v: DrainView): boolean {
  if (v.schedule === 'together') return v.pairs.every((p) => p.phase === 'done');
  const own = v.pairs[0];
  if (!own) return true;
  const ownListed = own.listing !== 'paging';
  // The re-list is this call's work: done once it is, with nothing of its own still being posted.
  if (own.phase === 'verifying') return ownListed && own.posting === 0;
  // With a next drain, done with its own items: the later pairs' moves in flight are theirs to follow.
  return v.pairs.length > 1 && ownListed && own.posting === 0 && own.open === 0 && own.nextDueAt === null;
}

/** How to wait, from the view after this turn's launches; `free` is what they left of the turn's slots. */
export function planWait(v: DrainView, now: number, free: number): Wait {
  if (finished(v)) return { do: 'finish' };
  if (planSteps(v).length > 0) return { do: 'again' };
  // What can give a free slot work before the next poll: the next page of a listing, or an item's
  // retry backoff ending, of any pair offered slots.
  const offered = v.pairs.filter((_, i) => served(v, i));
  // The first listing still paging (by kind: every pair before it is listed, so its pair is served).
  const pageOf = v.pairs.findIndex((p) => p.listing === 'paging');
  const page = free > 0 && pageOf >= 0 ? pageOf : null;
  const dueAt = free > 0 ? earliest(offered.map((p) => p.nextDueAt).filter((t) => t !== null && t > now)) : null;
  if (v.inFlight === 0 && v.pairs.every((p) => p.posting === 0)) return idle(v, now, pageOf, page, dueAt, offered);
  return sleepWithMovesOpen(v, now, free, dueAt, page);
}

/** How the loop waits with nothing in flight or being posted. */
function idle(
  v: DrainView,
  now: number,
  pageOf: number,
  page: number | null,
  dueAt: number | null,
  offered: readonly PairView[],
): Wait {
  const own = v.pairs[0] as PairView;
  const byKind = v.schedule === 'by-kind';
  if (byKind ? own.listing === 'paging' : pageOf >= 0) return { do: 'page', pair: byKind ? 0 : pageOf };
  if (byKind && own.nextDueAt === null) return { do: 'finish' };
  // Paused with nothing in flight: look at the control again after a poll interval.
  if (v.cap <= 0) return { do: 'sleep', until: now + v.poll.intervalMs, page: null, pollEnds: false, poll: null };
  // By kind: only items waiting out a retry backoff (or a later pair's listing), until the earliest
  // of them. The one schedule: until the earliest retry (a poll interval at most, to be safe).
  if (byKind) return { do: 'sleep', until: dueAt ?? (own.nextDueAt as number), page, pollEnds: false, poll: null };
  const due = earliest(offered.map((p) => p.nextDueAt));
  return { do: 'sleep', until: due ?? now + v.poll.intervalMs, page: null, pollEnds: false, poll: null };
}

/**
 * How a drain with moves open waits: until the next poll, the next item due, or the moment an early
 * successor may go, whichever comes first; `page` is the listing whose next page would wake it.
 */
function sleepWithMovesOpen(v: DrainView, now: number, free: number, dueAt: number | null, page: number | null): Wait {
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
