/**
 * Processes the benchmark drives: the sandbox (`bin/shardmove sandbox`, with the request-counting
 * preload), the orchestrator (`bin/shardmove run`, with the checkpoint-counting preload, its peak
 * RSS read from /proc) and the files they read (a generated seed, a plan).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import type { RequestCounts } from './bench-count.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'shardmove');
/**
 * Whether bin/shardmove runs the built tree (dist/, current with src/) or the TypeScript through
 * tsx, by the rule bin/shardmove follows: start-up CPU and the time to a resumed run's first call
 * differ between the two by about a second.
 */
export function runsBuilt(): boolean {
  const at = statSync(join(ROOT, 'dist', '.build-stamp'), { throwIfNoEntry: false })?.mtimeMs;
  if (at === undefined || !existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) return false;
  const files = readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name));
  files.push(join(ROOT, 'tsconfig.json'), join(ROOT, 'tsconfig.build.json'));
  return files.every((f) => (statSync(f, { throwIfNoEntry: false })?.mtimeMs ?? 0) <= at);
}

/** The sandbox seed's admin token (a sandbox-only value); handed to plans through the environment. */
export const BENCH_TOKEN = 'glpat-sandbox-root-api-sudo-0001';

export interface Inventory {
  projects: number;
  snippets: number;
  groups: number;
  /** Fractions per source storage. */
  storages: Record<string, number>;
  /** Log-normal repository sizes (the seed's `size_mb`); the built-in seed's when absent. */
  sizeMb?: { median: number; max: number };
}

/** Writes a seed: the built-in one (ultimate tier, so groups move) with a generated inventory. */
export function writeSeed(dir: string, inv: Inventory): string {
  const seed = parse(readFileSync(join(ROOT, 'plans', 'sandbox.yaml'), 'utf8')) as {
    instance: { tier: string };
    inventory: { generate: Record<string, unknown> };
  };
  seed.instance.tier = 'ultimate';
  seed.inventory.generate = {
    ...seed.inventory.generate,
    projects: inv.projects,
    snippets: inv.snippets,
    groups: inv.groups,
    storages: inv.storages,
  };
  if (inv.sizeMb) seed.inventory.generate['size_mb'] = inv.sizeMb;
  const sized = inv.sizeMb ? `-size${inv.sizeMb.median}` : '';
  const file = join(dir, `seed-${inv.projects}-${inv.snippets}-${inv.groups}${sized}.yaml`);
  writeFileSync(file, stringify(seed));
  return file;
}

/** CPU time (user + system) a live process has used, in ms; 0 once it is gone. */
export function cpuMs(pid: number): number {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const rest = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return ((Number(rest[11]) + Number(rest[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

export interface SandboxProc {
  url: string;
  pid: number;
  /** Counters since the previous call (or the start). */
  counts(): Promise<RequestCounts>;
  stop(): Promise<void>;
}

/** Starts `bin/shardmove sandbox` with `args` and the counting preload; resolves when it is ready. */
export async function startSandboxProc(args: string[], readyTimeoutMs = 180_000): Promise<SandboxProc> {
  // BENCH_SANDBOX_ARGS adds node flags to the sandbox (`--cpu-prof --cpu-prof-dir=DIR` profiles it).
  const nodeArgs = (process.env.BENCH_SANDBOX_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(
    process.execPath,
    [...nodeArgs, '--import', 'tsx', '--import', join(ROOT, 'bench', 'bench-count.ts'), BIN, 'sandbox', ...args],
    {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const waiting: ((c: RequestCounts) => void)[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (line.startsWith('{"bench":"requests"')) waiting.shift()?.(JSON.parse(line) as RequestCounts);
    else if (process.env.BENCH_VERBOSE) process.stderr.write(`[sandbox] ${line}\n`);
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('sandbox not ready in time')), readyTimeoutMs);
    child.once('exit', (code) => reject(new Error(`sandbox exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const msg = JSON.parse(line) as { event?: string; url?: string };
        if (msg.event === 'ready' && msg.url) {
          clearTimeout(timer);
          resolve(msg.url);
        }
      } catch {
        // not the ready line
      }
    });
  });
  return {
    url,
    pid: child.pid!,
    counts: () =>
      new Promise((resolve) => {
        waiting.push(resolve);
        child.kill('SIGUSR2');
      }),
    stop: () => stopChild(child),
  };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export interface PlanOptions {
  url: string;
  from: string[];
  kinds: string[];
  /** `move.concurrency`: a number, or `auto` (the limiter chooses). */
  concurrency: number | 'auto';
  pollInterval: string;
  backoff: string;
  mode?: 'throttled' | 'bulk';
  /** `poll.min_interval`; the plan's default when absent. */
  minInterval?: string;
  /** `move.queue_ahead`; the plan's default 0 when absent. */
  queueAhead?: number | 'auto';
  /** `move.order` (`together` or `by-kind`); the plan's default (`together`) when absent. */
  order?: 'together' | 'by-kind';
}

export function writePlan(dir: string, name: string, o: PlanOptions): string {
  const plan = {
    version: 1,
    name,
    instance: { url: o.url, token: '${BENCH_TOKEN}', timeout: '30s' },
    move: {
      from: o.from,
      to: 'cluster',
      kinds: o.kinds,
      mode: o.mode ?? 'throttled',
      concurrency: o.concurrency,
      ...(o.queueAhead ? { queue_ahead: o.queueAhead } : {}),
      ...(o.order ? { order: o.order } : {}),
    },
    weights: Object.fromEntries([['cluster', 100], ...o.from.map((s) => [s, 0])]),
    poll: { interval: o.pollInterval, ...(o.minInterval ? { min_interval: o.minInterval } : {}) },
    retry: { max_attempts: 3, backoff: o.backoff },
    verify: true,
  };
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, stringify(plan));
  return file;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  wallMs: number;
  /** VmHWM of the orchestrator process, last value read before it ended (MB). */
  peakRssMb: number;
  /**
   * CPU time (user + system) of the orchestrator (ms): its own process.cpuUsage() at exit, written
   * by the preload; when it was killed, the last value read from /proc before it ended.
   */
  cpuMs: number;
  checkpoint: {
    commits: number;
    statements: number;
    firstAt: number;
    lastAt: number;
    cpuMs?: number;
    /** CPU (ms) the process had used at its first checkpoint write: its start-up. */
    cpuAtFirstMs?: number;
  } | null;
  stderr: string;
}

export interface RunHandle {
  pid: number;
  done: Promise<RunResult>;
  kill(signal: NodeJS.Signals): void;
}

/** Spawns `bin/shardmove run <plan> --state <state> [...extra]`, sampling its peak RSS every 50 ms. */
export function spawnRun(plan: string, state: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}): RunHandle {
  const counterFile = `${state}.bench-sqlite.json`;
  const started = performance.now();
  // BENCH_RUN_ARGS adds node flags to the orchestrator (`--cpu-prof --cpu-prof-dir=DIR` profiles it).
  const nodeArgs = (process.env.BENCH_RUN_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      '--import',
      'tsx',
      '--import',
      join(ROOT, 'bench', 'bench-sqlite.ts'),
      BIN,
      'run',
      plan,
      '--state',
      state,
      ...extra,
    ],
    {
      cwd: ROOT,
      env: { ...process.env, ...env, BENCH_TOKEN, BENCH_SQLITE_FILE: counterFile },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (stderr.length > 20_000) stderr = stderr.slice(-20_000);
  });
  let peakKb = 0;
  let cpu = 0;
  const sample = () => {
    cpu = Math.max(cpu, cpuMs(child.pid!));
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (m) peakKb = Math.max(peakKb, Number(m[1]));
    } catch {
      // ended between samples
    }
  };
  const timer = setInterval(sample, 50);
  const done = new Promise<RunResult>((resolve) => {
    child.once('exit', (code, signal) => {
      clearInterval(timer);
      const checkpoint = existsSync(counterFile)
        ? (JSON.parse(readFileSync(counterFile, 'utf8')) as RunResult['checkpoint'])
        : null;
      resolve({
        code,
        signal,
        wallMs: performance.now() - started,
        peakRssMb: peakKb / 1024,
        cpuMs: checkpoint?.cpuMs ?? cpu,
        checkpoint,
        stderr,
      });
    });
  });
  return { pid: child.pid!, done, kill: (s) => child.kill(s) };
}
