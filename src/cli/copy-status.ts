/**
 * What `validate` and `status` do with a copy plan (`shardmove copy`), kept apart from their move-plan code:
 * the summary of a valid copy plan, and the copy checkpoint's status.
 */
import { copyCheckpointPath } from '../copy/run.js';
import { readCopyStatus, renderCopyStatus } from '../copy/status.js';
import { isCopyPlanFile, loadCopyPlan } from '../plan/copy-load.js';
import { formatProblem } from '../plan/errors.js';
import { isCopyCheckpointFile } from '../store/copy-checkpoint.js';
import { resolve } from 'node:path';
import type { CommandContext } from './context.js';
import { EXIT } from './context.js';

/** `validate` of a copy plan: "plan OK", what it copies where, and any warnings. */
export async function validateCopyPlan(file: string, ctx: CommandContext): Promise<number> {
  const { plan, warnings } = await loadCopyPlan(file, { env: ctx.env, cwd: ctx.cwd });
  const { method, source, target } = plan.copy;
  const where = `${target.host ? `${target.host}:` : ''}${target.path}${target.clustered ? ' (clustered)' : ''}`;
  ctx.stdout.write(
    [
      `plan OK: ${plan.name}`,
      `  copies ${source.path} to ${where} with ${method}`,
      ...warnings.map(formatProblem),
    ].join('\n') + '\n',
  );
  return EXIT.ok;
}

/**
 * `status` of a copy: when the plan is a copy plan or --state names a copy checkpoint. Undefined
 * when neither, so `status` goes on with a move plan.
 */
/** Whether `status` would read a copy checkpoint for these options (a copy plan, or --state naming one). */
export async function isCopyStatus(opts: { plan: string; state?: string }, ctx: CommandContext): Promise<boolean> {
  if (opts.state && isCopyCheckpointFile(resolve(ctx.cwd, opts.state))) return true;
  return isCopyPlanFile(opts.plan, ctx.cwd);
}

export async function copyStatusFor(
  opts: { plan: string; state?: string; json: boolean },
  ctx: CommandContext,
): Promise<number | undefined> {
  let file: string;
  if (opts.state) {
    file = resolve(ctx.cwd, opts.state);
    if (!isCopyCheckpointFile(file) && !(await isCopyPlanFile(opts.plan, ctx.cwd))) return undefined;
  } else {
    if (!(await isCopyPlanFile(opts.plan, ctx.cwd))) return undefined;
    const { plan } = await loadCopyPlan(opts.plan, { env: ctx.env, cwd: ctx.cwd });
    file = copyCheckpointPath(opts.plan, plan.name, undefined, ctx.cwd);
  }
  const status = readCopyStatus(file);
  if (!status) {
    if (opts.json) ctx.stdout.write(`${JSON.stringify({ checkpoint: file, state: 'no checkpoint' })}\n`);
    ctx.stderr.write(`shardmove status: no copy checkpoint at ${file}\n`);
    return EXIT.failed;
  }
  ctx.stdout.write(opts.json ? `${JSON.stringify(status, null, 2)}\n` : renderCopyStatus(status));
  return EXIT.ok;
}
