/**
 * Queue ahead of predicted ends (`move.queue_ahead`): when a move ends, its slot idles for the refill round
 * trip (the poll that notices the end, the POST of the next move, the instance's start of it). With
 * `move.queue_ahead` > 0, a move the model expects to end within that round trip gets its successor
 * POSTed early, so the instance has it queued when the worker frees. The round trip is measured
 * here, never assumed: until one poll and one POST batch were timed, nothing is posted early.
 */

/** Weight of the newest measurement in the running averages. */
const ALPHA = 0.25;

/** The refill round trip as this process measured it: a poll's duration plus a POST batch's. */
export class RefillRoundTrip {
  private pollMs: number | null = null;
  private postMs: number | null = null;

  /** A poll of the moves in flight took `ms`, from its start to its outcomes applied. */
  notePoll(ms: number): void {
    this.pollMs = average(this.pollMs, ms);
  }

  /** A batch's POSTs took `ms`, from its intents to its answers recorded. */
  notePost(ms: number): void {
    this.postMs = average(this.postMs, ms);
  }

  /** The round trip in ms, or null until both parts were measured. */
  get ms(): number | null {
    return this.pollMs === null || this.postMs === null ? null : this.pollMs + this.postMs;
  }
}

function average(prev: number | null, ms: number): number {
  if (!Number.isFinite(ms) || ms < 0) return prev ?? 0;
  return prev === null ? ms : prev + ALPHA * (ms - prev);
}

/**
 * How many moves may be in flight beyond the cap right now: one per move expected to end within
 * the round trip, at most `queueAhead`. `ends` are the expected ends (ms since epoch) of the moves
 * in flight, in any order; moves already posted early are counted by the caller against this.
 */
export function earlyAllowance(
  ends: readonly number[],
  now: number,
  roundTripMs: number | null,
  queueAhead: number,
): number {
  if (queueAhead <= 0 || roundTripMs === null) return 0;
  let ending = 0;
  for (const e of ends) if (e <= now + roundTripMs) ending++;
  return Math.min(queueAhead, ending);
}

/**
 * When the allowance grows next: the round trip before the next expected end not yet within it,
 * while fewer than `queueAhead` are. Null when nothing more can be posted early.
 */
export function nextEarlyAt(
  ends: readonly number[],
  now: number,
  roundTripMs: number | null,
  queueAhead: number,
): number | null {
  if (queueAhead <= 0 || roundTripMs === null) return null;
  const later = ends.filter((e) => e > now + roundTripMs);
  if (ends.length - later.length >= queueAhead || later.length === 0) return null;
  return Math.min(...later) - roundTripMs;
}

/** What one poll saw, for `queue_ahead: auto`. */
export interface PollSample {
  /** Since the previous poll, ms. */
  elapsedMs: number;
  /** Moves the poll saw end (finished, failed, or gone) since the previous one. */
  ended: number;
  /** Moves in flight waiting in the instance's queue (`initial`, `scheduled`): read-only, not moving. */
  queued: number;
  /** Moves in flight that run. */
  running: number;
}

/** What `queue_ahead: auto` carries from poll to poll. */
export interface AutoDepthState {
  /** Moves ending per ms, a running average (null until a poll measured it). */
  endRate: number | null;
  /** Running averages of the moves seen queued and running: their ratio is the read-only time added. */
  queued: number | null;
  running: number | null;
  /** The time between polls, a running average (ms; null until a second poll). */
  gapMs: number | null;
  /** The depth in force. */
  depth: number;
}

export const AUTO_START: AutoDepthState = { endRate: null, queued: null, running: null, gapMs: null, depth: 0 };

/**
 * `queue_ahead: auto`, pure: the depth after one more poll. What a round trip leaves idle is one slot
 * per move ending within it, and a move's end is seen only at the first poll after it: until then
 * its early successor still counts against the depth. So the depth wanted is the moves expected to
 * end within the time between polls and the measured refill round trip (end rate x (gap + round
 * trip)), at most one per slot (the cap). No successor goes sooner for it: each is still posted a
 * round trip before its move's expected end. What queueing ahead
 * costs is read-only time: a successor waits in the instance's queue, read-only, until a worker
 * frees. The polls see it: a queued move's share of the moves running is the read-only time added
 * per unit of move time (the exposure less 1). While that share stays within the budget (exposure
 * budget less 1) the depth grows by one per poll towards what is wanted; once it is over, the depth
 * halves (a budget overspent by the instance's own queue, whatever queue ahead does, takes the depth
 * to 0 and keeps it there). Until the round trip and the end rate are both measured, nothing is
 * posted early.
 */
export function nextAutoDepth(
  prev: AutoDepthState,
  sample: PollSample,
  o: { roundTripMs: number | null; cap: number; exposureBudget: number },
): AutoDepthState {
  const avg = (p: number | null, x: number) => (p === null ? x : p + ALPHA * (x - p));
  const rate = sample.elapsedMs > 0 ? sample.ended / sample.elapsedMs : null;
  const endRate = rate === null ? prev.endRate : avg(prev.endRate, rate);
  const queued = avg(prev.queued, sample.queued);
  const running = avg(prev.running, sample.running);
  const gapMs = sample.elapsedMs > 0 ? avg(prev.gapMs, sample.elapsedMs) : prev.gapMs;
  const next = { endRate, queued, running, gapMs, depth: prev.depth };
  if (o.roundTripMs === null || endRate === null || o.cap <= 0 || o.exposureBudget <= 1) return { ...next, depth: 0 };
  const wanted = Math.min(o.cap, Math.ceil(endRate * (o.roundTripMs + (gapMs ?? 0))));
  const added = running > 0 ? queued / running : queued > 0 ? Infinity : 0;
  if (added > o.exposureBudget - 1) return { ...next, depth: Math.floor(prev.depth / 2) };
  return { ...next, depth: Math.min(wanted, prev.depth + 1) };
}
