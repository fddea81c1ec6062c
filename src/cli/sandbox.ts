/**
 * `shardmove sandbox`: runs the reference service until SIGINT/SIGTERM. Prints exactly one JSON
 * line to stdout when ready (and, with `--url-file`, writes its URL to that file); logs (pino) go to
 * stderr.
 */
import { readFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { outputTargetOf, writeFileAtomic } from '../files/atomic.js';
import pino from 'pino';
import { parseMoveFailures, startSandbox } from '../sandbox/index.js';
import { parseDuration } from '../time/durations.js';
import type { MoveFailures } from '../sandbox/index.js';
import type { CommandContext } from './context.js';
import { EXIT, clockOf } from './context.js';
import { ArgsError } from './errors.js';
import { checkOutputPath, checkpointFiles, refuseOutputsThatAreInputs } from './outputs.js';

export interface SandboxCommandOptions {
  host: string;
  port: number;
  /** Once ready, the URL is written there (one line), so a command in another shell can read it; removed at the end. */
  urlFile?: string;
  seed?: string;
  db?: string;
  /** `16.5` or `16.5.1`: overrides the seed's `instance.version`. */
  gitlabVersion?: string;
  workers: number;
  speed: number;
  moveDuration?: number;
  latency: number;
  errorRate: number;
  resetRate: number;
  rateLimit?: number;
  moveFailRate: number;
  /** `checksum=0.05,no-space=0.01`: shares of moves failing by class (the sandbox parses it). */
  moveFailures?: string;
  brokenItems?: string;
  stuckRate: number;
  interruptRate: number;
  moveFailAfterSwitchRate: number;
  moveFailAfterCopyRate: number;
  /** `75s`, `500ms`, `0`: the bulk job's wait in Sidekiq's queue (the sandbox's default when unset). */
  bulkDelay?: string;
  faultSeed: number;
}

/** The longest `--bulk-delay`: a day (the sandbox refuses more). */
const MAX_BULK_DELAY_MS = 86_400_000;

/** `--bulk-delay`'s milliseconds: a duration as plans write them, or a bare 0. */
function bulkDelayMs(raw: string): number {
  if (raw.trim() === '0') return 0;
  const d = parseDuration(raw);
  if (!d.ok) throw new ArgsError(`sandbox --bulk-delay: "${raw}": ${d.reason}`);
  if (d.ms > MAX_BULK_DELAY_MS) throw new ArgsError(`sandbox --bulk-delay: "${raw}" is more than a day`);
  return d.ms;
}

/**
 * The flags that each make a share of moves end badly, checked together in their own terms: the
 * shares are drawn from one roll per move, so together they cannot exceed every move.
 */
function checkFailShares(opts: SandboxCommandOptions, moveFailures: MoveFailures | undefined): void {
  const classes = Object.values(moveFailures ?? {}).reduce((a, v) => a + v, 0);
  const shares: [string, number][] = [
    ['--move-fail-rate', opts.moveFailRate],
    ['--stuck-rate', opts.stuckRate],
    ['--interrupt-rate', opts.interruptRate],
    ['--move-fail-after-switch-rate', opts.moveFailAfterSwitchRate],
    ['--move-fail-after-copy-rate', opts.moveFailAfterCopyRate],
    ['--move-failures', classes],
  ];
  const total = shares.reduce((a, [, v]) => a + v, 0);
  if (total <= 1 + 1e-9) return;
  const given = shares.filter(([, v]) => v > 0).map(([flag, v]) => `${flag} ${Math.round(v * 1e6) / 1e6}`);
  throw new ArgsError(
    `${given.join(' + ')} make ${Math.round(total * 1e6) / 1e6} of the moves fail; together they must not exceed 1`,
  );
}

/**
 * `--db FILE` is written in place (SQLite, with its -wal and -shm files beside it): only regular files,
 * never through a symlink or into a device or FIFO planted at one of those names (src/files/atomic.ts).
 */
function checkDbPath(db: string, ctx: CommandContext): void {
  const file = resolve(ctx.cwd, db);
  for (const name of [file, `${file}-wal`, `${file}-shm`]) {
    const at = outputTargetOf(name);
    if (at.kind === 'other')
      throw new ArgsError(
        `sandbox --db ${db}: ${name} is ${at.what}; the sandbox writes its database only to regular files`,
      );
  }
}

export async function runSandboxCommand(opts: SandboxCommandOptions, ctx: CommandContext): Promise<number> {
  if (opts.gitlabVersion !== undefined && !/^\d{1,3}\.\d{1,3}(\.\d{1,3})?$/.test(opts.gitlabVersion))
    throw new ArgsError(
      `sandbox --gitlab-version: "${opts.gitlabVersion}" is not a release; write it as 16.5 or 16.5.1`,
    );
  // Every flag checked before anything starts (exit 2).
  const moveFailures = opts.moveFailures ? parseMoveFailures(opts.moveFailures) : undefined;
  checkFailShares(opts, moveFailures);
  const bulkDelay = opts.bulkDelay !== undefined ? bulkDelayMs(opts.bulkDelay) : undefined;
  if (opts.db !== undefined) checkDbPath(opts.db, ctx);
  // Only ever a regular file (src/cli/outputs.ts), checked before anything starts; a seed is never replaced.
  const urlFile = opts.urlFile === undefined ? undefined : checkOutputPath('sandbox', '--url-file', opts.urlFile, ctx);
  // Never over what the sandbox reads or keeps: its seed, its database and the files SQLite keeps beside it.
  if (urlFile !== undefined)
    refuseOutputsThatAreInputs(
      'sandbox',
      [[urlFile, `--url-file ${urlFile}`]],
      [
        ...(opts.seed !== undefined ? [[resolve(ctx.cwd, opts.seed), `the seed ${opts.seed}`] as const] : []),
        ...(opts.db !== undefined ? checkpointFiles(resolve(ctx.cwd, opts.db)) : []),
      ],
    );
  const logger = pino({ level: ctx.env.LOG_LEVEL ?? 'info' }, pino.destination(2));
  const sandbox = await startSandbox({
    host: opts.host,
    port: opts.port,
    ...(opts.seed ? { seed: resolve(ctx.cwd, opts.seed) } : {}),
    ...(opts.db ? { db: resolve(ctx.cwd, opts.db) } : {}),
    // GitLab's versions have three parts: 16.5 is 16.5.0.
    ...(opts.gitlabVersion !== undefined
      ? { version: opts.gitlabVersion.split('.').length === 2 ? `${opts.gitlabVersion}.0` : opts.gitlabVersion }
      : {}),
    workers: opts.workers,
    speed: opts.speed,
    ...(opts.moveDuration !== undefined ? { moveDurationMs: opts.moveDuration } : {}),
    faults: {
      latencyMs: opts.latency,
      errorRate: opts.errorRate,
      resetRate: opts.resetRate,
      ...(opts.rateLimit !== undefined ? { rateLimit: opts.rateLimit } : {}),
      moveFailRate: opts.moveFailRate,
      ...(moveFailures ? { moveFailures } : {}),
      // `project:1,snippet:2` as typed: the sandbox's parseBrokenItems splits and checks it, and a
      // bad entry is a FaultOptionsError (exit 2) before anything starts.
      brokenItems: opts.brokenItems ? [opts.brokenItems] : [],
      stuckRate: opts.stuckRate,
      interruptRate: opts.interruptRate,
      failAfterSwitchRate: opts.moveFailAfterSwitchRate,
      failAfterCopyRate: opts.moveFailAfterCopyRate,
      ...(bulkDelay !== undefined ? { bulkDelayMs: bulkDelay } : {}),
      seed: opts.faultSeed,
    },
    logger,
    // The command's clock (the system's in the executable, a test's simulated one in process).
    clock: clockOf(ctx),
  });
  if (urlFile !== undefined) {
    try {
      writeFileAtomic(urlFile, `${sandbox.url}\n`, { mode: 0o644 });
    } catch (err) {
      await sandbox.close();
      throw new ArgsError(`sandbox: --url-file ${urlFile}: cannot write: ${(err as Error).message}`);
    }
  }
  ctx.stdout.write(`${JSON.stringify({ event: 'ready', url: sandbox.url })}\n`);
  // Fault counters live in memory: log them when they change, so a harness that kills the process
  // (torture) still learns what was injected, give or take the last second.
  let lastCounts = '{}';
  const logCounts = () => {
    const counts = sandbox.state.faults.counts();
    const key = JSON.stringify(counts);
    if (key !== lastCounts) logger.info({ faults: counts }, 'fault counts');
    lastCounts = key;
  };
  const clock = sandbox.state.clock;
  const countsTimer = clock.setInterval(logCounts, 1000);
  countsTimer.unref();
  await new Promise<void>((done) => {
    if (ctx.signal.aborted) done();
    else ctx.signal.addEventListener('abort', () => done(), { once: true });
  });
  clock.clearInterval(countsTimer);
  logCounts();
  logger.info('sandbox stopping');
  // The URL of a sandbox that no longer listens would send a rehearsal to whatever listens there next.
  if (urlFile !== undefined && readIfAny(urlFile) === `${sandbox.url}\n`) rmSync(urlFile, { force: true });
  await sandbox.close();
  logger.flush();
  return EXIT.ok;
}

/** A file's text, or null when it cannot be read (gone, replaced by a directory). */
function readIfAny(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}
