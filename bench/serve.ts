/**
 * `npm run bench:serve`: the web console on a big checkpoint. A finished dry run's checkpoint with
 * BENCH_SERVE_ITEMS projects (default 1,000,000; ./big-checkpoint.ts) is served by `shardmove serve
 * --state`, and a page's refresh is timed as the page makes it: the list of runs, then the run's
 * status document, its status text and its cap changes side by side, 2 s apart as the page makes them. BENCH_SERVE_REFRESHES refreshes (default 20);
 * prints the median, p95 and slowest refresh and each route's median, and the console's peak RSS.
 * Then the same console watches a real run (BENCH_SERVE_RUN_PROJECTS projects, default 3,000) as a
 * page would, a refresh every 2 s, against the same run unwatched, BENCH_SERVE_RUN_PAIRS times
 * each (default 2, alternating): the run's wall time and CPU with and without.
 * Target: each refresh well under a second, and no measurable time added to the run (issue 43).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT, spawnRun, startSandboxProc, writePlan, writeSeed } from './bench-procs.js';
import { bigDryRun } from './big-checkpoint.js';

const ITEMS = Number(process.env.BENCH_SERVE_ITEMS ?? 1_000_000);
const REFRESHES = Number(process.env.BENCH_SERVE_REFRESHES ?? 20);
/** The watched run: this many projects on two storages, each moved in 20 ms by 50 sandbox workers. */
const RUN_PROJECTS = Number(process.env.BENCH_SERVE_RUN_PROJECTS ?? 3000);
const RUN_PAIRS = Number(process.env.BENCH_SERVE_RUN_PAIRS ?? 2);
/** As the page waits between refreshes (src/serve/assets.ts), so no refresh is served from the last one's look. */
const GAP_MS = 2_000;
const BIN = join(ROOT, 'bin', 'shardmove');

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
};

interface Console {
  pid: number;
  /** One GET of the console's `path`, timed (ms); throws unless it answers 2xx. */
  time(path: string): Promise<number>;
  /** The first run's id, from the list of runs. */
  runId(): Promise<string>;
  /** A page's refresh: the list of runs, then the first run's status, text and cap changes at once (ms). */
  refresh(): Promise<number>;
  stop(): Promise<void>;
}

/** `shardmove serve --state STATE --read-only`, and the way to ask it as a page does. */
async function startConsole(state: string): Promise<Console> {
  const child = spawn(process.execPath, [BIN, 'serve', '--state', state, '--read-only'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const url = await new Promise<string>((done) => createInterface({ input: child.stdout! }).once('line', done));
  const [base, token] = url.split('/?token=') as [string, string];
  const headers = { Authorization: `Bearer ${token}` };
  const time = async (path: string): Promise<number> => {
    const t0 = performance.now();
    const res = await fetch(`${base}${path}`, { headers });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
    return performance.now() - t0;
  };
  let id: string | null = null;
  const runId = async (): Promise<string> => {
    if (id === null) {
      const res = await fetch(`${base}/api/runs`, { headers });
      id = ((await res.json()) as { runs: { id: string }[] }).runs[0]!.id;
    }
    return id;
  };
  return {
    pid: child.pid ?? 0,
    time,
    runId,
    refresh: async () => {
      const t0 = performance.now();
      if (id === null) await runId();
      else await time('/api/runs');
      await Promise.all([time(`/api/runs/${id}`), time(`/api/runs/${id}/text`), time(`/api/runs/${id}/caps`)]);
      return performance.now() - t0;
    },
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

/** One real run of RUN_PROJECTS projects, watched by a console refreshing every 2 s or not. */
async function watchedRun(
  dir: string,
  n: number,
  watched: boolean,
): Promise<{ wallMs: number; cpuMs: number; refreshes: number[] }> {
  const sandbox = await startSandboxProc([
    '--seed',
    writeSeed(dir, { projects: RUN_PROJECTS, snippets: 0, groups: 0, storages: { 'nfs-1': 0.5, 'nfs-2': 0.5 } }),
    '--workers',
    '50',
    '--move-duration',
    '20',
  ]);
  const name = `watched-${n}`;
  const plan = writePlan(dir, name, {
    url: sandbox.url,
    from: ['nfs-1', 'nfs-2'],
    kinds: ['projects'],
    concurrency: 50,
    pollInterval: '200ms',
    backoff: '1s',
  });
  const state = join(dir, `${name}.db`);
  const run = spawnRun(plan, state);
  const refreshes: number[] = [];
  let console_: Console | null = null;
  let ended = false;
  const watching = (async () => {
    if (!watched) return;
    // The checkpoint exists once the run has started.
    while (!ended) {
      try {
        readFileSync(state);
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    if (ended) return;
    console_ = await startConsole(state);
    while (!ended) {
      refreshes.push(await console_.refresh());
      await new Promise((r) => setTimeout(r, GAP_MS));
    }
  })();
  const r = await run.done;
  ended = true;
  await watching;
  await (console_ as Console | null)?.stop();
  await sandbox.stop();
  if (r.code !== 0) throw new Error(`run ${n} exited ${r.code}: ${r.stderr.slice(-500)}`);
  return { wallMs: r.wallMs, cpuMs: r.cpuMs, refreshes };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-bench-serve-'));
  try {
    process.stderr.write(`a dry run's checkpoint with ${ITEMS.toLocaleString('en')} projects...\n`);
    const { state, setupMs } = await bigDryRun(dir, 'serve-bench', ITEMS);
    const console_ = await startConsole(state);
    const { time } = console_;
    const id = await console_.runId();
    const refresh: number[] = [];
    const routes: Record<string, number[]> = { list: [], status: [], text: [], caps: [] };
    for (let i = 0; i < REFRESHES; i++) {
      const t0 = performance.now();
      routes.list!.push(await time('/api/runs'));
      const [s, t, c] = await Promise.all([
        time(`/api/runs/${id}`),
        time(`/api/runs/${id}/text`),
        time(`/api/runs/${id}/caps`),
      ]);
      routes.status!.push(s);
      routes.text!.push(t);
      routes.caps!.push(c);
      refresh.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, GAP_MS));
    }
    const rss = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${console_.pid}/status`, 'utf8'))?.[1];
    await console_.stop();
    const ms = (n: number) => `${n.toFixed(0)} ms`;
    process.stdout.write(
      [
        `console on a dry run's checkpoint with ${ITEMS.toLocaleString('en')} projects (written in ${(setupMs / 1000).toFixed(1)} s), ${REFRESHES} refreshes`,
        '| | median | p95 | slowest |',
        '|---|---|---|---|',
        `| a page's refresh (list, then status, text and caps at once) | ${ms(quantile(refresh, 0.5))} | ${ms(quantile(refresh, 0.95))} | ${ms(Math.max(...refresh))} |`,
        ...Object.entries(routes).map(
          ([k, xs]) => `| ${k} route | ${ms(quantile(xs, 0.5))} | ${ms(quantile(xs, 0.95))} | ${ms(Math.max(...xs))} |`,
        ),
        `console peak RSS ${rss ? (Number(rss) / 1024).toFixed(0) : '?'} MB; target: each refresh well under a second`,
        '',
      ].join('\n'),
    );
    process.stderr.write(`a run of ${RUN_PROJECTS} projects, watched and not, ${RUN_PAIRS} times each...\n`);
    const plain: { wallMs: number; cpuMs: number }[] = [];
    const watched: { wallMs: number; cpuMs: number; refreshes: number[] }[] = [];
    for (let i = 0; i < RUN_PAIRS; i++) {
      plain.push(await watchedRun(dir, 2 * i, false));
      watched.push(await watchedRun(dir, 2 * i + 1, true));
    }
    const med = (xs: number[]) => quantile(xs, 0.5);
    const secs = (xs: number[]) => xs.map((x) => (x / 1000).toFixed(1)).join(', ');
    const allRefreshes = watched.flatMap((w) => w.refreshes);
    process.stdout.write(
      [
        `a run of ${RUN_PROJECTS.toLocaleString('en')} projects (50 moves at once, 20 ms each), ${RUN_PAIRS} runs each way, alternating`,
        '| | wall (each run) | median wall | median orchestrator CPU |',
        '|---|---|---|---|',
        `| not watched | ${secs(plain.map((p) => p.wallMs))} s | ${(med(plain.map((p) => p.wallMs)) / 1000).toFixed(1)} s | ${(med(plain.map((p) => p.cpuMs)) / 1000).toFixed(1)} s |`,
        `| watched by the console, a refresh every 2 s | ${secs(watched.map((p) => p.wallMs))} s | ${(med(watched.map((p) => p.wallMs)) / 1000).toFixed(1)} s | ${(med(watched.map((p) => p.cpuMs)) / 1000).toFixed(1)} s |`,
        `${allRefreshes.length} refreshes during the watched runs: median ${ms(med(allRefreshes))}, slowest ${ms(Math.max(0, ...allRefreshes))}`,
        '',
      ].join('\n'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
