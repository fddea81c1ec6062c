/**
 * `shardmove status PLAN [--state FILE] [--dry-run] [--json [--items]]`: progress from the checkpoint, also
 * while a run is going; the dry run's checkpoint with `--dry-run`, or while the plan has no real run yet. Exit 0 when a checkpoint was read (whatever the run's state); 1 when there is none.
 * The plan is only needed for its name: with --state it is not read at all, and a plan whose
 * ${VAR}s are not set in this shell still names its checkpoint.
 */
import { renderStatus } from '../report/status.js';
import { NO_CHECKPOINT } from '../runtime/errors.js';
import { readItems } from '../runtime/lists/items-list.js';
import { readStatus } from '../runtime/status.js';
import type { CommandContext } from './context.js';
import { EXIT } from './context.js';
import { ArgsError } from './errors.js';
import { copyStatusFor, isCopyStatus } from './copy-status.js';
import { readPlanGiven } from './plan-given.js';
import { readPlanIdentity, resolveRunCheckpoint } from './plan-identity.js';
import { existsSync } from 'node:fs';
import { checkpointPlaceOf } from '../runtime/paths.js';
import { systemClock } from '../shared/clock.js';
import { watchIntervalOf, watchStatus } from './status-watch.js';
import { promptStreamOf } from './terminal.js';

/**
 * The checkpoint `status` reads: `--state`, else the plan's real run's, else (`--dry-run`, or no
 * real run yet while its dry run's checkpoint is there) the dry run's, `state/<name>.dry-run.db`
 * beside the plan, said on stderr so that nobody takes a rehearsal for the run.
 */
export async function statusCheckpoint(
  opts: { plan: string; state?: string; dryRun?: boolean },
  ctx: CommandContext,
  say: (line: string) => void = (line) => ctx.stderr.write(line),
): Promise<string> {
  const { file } = await resolveRunCheckpoint(opts, ctx);
  if (opts.state) return file;
  if (!opts.dryRun && existsSync(file)) return file;
  const plan = await readPlanIdentity(opts.plan, ctx);
  const dry = checkpointPlaceOf(plan, { planFile: opts.plan, cwd: ctx.cwd }, 'dry-run').file;
  if (opts.dryRun) return dry;
  if (!existsSync(dry)) return file;
  say(`note: this plan has not run yet (no ${file}); showing its dry run's checkpoint, ${dry}\n`);
  return dry;
}

type StatusOpts = {
  plan: string;
  state?: string;
  json: boolean;
  items?: boolean;
  dryRun?: boolean;
  watch?: boolean;
  interval?: string;
};

export async function runStatusCommand(opts: StatusOpts, ctx: CommandContext): Promise<number> {
  if (opts.items && !opts.json) throw new ArgsError('status: --items lists every item in the JSON output: add --json');
  const intervalMs = watchIntervalOf(opts);
  if (opts.watch) {
    // One look as `status` itself; a copy plan's status is not watched (yet): said, not guessed.
    if (await isCopyStatus(opts, ctx))
      throw new ArgsError('status: --watch follows a move run; a copy plan has no --watch yet (run status again)');
    // The note that the dry run's checkpoint is shown is said once, not at every look.
    const said = new Set<string>();
    const sayOnce = (line: string): void => {
      if (!said.has(line)) ctx.stderr.write(line);
      said.add(line);
    };
    return watchStatus(() => lookOnce(opts, ctx, true, sayOnce), {
      intervalMs,
      json: opts.json,
      signal: ctx.signal,
      stdout: ctx.stdout,
      stderr: ctx.stderr,
      raw: promptStreamOf,
      clock: ctx.clock ?? systemClock,
    });
  }
  // A copy plan (`shardmove copy`; or a copy checkpoint given with --state) has its own status.
  const copy = await copyStatusFor(opts, ctx);
  if (copy !== undefined) return copy;
  const got = await lookOnce(opts, ctx, false);
  if ('missing' in got) {
    if (opts.json) ctx.stdout.write(got.text);
    ctx.stderr.write(`shardmove status: ${got.message}\n`);
    return EXIT.failed;
  }
  ctx.stdout.write(got.text);
  return EXIT.ok;
}

/** One look at the checkpoint: the status as printed (one JSON line when `oneLine`), or none yet. */
async function lookOnce(
  opts: StatusOpts,
  ctx: CommandContext,
  oneLine: boolean,
  say?: (line: string) => void,
): Promise<{ text: string } | { missing: string; message: string; text: string }> {
  const file = await statusCheckpoint(opts, ctx, say);
  let report;
  try {
    report = readStatus(file, (ctx.clock ?? systemClock).now(), await readPlanGiven(opts.plan, ctx), {
      networkMembers: opts.items === true,
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === NO_CHECKPOINT) {
      const message = (err as Error).message;
      const text = opts.json
        ? `${JSON.stringify({ checkpoint: file, state: 'no checkpoint' })}\n`
        : `no checkpoint yet: ${file}\nwaiting for a run to make it (Ctrl-C to stop watching)\n`;
      return { missing: file, message, text };
    }
    throw err;
  }
  // Every item only when asked: the default output stays small at a million items.
  const out = opts.items ? { ...report, items: readItems(file) } : report;
  return {
    text: opts.json
      ? `${oneLine ? JSON.stringify(out) : JSON.stringify(out, null, 2)}\n`
      : renderStatus(report, { planFile: opts.plan, statePath: opts.state }),
  };
}
