/**
 * The plan named on the command line of `status` and `control`, read for its name and
 * `move.concurrency` also when `--state` names the checkpoint (a revert's, a copy kept elsewhere):
 * the checkpoint does not keep the plan's cap, and "the plan's" is no number to act on. Null when the
 * plan cannot be read; the runtime then looks for the cap the run recorded.
 */
import type { CommandContext } from './context.js';
import { readPlanIdentity } from './plan-identity.js';
import type { PlanIdentity } from './plan-identity.js';

export async function readPlanGiven(file: string, ctx: CommandContext): Promise<PlanIdentity | null> {
  try {
    return await readPlanIdentity(file, ctx);
  } catch {
    return null;
  }
}
