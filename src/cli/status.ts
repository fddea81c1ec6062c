/**
 * `shardmove status PLAN [--state FILE] [--json]`: progress from the checkpoint, also while a run
 * is going. Exit 0 when a checkpoint was read (whatever the run's state); 1 when there is none.
 * The plan is only needed for its name: with --state it is not read at all, and a plan whose
 * ${VAR}s are not set in this shell still names its checkpoint.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import { loadPlan } from '../plan/load.js';
import { renderStatus } from '../report/status.js';
import { readStatus, statusCheckpointPath } from '../runtime/status.js';
import type { CommandContext } from './context.js';
import { EXIT } from './context.js';

async function planName(file: string, ctx: CommandContext): Promise<string> {
  try {
    // Status needs no credentials: their ${VAR}s and files are not read.
    return (await loadPlan(file, { env: ctx.env, cwd: ctx.cwd, resolveSecrets: false })).plan.name;
  } catch (err) {
    // Other ${VAR}s (the URL) may be unset in this shell: fall back to the plan's `name` field.
    try {
      const doc = parse(readFileSync(resolve(ctx.cwd, file), 'utf8')) as { name?: unknown } | null;
      if (typeof doc?.name === 'string' && doc.name.trim() !== '') return doc.name;
    } catch {
      // The original error says more.
    }
    throw err;
  }
}

export async function runStatusCommand(opts: { plan: string; state?: string; json: boolean }, ctx: CommandContext): Promise<number> {
  const file = opts.state ? resolve(ctx.cwd, opts.state) : statusCheckpointPath(await planName(opts.plan, ctx), undefined, ctx.cwd);
  let report;
  try {
    report = readStatus(file, Date.now());
  } catch (err) {
    if ((err as { code?: unknown }).code === 'SHARDMOVE_NO_CHECKPOINT') {
      if (opts.json) ctx.stdout.write(`${JSON.stringify({ checkpoint: file, state: 'no checkpoint' })}\n`);
      ctx.stderr.write(`shardmove status: ${(err as Error).message}\n`);
      return EXIT.failed;
    }
    throw err;
  }
  ctx.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : renderStatus(report));
  return EXIT.ok;
}
