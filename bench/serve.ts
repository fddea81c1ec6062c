/**
 * `npm run bench:serve`: the web console on a big checkpoint. A finished dry run's checkpoint with
 * BENCH_SERVE_ITEMS projects (default 1,000,000; ./big-checkpoint.ts) is served by `shardmove serve
 * --state`, and a page's refresh is timed as the page makes it: the list of runs, then the run's
 * status document and its status text side by side, 2 s apart as the page makes them. BENCH_SERVE_REFRESHES refreshes (default 20);
 * prints the median, p95 and slowest refresh and each route's median, and the console's peak RSS.
 * Target: each refresh well under a second (issue 43).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from './bench-procs.js';
import { bigDryRun } from './big-checkpoint.js';

const ITEMS = Number(process.env.BENCH_SERVE_ITEMS ?? 1_000_000);
const REFRESHES = Number(process.env.BENCH_SERVE_REFRESHES ?? 20);
/** As the page waits between refreshes (src/serve/assets.ts), so no refresh is served from the last one's look. */
const GAP_MS = 2_000;
const BIN = join(ROOT, 'bin', 'shardmove');

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
};

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-bench-serve-'));
  try {
    process.stderr.write(`a dry run's checkpoint with ${ITEMS.toLocaleString('en')} projects...\n`);
    const { state, setupMs } = await bigDryRun(dir, 'serve-bench', ITEMS);
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
    const { runs } = (await (await fetch(`${base}/api/runs`, { headers })).json()) as { runs: { id: string }[] };
    const id = runs[0]!.id;
    const refresh: number[] = [];
    const routes: Record<string, number[]> = { list: [], status: [], text: [] };
    for (let i = 0; i < REFRESHES; i++) {
      const t0 = performance.now();
      routes.list!.push(await time('/api/runs'));
      const [s, t] = await Promise.all([time(`/api/runs/${id}`), time(`/api/runs/${id}/text`)]);
      routes.status!.push(s);
      routes.text!.push(t);
      refresh.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, GAP_MS));
    }
    const rss = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    const ms = (n: number) => `${n.toFixed(0)} ms`;
    process.stdout.write(
      [
        `console on a dry run's checkpoint with ${ITEMS.toLocaleString('en')} projects (written in ${(setupMs / 1000).toFixed(1)} s), ${REFRESHES} refreshes`,
        '| | median | p95 | slowest |',
        '|---|---|---|---|',
        `| a page's refresh (list, then status and text at once) | ${ms(quantile(refresh, 0.5))} | ${ms(quantile(refresh, 0.95))} | ${ms(Math.max(...refresh))} |`,
        ...Object.entries(routes).map(
          ([k, xs]) => `| ${k} route | ${ms(quantile(xs, 0.5))} | ${ms(quantile(xs, 0.95))} | ${ms(Math.max(...xs))} |`,
        ),
        `console peak RSS ${rss ? (Number(rss) / 1024).toFixed(0) : '?'} MB; target: each refresh well under a second`,
        '',
      ].join('\n'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
