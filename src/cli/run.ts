/**
 * `shardmove run PLAN [--state FILE] [--dry-run] [--accept-plan-change] [--retry-quarantined]
 * [--metrics-file PATH]`: runs or resumes the plan, prints the final report and maps the run's
 * outcome to an exit code:
 * 0 done and verified, 1 failed, 2 invalid plan, 3 done with quarantined items,
 * 4 refused (lock held, plan changed), 130 interrupted with the checkpoint saved.
 */
import { resolve } from 'node:path';
import { createMetricsFileObserver } from '../metrics/metrics-file.js';
import { renderFinalReport } from '../report/final.js';
import { executeRun } from '../runtime/run.js';
import type { FinalState, RunOutcome } from '../runtime/types.js';
import type { CommandContext, ExitCode } from './context.js';
import { EXIT } from './context.js';
import { ArgsError } from './errors.js';

/** Exit codes of a run that got as far as the machine (README: Exit codes). */
const EXIT_BY_STATE: Record<FinalState, ExitCode> = { done: EXIT.ok, doneWithQuarantine: EXIT.quarantined, failed: EXIT.failed };

export async function runRunCommand(
  opts: { plan: string; state?: string; dryRun: boolean; acceptPlanChange: boolean; retryQuarantined: boolean; metricsFile?: string },
  ctx: CommandContext,
): Promise<number> {
  if (opts.retryQuarantined && opts.dryRun) {
    throw new ArgsError('run: --retry-quarantined changes the checkpoint; a --dry-run never does. Give one of them');
  }
  const observers = opts.metricsFile
    ? [
        createMetricsFileObserver(resolve(ctx.cwd, opts.metricsFile), {
          onError: (err) => ctx.stderr.write(`warning: --metrics-file: cannot write ${opts.metricsFile}: ${err instanceof Error ? err.message : String(err)} (the run goes on)\n`),
        }),
      ]
    : [];
  const outcome = await executeRun({
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
    observers,
  });
  return reportOutcome(outcome, ctx);
}

/** Prints how the run ended (the final report, or how to continue) and returns its exit code. */
export function reportOutcome(outcome: RunOutcome, out: Pick<CommandContext, 'stdout' | 'stderr'>): ExitCode {
  if (outcome.kind === 'interrupted') {
    out.stderr.write('interrupted; run again to continue\n');
    return EXIT.interrupted;
  }
  out.stdout.write(outcome.redact(renderFinalReport(outcome.report)));
  return EXIT_BY_STATE[outcome.state];
}
