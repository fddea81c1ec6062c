/**
 * `shardmove status PLAN [--state FILE] [--json [--items]]`: progress from the checkpoint, also while a run
 * is going. Exit 0 when a checkpoint was read (whatever the run's state); 1 when there is none.
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
import { resolveRunCheckpoint } from './plan-identity.js';

export async function runStatusCommand(
  opts: { plan: string; state?: string; json: boolean; items?: boolean },
  ctx: CommandContext,
): Promise<number> {
  if (opts.items && !opts.json) throw new ArgsError('status: --items lists every item in the JSON output: add --json');
  // A copy plan (`shardmove copy`; or a copy checkpoint given with --state) has its own status.
  const copy = await copyStatusFor(opts, ctx);
  if (copy !== undefined) return copy;
  const { file } = await resolveRunCheckpoint(opts, ctx);
  let report;
  try {
    report = readStatus(file, Date.now(), await readPlanGiven(opts.plan, ctx));
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
