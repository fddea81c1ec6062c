/**
 * The failure breaker (`retry.pause_after`): when N moves fail within a window, the run
 * pauses exactly as `shardmove control --pause` does (moves in flight are still followed, nothing
 * new starts) until an operator unpauses it. GitLab.com's rebalance script stops after
 * `--max-failures`; a paused run keeps its checkpoint and goes on with `control --unpause`.
 */
import { formatPlanDuration } from '../../plan/durations.js';
import type { ActorDeps } from '../types.js';
import { commandOn } from '../../shared/control-command.js';

/** When the failed moves of each run process happened (ms), oldest first. */
const failures = new WeakMap<ActorDeps, number[]>();

/** Counts one failed move; trips the breaker when the plan's threshold is reached within its window. */
export function noteFailedMove(deps: ActorDeps): void {
  const breaker = deps.plan.retry.pauseAfter;
  if (!breaker || deps.dryRun) return;
  const now = deps.clock.now();
  const recent = (failures.get(deps) ?? []).filter((t) => t > now - breaker.withinMs);
  recent.push(now);
  failures.set(deps, recent);
  if (recent.length < breaker.failures) return;
  failures.set(deps, []);
  if (deps.store.readControl().paused) return;
  const reason =
    `paused by the failure breaker: ${recent.length} moves failed within ${formatPlanDuration(breaker.withinMs)} ` +
    `(retry.pause_after); each with GitLab's error message under "Failed moves" in ${commandOn('status', deps.named)}, then ${commandOn('control', deps.named)} --unpause`;
  deps.store.batch(() => {
    deps.store.writeControl({ paused: true, pausedBy: reason }, now);
    deps.store.appendEvent('breaker.tripped', { failures: recent.length, withinMs: breaker.withinMs, reason }, now);
  });
  deps.log.error({ failures: recent.length, withinMs: breaker.withinMs }, 'failure breaker tripped: run paused');
}
