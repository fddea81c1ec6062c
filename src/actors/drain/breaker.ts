/**
 * The failure breaker (`retry.pause_after`): when N moves fail within a window, or (the rate form)
 * the failed share of the moves that ended within it reaches the rate once `min_moves` have ended
 * there, the run pauses exactly as `shardmove control --pause` does (moves in flight are still
 * followed, nothing new starts) until an operator unpauses it. GitLab.com's rebalance script stops
 * after `--max-failures`; a paused run keeps its checkpoint and goes on with `control --unpause`.
 *
 * The breaker in force is the plan's, or the one `shardmove control --breaker` set in the
 * checkpoint, read at every ended move: a change applies to the next one.
 */
import { formatPlanDuration } from '../../time/durations.js';
import { formatRate } from '../../plan/breaker-field.js';
import type { FailureBreaker } from '../../plan/values.js';
import type { ActorDeps } from '../types.js';
import { commandOn } from '../../shared/control-command.js';
import type { RunNamed } from '../../shared/control-command.js';
import type { DrainStore } from '../../store/views.js';

/** When each move that ended in this run process ended (ms), and whether it failed, oldest first. */
const ended = new WeakMap<ActorDeps<DrainStore>, Array<{ at: number; failed: boolean }>>();

/** The breaker in force: `control --breaker`'s (null there: turned off), else the plan's. */
export function breakerInForce(deps: Pick<ActorDeps<DrainStore>, 'plan' | 'store'>): FailureBreaker | undefined {
  const set = deps.store.readThresholds().breaker;
  if (set === null) return undefined;
  if (set !== undefined) return set;
  return deps.plan.retry.pauseAfter ?? undefined;
}

/** What the breaker found when it tripped: the counts in its window, and its words. */
export interface BreakerTrip {
  failures: number;
  /** Moves that ended within the window, failed ones included. */
  ended: number;
  reason: string;
}

/**
 * Judges the moves that ended within the window (pure): a trip, or null. The count form counts the
 * failed ones; the rate form their share of all that ended, once `minMoves` have.
 */
export function judgeBreaker(
  b: FailureBreaker,
  failures: number,
  endedMoves: number,
  named?: RunNamed,
): BreakerTrip | null {
  const within = formatPlanDuration(b.withinMs);
  // The commands as the run was named, so that what is pasted steers this run (../../shared/control-command.ts).
  const look = `each with GitLab's error message under "Failed moves" in ${commandOn('status', named)}, then ${commandOn('control', named)} --unpause`;
  if (!('rate' in b)) {
    if (failures < b.failures) return null;
    return {
      failures,
      ended: endedMoves,
      reason: `paused by the failure breaker: ${failures} moves failed within ${within} (retry.pause_after); ${look}`,
    };
  }
  if (endedMoves < b.minMoves || failures === 0 || failures / endedMoves < b.rate) return null;
  return {
    failures,
    ended: endedMoves,
    reason:
      `paused by the failure breaker: ${failures} moves failed within ${within} (${formatRate(failures / endedMoves)} of ${endedMoves} ended, ` +
      `the breaker's rate is ${formatRate(b.rate)}; retry.pause_after); ${look}`,
  };
}

/** Counts one ended move; trips the breaker when a failed one reaches the threshold in force within its window. */
export function noteEndedMove(deps: ActorDeps<DrainStore>, failed: boolean): void {
  if (deps.dryRun) return;
  const breaker = breakerInForce(deps);
  if (!breaker) return;
  // Both forms keep every ended move, so that a breaker changed live from a count to a rate judges a
  // window that holds the successes too.
  const now = deps.clock.now();
  let recent = ended.get(deps);
  if (!recent) ended.set(deps, (recent = []));
  // Oldest first: what left the window is at the front.
  while (recent.length > 0 && recent[0]!.at <= now - breaker.withinMs) recent.shift();
  recent.push({ at: now, failed });
  // Judged at every ended move: a rate reached only once `minMoves` ended trips then, success or not.
  const failures = recent.reduce((n, e) => n + (e.failed ? 1 : 0), 0);
  const trip = judgeBreaker(breaker, failures, recent.length, deps.named);
  if (!trip) return;
  ended.set(deps, []);
  if (deps.store.readControl().paused) return;
  deps.store.batch(() => {
    deps.store.writeControl({ paused: true, pausedBy: trip.reason }, now);
    deps.store.appendEvent(
      'breaker.tripped',
      {
        failures: trip.failures,
        withinMs: breaker.withinMs,
        reason: trip.reason,
        ...('rate' in breaker ? { ended: trip.ended, rate: breaker.rate } : {}),
      },
      now,
    );
  });
  deps.log.error(
    { failures: trip.failures, ended: trip.ended, withinMs: breaker.withinMs },
    'failure breaker tripped: run paused',
  );
}

/** Counts one failed move (the count form's only input). */
export function noteFailedMove(deps: ActorDeps<DrainStore>): void {
  noteEndedMove(deps, true);
}
