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
