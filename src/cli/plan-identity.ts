/**
 * What `status` and `control` need of a plan: its name (which names the checkpoint) and, when the
 * plan loads, its concurrency. Neither needs credentials, so secrets are not resolved, and a plan
 * whose other ${VAR}s are not set in this shell still names its checkpoint.
 */
import { resolve } from 'node:path';
import { loadPlan, readPlanName } from '../plan/load.js';
import { statusCheckpointPath } from '../runtime/status.js';
import type { CommandContext } from './context.js';

export interface PlanIdentity {
  name: string;
  /** `move.concurrency`; null when the plan could only be read for its name. */
  concurrency: number | null;
}

export async function readPlanIdentity(file: string, ctx: CommandContext): Promise<PlanIdentity> {
  try {
    const { plan } = await loadPlan(file, { env: ctx.env, cwd: ctx.cwd, resolveSecrets: false });
    return { name: plan.name, concurrency: plan.move.concurrency };
  } catch (err) {
    // Other ${VAR}s (the URL) may be unset in this shell: fall back to the plan's `name` field,
    // read within the loader's limits (issue 19). Without one, the original error says more.
    const name = await readPlanName(file, ctx.cwd);
    if (name !== undefined) return { name, concurrency: null };
    throw err;
  }
}

/**
 * The checkpoint a command about a running plan looks at: `--state FILE` as given (the plan is then
 * not read at all), else the plan's real-run checkpoint. Also the plan's concurrency when known.
 */
export async function resolveRunCheckpoint(
  opts: { plan: string; state?: string },
  ctx: CommandContext,
): Promise<{ file: string; planConcurrency: number | null }> {
  if (opts.state) return { file: resolve(ctx.cwd, opts.state), planConcurrency: null };
  const plan = await readPlanIdentity(opts.plan, ctx);
  return { file: statusCheckpointPath(plan.name, undefined, ctx.cwd), planConcurrency: plan.concurrency };
}
