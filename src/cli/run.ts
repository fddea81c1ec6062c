/**
 * `shardmove run PLAN [--state FILE] [--dry-run] [--accept-plan-change] [--retry-quarantined]`: runs
 * or resumes the plan.
 * Exit codes: 0 done and verified, 1 failed, 2 invalid plan, 3 done with quarantined items,
 * 4 refused (lock held, plan changed), 130 interrupted with the checkpoint saved.
 */
import { executeRun } from '../runtime/run.js';
import type { CommandContext } from './context.js';
import { ArgsError } from './errors.js';

export async function runRunCommand(
  opts: { plan: string; state?: string; dryRun: boolean; acceptPlanChange: boolean; retryQuarantined: boolean },
  ctx: CommandContext,
): Promise<number> {
  if (opts.retryQuarantined && opts.dryRun) {
    throw new ArgsError('run: --retry-quarantined changes the checkpoint; a --dry-run never does. Give one of them');
  }
  return executeRun({
    planFile: opts.plan,
    statePath: opts.state,
    dryRun: opts.dryRun,
    acceptPlanChange: opts.acceptPlanChange,
    retryQuarantined: opts.retryQuarantined,
    env: ctx.env,
    cwd: ctx.cwd,
    signal: ctx.signal,
    stdout: ctx.stdout,
    stderr: ctx.stderr,
  });
}
