/**
 * `shardmove status PLAN [--state FILE] [--dry-run] [--json [--items]]`: progress from the checkpoint, also
 * while a run is going; the dry run's checkpoint with `--dry-run`, or while the plan has no real run yet. Exit 0 when a checkpoint was read (whatever the run's state); 1 when there is none.
 * The plan is only needed for its name: with --state it is not read at all, and a plan whose
 * ${VAR}s are not set in this shell still names its checkpoint.
 */
import { renderStatus } from '../report/status.js';
import { NO_CHECKPOINT } from '../runtime/errors.js';
import { readItems } from '../runtime/items-list.js';
import { readStatus } from '../runtime/status.js';
import type { CommandContext } from './context.js';
import { EXIT } from './context.js';
import { ArgsError } from './errors.js';
import { copyStatusFor } from './copy-status.js';
import { readPlanGiven } from './plan-given.js';
import { readPlanIdentity, resolveRunCheckpoint } from './plan-identity.js';
import { existsSync } from 'node:fs';
import { locateCheckpoint } from '../runtime/paths.js';

/**
 * The checkpoint `status` reads: `--state`, else the plan's real run's, else (`--dry-run`, or no
 * real run yet while its dry run's checkpoint is there) the dry run's, `state/<name>.dry-run.db`
 * beside the plan, said on stderr so that nobody takes a rehearsal for the run.
 */
async function statusCheckpoint(
  opts: { plan: string; state?: string; dryRun?: boolean },
  ctx: CommandContext,
): Promise<string> {
  const { file } = await resolveRunCheckpoint(opts, ctx);
  if (opts.state) return file;
  if (!opts.dryRun && existsSync(file)) return file;
  const plan = await readPlanIdentity(opts.plan, ctx);
  const dry = locateCheckpoint({
    planFile: opts.plan,
    planName: plan.name,
    planCheckpoint: plan.checkpoint,
    role: 'dry-run',
    cwd: ctx.cwd,
  }).file;
  if (opts.dryRun) return dry;
  if (!existsSync(dry)) return file;
  ctx.stderr.write(`note: this plan has not run yet (no ${file}); showing its dry run's checkpoint, ${dry}\n`);
  return dry;
}

export async function runStatusCommand(
  opts: { plan: string; state?: string; json: boolean; items?: boolean; dryRun?: boolean },
  ctx: CommandContext,
): Promise<number> {
  if (opts.items && !opts.json) throw new ArgsError('status: --items lists every item in the JSON output: add --json');
  // A copy plan (`shardmove copy`; or a copy checkpoint given with --state) has its own status.
  const copy = await copyStatusFor(opts, ctx);
  if (copy !== undefined) return copy;
  const file = await statusCheckpoint(opts, ctx);
  let report;
  try {
    report = readStatus(file, Date.now(), await readPlanGiven(opts.plan, ctx), { networkMembers: opts.items === true });
  } catch (err) {
    if ((err as { code?: unknown }).code === NO_CHECKPOINT) {
      if (opts.json) ctx.stdout.write(`${JSON.stringify({ checkpoint: file, state: 'no checkpoint' })}\n`);
      ctx.stderr.write(`shardmove status: ${(err as Error).message}\n`);
      return EXIT.failed;
    }
    throw err;
  }
  // Every item only when asked: the default output stays small at a million items.
  const out = opts.items ? { ...report, items: readItems(file) } : report;
  ctx.stdout.write(
    opts.json
      ? `${JSON.stringify(out, null, 2)}\n`
      : renderStatus(report, { planFile: opts.plan, statePath: opts.state }),
  );
  return EXIT.ok;
}
