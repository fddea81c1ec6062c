/**
 * The operator's live overrides (`shardmove control`) in words: what a `control` command did
 * ("paused", "unpaused: cap back to the plan's 10", "cap 4 from now on (the plan's is 10)"), and
 * what is in force (`control` without options, `status`). Pure.
 */
import type { RunControl } from '../store/types.js';
import { BREAKER_PREFIX } from '../events/hold.js';

/** The overrides with the plan's `move.concurrency` (null: neither the plan nor the checkpoint says). */
export interface ControlView extends RunControl {
  planConcurrency: number | null;
  /** The plan's `move.concurrency` is `auto`: its limiter chooses the cap (`planConcurrency` is null then). */
  planAuto?: boolean;
}

/** A change asked of `control`: a cap (null: back to the plan's), a pause or an unpause. */
export interface ControlChangeAsked {
  concurrency?: number | null;
  paused?: boolean;
}

/** The operator's cap once nothing pauses the run: the override, else the plan's (null: unknown). */
export function capWhenUnpaused(c: ControlView): number | null {
  return c.concurrency ?? c.planConcurrency;
}

/** "10, the plan's", "4, set with shardmove control (the plan's is 10)". */
function capInForce(c: ControlView): string {
  if (c.concurrency === null && c.planAuto) return "chosen by the plan's move.concurrency: auto";
  if (c.concurrency === null) return c.planConcurrency === null ? "the plan's" : `${c.planConcurrency}, the plan's`;
  return `${c.concurrency}, set with shardmove control${planIs(c)}`;
}

const planIs = (c: ControlView) =>
  c.planAuto ? " (the plan's is auto)" : c.planConcurrency === null ? '' : ` (the plan's is ${c.planConcurrency})`;
const back = (c: ControlView) =>
  c.planAuto
    ? "back to the plan's move.concurrency: auto (its limiter decides again)"
    : c.planConcurrency === null
      ? "back to the plan's"
      : `back to the plan's ${c.planConcurrency}`;
const PAUSED = 'no new moves; the moves in flight are followed to their end';

/** Who paused it, when it was not an operator: "by the failure breaker (2 moves failed within 10m)". */
function pausedBy(c: RunControl): string {
  if (!c.pausedBy?.startsWith(BREAKER_PREFIX)) return '';
  const why = /^paused by the failure breaker: (\d+ moves? failed within \S+)/.exec(c.pausedBy)?.[1];
  return ` by the failure breaker${why ? ` (${why})` : ''}`;
}

/** What is in force, e.g. "paused by the failure breaker (...): no new moves ...; once unpaused: cap 10, the plan's". */
export function describeInForce(c: ControlView): string {
  if (c.paused) return `paused${pausedBy(c)}: ${PAUSED}; once unpaused: cap ${capInForce(c)}`;
  return `cap ${capInForce(c)}`;
}

/** What `control` did, in words, from the overrides before and after the change. */
export function describeChange(change: ControlChangeAsked, before: RunControl, after: ControlView): string {
  const capChanged = change.concurrency !== undefined;
  const newCap = () => (after.concurrency === null ? `cap ${back(after)}` : `cap ${after.concurrency}${planIs(after)}`);
  if (change.paused === true) {
    const was = !before.paused
      ? 'paused'
      : before.pausedBy?.startsWith(BREAKER_PREFIX)
        ? "paused, now by you (it was the failure breaker's pause, which an unpause ends just the same)"
        : 'paused (it already was)';
    return `${was}: ${PAUSED}; once unpaused: ${capChanged ? newCap() : `cap ${capInForce(after)}`}`;
  }
  if (change.paused === false) {
    if (!before.paused) return `not paused, nothing to unpause; ${capChanged ? newCap() : `cap ${capInForce(after)}`}`;
    if (after.concurrency === null) return `unpaused: cap ${back(after)}`;
    return `unpaused: cap ${after.concurrency}${capChanged ? planIs(after) : `, set with shardmove control${planIs(after)}`}`;
  }
  if (capChanged) {
    const cap =
      after.concurrency === null ? `cap ${back(after)}` : `cap ${after.concurrency} from now on${planIs(after)}`;
    return after.paused ? `${cap.replace(' from now on', '')} once unpaused; still paused${pausedBy(after)}` : cap;
  }
  return `in force: ${describeInForce(after)}`;
}
