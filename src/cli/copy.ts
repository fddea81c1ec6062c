/**
 * `shardmove copy PLAN [--state FILE] [--dry-run] [--wipe-target [--wipe-any-target]] [--hosts-differ]`:
 * copies a storage directory to a new environment with the plan's method (docs/copy.md:
 * Copying to a new environment). Exit codes as for `run`: 0 copied and verified (or the dry run finished), 1 failed
 * (a command failed, or the verification found differences), 2 invalid plan or arguments, 4 refused
 * by a guardrail, a lock or a plan change, 130 interrupted with the checkpoint saved.
 */
import { formatDifference } from '../copy/verify.js';
import { formatBytes } from '../report/summary.js';
import type { CopyOutcome } from '../copy/run.js';
import { executeCopy } from '../copy/run.js';
import type { CommandContext, ExitCode } from './context.js';
import { EXIT, processOf } from './context.js';
import { ArgsError } from './errors.js';

/** At most this many differences are listed; the count says how many there are. */
const MAX_LISTED = 50;

export async function runCopyCommand(
  opts: {
    plan: string;
    state?: string;
    dryRun: boolean;
    wipeTarget: boolean;
    wipeAnyTarget: boolean;
    hostsDiffer: boolean;
  },
  ctx: CommandContext,
): Promise<number> {
  if (opts.wipeAnyTarget && !opts.wipeTarget)
    throw new ArgsError('copy: --wipe-any-target only widens --wipe-target; pass both');
  const outcome = await executeCopy({
    planFile: opts.plan,
    statePath: opts.state,
    dryRun: opts.dryRun,
    wipeTarget: opts.wipeTarget,
    wipeAnyTarget: opts.wipeAnyTarget,
    hostsDiffer: opts.hostsDiffer,
    ...processOf(ctx),
  });
  return reportCopyOutcome(outcome, ctx);
}

export function reportCopyOutcome(outcome: CopyOutcome, out: Pick<CommandContext, 'stdout' | 'stderr'>): ExitCode {
  if (outcome.kind === 'interrupted') {
    out.stderr.write(
      `interrupted; the checkpoint ${outcome.checkpoint} is saved. Run copy again to continue (a tar copy needs --wipe-target)\n`,
    );
    return EXIT.interrupted;
  }
  if (outcome.kind === 'dry-run') {
    out.stdout.write('dry run finished: nothing was written\n');
    return EXIT.ok;
  }
  const { plan, verify, failed } = outcome;
  const lines = [
    `copy ${plan.name} (${plan.copy.method}) from ${plan.copy.source.path} to ${plan.copy.target.host ? `${plan.copy.target.host}:` : ''}${plan.copy.target.path}`,
    `  ${outcome.repos} repositories, ${formatBytes(outcome.bytes)}`,
    ...failed.map((f) => `  failed: ${f.rel}: ${f.error ?? 'unknown error'}`),
    `verification: ${verify.checked} repositories checked, ${verify.differences.length === 0 ? 'no differences' : `${verify.differences.length} differences`}`,
    ...verify.differences.slice(0, MAX_LISTED).map((d) => `  ${formatDifference(d)}`),
    ...(verify.differences.length > MAX_LISTED ? [`  ... and ${verify.differences.length - MAX_LISTED} more`] : []),
  ];
  out.stdout.write(`${lines.join('\n')}\n`);
  return verify.differences.length === 0 && failed.length === 0 ? EXIT.ok : EXIT.failed;
}
