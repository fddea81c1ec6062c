/**
 * `shardmove demo` (`npm start`): the whole mission on the embedded sandbox. Starts the reference
 * service in-process with its default seed and seeded move failures (about one move in ten fails
 * and is retried; with this fault seed none fails three times, so none ends quarantined), runs
 * plans/demo.yaml through the same runtime as `run`, shows live progress and the verified result.
 * The sandbox's address and admin token reach the plan through the env object handed to the
 * runtime, never through process arguments.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { executeRun } from '../runtime/run.js';
import { countEvents } from '../runtime/status.js';
import { startSandbox } from '../sandbox/index.js';
import { loadSeed } from '../sandbox/seed.js';
import type { Seed } from '../sandbox/seed-schema.js';
import type { CommandContext } from './context.js';
import { ArgsError } from './errors.js';
import { createProgress } from './progress.js';
import { reportOutcome } from './run.js';

/** The built-in seed's admin token with the `api` scope (a sandbox-only value). */
const SANDBOX_ADMIN_TOKEN = 'glpat-sandbox-root-api-sudo-0001';
/** Chosen so some moves fail and are retried, and none fails all three attempts. */
export const DEMO_FAULTS = { moveFailRate: 0.1, seed: 7 } as const;
/** Every move takes this long: 360 items at 10 in flight finish in well under a minute. */
const DEMO_MOVE_MS = 80;

/**
 * The demo's own temporary directory (checkpoint and log), removed when the demo ends: on return, on
 * Ctrl-C (the run ends interrupted and `finally` runs), and on a second Ctrl-C, which exits the process at
 * once (the synchronous 'exit' listener still runs then). Only SIGKILL leaves it behind.
 */
function demoTempDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-demo-'));
  const remove = () => {
    process.removeListener('exit', remove);
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', remove);
  return { dir, remove };
}

export async function runDemoCommand(opts: { state?: string; edition?: string }, ctx: CommandContext): Promise<number> {
  const edition = opts.edition ?? 'ee';
  if (edition !== 'ee' && edition !== 'ce')
    throw new ArgsError(`demo --edition: "${edition}" is not an edition; use ee or ce`);
  const planFile = fileURLToPath(new URL('../../plans/demo.yaml', import.meta.url));
  const statePath = opts.state ? resolve(ctx.cwd, opts.state) : undefined;
  // The embedded sandbox starts from its seed every time: an old checkpoint would describe another world.
  if (statePath && existsSync(statePath)) {
    throw new ArgsError(
      `demo --state: ${statePath} already exists; the demo's sandbox starts fresh, so give a new file`,
    );
  }
  const temp = statePath ? null : demoTempDir();
  try {
    return await demo(planFile, statePath ?? join(temp!.dir, 'demo.db'), temp !== null, edition, ctx);
  } finally {
    temp?.remove();
  }
}

/** The built-in seed as the Community Edition: no ee/ code, so no licence tier above Free. */
function communitySeed(): Seed {
  const seed = loadSeed();
  return { ...seed, instance: { ...seed.instance, edition: 'ce', tier: 'free' } };
}

async function demo(
  planFile: string,
  statePath: string,
  temporary: boolean,
  edition: 'ee' | 'ce',
  ctx: CommandContext,
): Promise<number> {
  const seed = edition === 'ce' ? communitySeed() : undefined;
  // The clock of the command's context (a test's simulated one) drives the sandbox and the run alike.
  const clock = ctx.clock ? { clock: ctx.clock } : {};
  const sandbox = await startSandbox({
    ...clock,
    workers: 20,
    moveDurationMs: DEMO_MOVE_MS,
    faults: { ...DEMO_FAULTS },
    ...(seed ? { seed } : {}),
  });
  try {
    const what = edition === 'ce' ? 'built-in seed as the Community Edition' : 'built-in seed';
    ctx.stdout.write(
      // A line a terminal of 80 columns holds, each: where things are, then what they are.
      `shardmove demo: sandbox running at ${sandbox.url}\n` +
        `  (${what}; ${Math.round(DEMO_FAULTS.moveFailRate * 100)}% of moves fail and are retried)\n` +
        `plan: ${planFile}\ncheckpoint: ${statePath}\n` +
        (temporary ? '  (temporary, removed when the demo ends; keep one with --state FILE)\n' : '') +
        '\n',
    );
    const outcome = await executeRun(
      {
        planFile,
        statePath,
        dryRun: false,
        acceptPlanChange: false,
        env: { ...ctx.env, SHARDMOVE_URL: sandbox.url, SHARDMOVE_TOKEN: SANDBOX_ADMIN_TOKEN },
        cwd: ctx.cwd,
        signal: ctx.signal,
        stdout: ctx.stdout,
        stderr: ctx.stderr,
        observers: [createProgress(ctx)],
      },
      // The demo's sandbox lives in this process, on a port of its own: no other drain can meet it,
      // and nothing of the demo is left in the registry of drains (or the temporary directory).
      { claimDrain: () => ({ release: () => undefined }), ...clock },
    );
    // The demo's checkpoint is removed when it ends: its report names no command that would need it.
    if (temporary && outcome.kind === 'final') outcome.report.checkpointTemporary = true;
    const code = reportOutcome(outcome, ctx);
    if (code === 0 || code === 3)
      ctx.stdout.write(`\nDemo: ${countEvents(statePath, 'item.retry')} failed moves were retried along the way.\n`);
    if (code === 130 && temporary)
      ctx.stderr.write('demo: its temporary checkpoint is removed; the next demo starts fresh\n');
    return code;
  } finally {
    await sandbox.close();
  }
}
