/**
 * The sandbox's time source. Its own module so that the moves engine, which needs only the time,
 * does not import the HTTP request context (that import closed the one cycle in `src`).
 */

/** Time source; tests may replace it (moves, OAuth expiry and fault windows all follow it). */
export interface Clock {
  now(): number;
}
