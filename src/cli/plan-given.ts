/**
 * The plan named on the command line of `status` and `control`, read for what the checkpoint does
 * not keep: its `move.concurrency` ("the plan's" is no number to act on) and its schedule's time
 * zone (a window's time reads as on the progress line). Read also when `--state` names the
 * checkpoint (a revert's is named that way). Null fields when the plan loads only far enough for its
 * name (variables unset in this shell), null when not even that; the runtime then looks for the cap
 * the run recorded.
 */
import { loadPlan } from '../plan/load.js';
import type { PlanGiven } from '../runtime/status.js';
import type { CommandContext } from './context.js';
import { readPlanIdentity } from './plan-identity.js';
import { fixedConcurrency } from '../plan/concurrency-field.js';

export async function readPlanGiven(file: string, ctx: CommandContext): Promise<PlanGiven | null> {
  try {
    const { plan } = await loadPlan(file, { env: ctx.env, cwd: ctx.cwd, resolveSecrets: false });
    return {
      name: plan.name,
      concurrency: fixedConcurrency(plan.move.concurrency),
      auto: fixedConcurrency(plan.move.concurrency) === null,
      timezone: plan.schedule?.timezone ?? 'UTC',
    };
  } catch {
    try {
      const { name } = await readPlanIdentity(file, ctx);
      return { name, concurrency: null, timezone: null };
    } catch {
      return null;
    }
  }
}
