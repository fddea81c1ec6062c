/**
 * One count, everywhere: a partial drain into two destinations and a drain of the same shape
 * without a bound, each followed through every output that counts items (the dry run, the progress
 * line, `status --json`, `report --json` and `--html`, the metrics file and the final summary),
 * against the sandbox's own records. The partial drain's moves are held by the sandbox's clock, so
 * the outputs are read while the bound is reached and its moves are in flight, then the moves are
 * let go and the outputs read again once it ended.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { renderProgressLine } from '../src/report/progress.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { allMovesOf, flat, fromDb, runCli, sandboxEnv, tempDir, writeSeed } from './support/cli-harness.js';
import { until } from './support/until.js';
import { realTimersAt } from './support/fake-clock.js';

interface StatusJson {
  total: number;
  remaining: number;
  staying: number;
  kinds: { done: number; inFlight: number; waiting: number; quarantined: number; staying: number }[];
  placement: { items: number; moved: number }[];
}
interface ReportJson {
  outcome: { headline: string; total: number; remaining: number; staying: number };
  kinds: { moved: number; left: number; staying: number; total: number }[];
  storages: { storage: string; staying: number; waiting: number }[];
  timeline: { markers: { label: string }[] };
}

const sum = <T>(xs: readonly T[], f: (x: T) => number) => xs.reduce((a, x) => a + f(x), 0);

/** The harness's seed with projects small enough that a bound takes many of them. */
function smallSeed(dir: string, counts: { projects: number; snippets: number; groups: number }): string {
  const file = writeSeed(dir, counts);
  writeFileSync(file, readFileSync(file, 'utf8').replace(/size_mb: \{[^}]*\}/, 'size_mb: { median: 40, max: 200 }'));
  return file;
}

/** The items on a storage, by the sandbox's records. */
function onStorage(sb: RunningSandbox, storage: string): number {
  return (sb.state.db.prepare('SELECT COUNT(*) AS n FROM items WHERE storage = ?').get(storage) as { n: number }).n;
}

/** Every move the sandbox recorded, of every kind. */
/** One sample of the metrics file, or null when the series is absent. */
function sample(text: string, series: string): number | null {
  const m = new RegExp(`^${series.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : null;
}

/** The sum of one column (by its header) of an HTML report table. */
function column(html: string, table: string, header: string): number {
  const t = new RegExp(`<table id="${table}">([^]*?)</table>`).exec(html)?.[1] ?? '';
  const headers = [...t.matchAll(/<th[^>]*>([^<]*)<\/th>/g)].map((m) => m[1]);
  const i = headers.indexOf(header);
  expect(i, `${table} has a ${header} column`).toBeGreaterThanOrEqual(0);
  return sum([...t.matchAll(/<tr>(<td[^]*?)<\/tr>/g)], (row) => {
    const cells = [...row[1]!.matchAll(/<td[^>]*>([^<]*)<\/td>/g)].map((c) => c[1]);
    return Number(cells[i]);
  });
}

function writePlan(dir: string, name: string, moveLines: string[]): string {
  const file = join(dir, `${name}.yaml`);
  const text = [
    'version: 1',
    `name: ${name}`,
    'instance:',
    '  url: ${SHARDMOVE_URL}',
    '  token: ${SHARDMOVE_TOKEN}',
    'move:',
    '  from: [nfs-1]',
    '  to: [cluster, nfs-2]',
    ...moveLines,
    '  kinds: [projects, snippets, groups]',
    '  concurrency: 50',
    'capacity:',
    '  storages: {cluster: {free: 1TiB}, nfs-2: {free: 1TiB}}',
    'poll: { interval: 100ms }',
    'retry: { max_attempts: 2, backoff: 100ms }',
    '',
  ].join('\n');
  writeFileSync(file, text);
  return file;
}

describe('placed, moved and staying agree across every output', { timeout: 180_000 }, () => {
  let dir: string;
  let sandbox: RunningSandbox | null = null;
  afterEach(async () => {
    await sandbox?.close();
    sandbox = null;
    rmSync(dir, { recursive: true, force: true });
  });

  it('a partial drain into two destinations: the dry run, the run while its moves are held, and after', async () => {
    dir = tempDir('counts-agree');
    // Moves take a minute of the sandbox's time, which the test moves on: they are held until it does.
    let shift = 0;
    sandbox = await startSandbox({
      seed: smallSeed(dir, { projects: 40, snippets: 6, groups: 4 }),
      moveDurationMs: 60_000,
      clock: realTimersAt(() => Date.now() + shift),
    });
    const sb = sandbox;
    const total = onStorage(sb, 'nfs-1');
    const projectMib = (
      sb.state.db.prepare(`SELECT size_mb FROM items WHERE kind = 'project' AND storage = 'nfs-1'`).all() as {
        size_mb: number;
      }[]
    ).map((p) => p.size_mb);
    const bound = Math.floor(sum(projectMib, (x) => x) * 0.6);
    const plan = writePlan(dir, 'agree', [`  until: {moved: ${bound}MiB}`]);
    const env = sandboxEnv(sb.url);
    const cli = (...args: string[]) => runCli(args, { cwd: dir, env });

    // The dry run: what would move and what would stay add up to what is on the source.
    const dry = await cli('run', plan, '--dry-run', '--state', join(dir, 'dry.db'));
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const all = /\n {2}in all: (\d+) of (\d+) items; (\d+) stay on nfs-1 as planned \(move\.until\)\n/.exec(dry.stdout);
    expect(all, dry.stdout).not.toBeNull();
    const [placed, known, staying] = all!.slice(1).map(Number) as [number, number, number];
    expect(known).toBe(total);
    expect(placed + staying).toBe(total);
    expect(placed).toBeGreaterThan(0);
    expect(staying).toBeGreaterThan(0);
    const perDrain = [...dry.stdout.matchAll(/\n {2}\w+ on nfs-1: (\d+)(?: of (\d+) \((\d+) stay: move\.until\))?/g)];
    expect(sum(perDrain, (m) => Number(m[1]))).toBe(placed);
    expect(sum(perDrain, (m) => Number(m[3] ?? 0))).toBe(staying);
    const table = [...dry.stdout.matchAll(/\n {2}(?:cluster|nfs-2)\s+(\d+) item\(s\)/g)];
    expect(sum(table, (m) => Number(m[1]))).toBe(placed);
    // The estimate covers the bounded scope, not the whole source.
    expect(dry.stdout).toMatch(new RegExp(`known size: .* in \\d+ of ${placed} items\\n`));
    // Room that fits is information: no "fits" among the warnings. (The one schedule spends the bound
    // on group wikis too, whose bytes are an allowance: the line may say how many.)
    // Each room line with its wrapped rest joined (flat joins the indented lines into one).
    expect(flat(dry.stdout)).toMatch(
      /\nRoom \(checked by pre-flight\): room on \S+: .*: fits(?: \(.*\))? room on \S+: .*: fits(?: \(.*\))?\n/,
    );
    expect(dry.stdout.split('\nWarnings')[1] ?? '').not.toMatch(/fits/);
    const dryStatus = JSON.parse(
      (await cli('status', plan, '--state', join(dir, 'dry.db'), '--json')).stdout,
    ) as StatusJson;
    expect(dryStatus).toMatchObject({ total, remaining: placed, staying });

    // The run, its moves held: once the bound is reached, nothing of what stays counts as remaining.
    const state = join(dir, 'run.db');
    const metrics = join(dir, 'agree.prom');
    const running = cli('run', plan, '--state', state, '--metrics-file', metrics);
    const scheduled = await until(
      async () => {
        let bounds = 0;
        try {
          bounds = fromDb<{ source: string }>(state, 'SELECT source FROM bounds').length;
        } catch {
          // not created yet
        }
        return bounds === 1 ? (await allMovesOf(sb.url)).length : -1;
      },
      (n) => n === placed,
      60_000,
    );
    expect(scheduled).toBe(placed);
    const live = JSON.parse((await cli('status', plan, '--state', state, '--json')).stdout) as StatusJson;
    // The later drains (snippets, group wikis) have not listed their items yet: what is known stays.
    const knownNow = live.total;
    expect(knownNow).toBeLessThanOrEqual(total);
    expect(live).toMatchObject({ remaining: placed, staying: knownNow - placed });
    expect(sum(live.kinds, (k) => k.inFlight + k.waiting)).toBe(placed);
    expect(sum(live.kinds, (k) => k.staying)).toBe(knownNow - placed);
    const liveReport = JSON.parse((await cli('report', plan, '--state', state, '--json')).stdout) as ReportJson;
    expect(liveReport.outcome).toMatchObject({ total: knownNow, remaining: placed, staying: knownNow - placed });
    expect(liveReport.timeline.markers.map((m) => m.label)).toContain(
      'move.until reached on nfs-1: nothing more is scheduled from it',
    );
    const remaining = await until(
      async () => {
        try {
          return sample(readFileSync(metrics, 'utf8'), 'shardmove_items_remaining{plan="agree"}');
        } catch {
          return null;
        }
      },
      (n) => n === placed,
      20_000,
    );
    expect(remaining).toBe(placed);
    const store = openCheckpoint(state, { readOnly: true, busyTimeoutMs: 10_000 });
    try {
      // What the progress observer hands the renderer (a hold and a rate, where the renderer takes them).
      const view = {
        step: 'drain nfs-1/projects',
        summary: store.summary(Date.now()),
        elapsedMs: 60_000,
        hold: null,
        perMinute: 10,
      };
      const line = renderProgressLine(view as Parameters<typeof renderProgressLine>[0]);
      expect(
        sum([...line.matchAll(/(\d+) staying/g)], (m) => Number(m[1])),
        line,
      ).toBe(knownNow - placed);
    } finally {
      store.close();
    }

    // Let the moves go; the run ends.
    const release = setInterval(() => {
      shift += 61_000;
      sb.state.engine.kick();
    }, 100);
    const run = await running.finally(() => clearInterval(release));
    expect(run.code, run.stdout + run.stderr).toBe(0);

    // The sandbox's records: what left the source, what stays.
    expect(onStorage(sb, 'nfs-1')).toBe(staying);
    const moves = await allMovesOf(sb.url);
    expect(moves.filter((m) => m.state === 'finished')).toHaveLength(placed);

    const headline = `moved ${placed} of ${total} as planned: move.until reached on nfs-1`;
    expect(run.stdout.split('\n')[0]).toBe(`DONE: ${headline}`);
    expect(run.stdout).toContain(
      `\n  in all: ${placed} moved of ${total}; ${staying} stay on nfs-1 as planned (move.until)\n`,
    );
    const done = JSON.parse((await cli('status', plan, '--state', state, '--json')).stdout) as StatusJson;
    expect(done).toMatchObject({ total, remaining: 0, staying });
    expect(sum(done.kinds, (k) => k.done)).toBe(placed);
    expect(sum(done.placement, (p) => p.moved)).toBe(placed);
    const report = JSON.parse((await cli('report', plan, '--state', state, '--json')).stdout) as ReportJson;
    expect(report.outcome).toMatchObject({ headline: `Done: ${headline}`, total, remaining: 0, staying });
    expect(sum(report.kinds, (k) => k.moved + k.left)).toBe(placed);
    expect(sum(report.kinds, (k) => k.staying)).toBe(staying);
    expect(report.storages).toMatchObject([{ storage: 'nfs-1', staying, waiting: 0 }]);
    const html = join(dir, 'agree.html');
    expect((await cli('report', plan, '--state', state, '--html', html)).code).toBe(0);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain(`>Done: ${headline}</p>`);
    expect(column(page, 'kinds', 'Staying')).toBe(staying);
    expect(column(page, 'kinds', 'Waiting')).toBe(0);
    expect(column(page, 'storages', 'Staying')).toBe(staying);
    const ended = readFileSync(metrics, 'utf8');
    expect(sample(ended, 'shardmove_items_remaining{plan="agree"}')).toBeNull();
    expect(sum([...ended.matchAll(/^shardmove_items\{[^}]*state="moved"\} (\d+)$/gm)], (m) => Number(m[1]))).toBe(
      placed,
    );
  });

  it('a drain into two destinations without a bound: every item placed, moved and counted once', async () => {
    dir = tempDir('counts-spread');
    sandbox = await startSandbox({
      seed: smallSeed(dir, { projects: 30, snippets: 4, groups: 4 }),
      moveDurationMs: 20,
    });
    const sb = sandbox;
    const total = onStorage(sb, 'nfs-1');
    const plan = writePlan(dir, 'spread', []);
    const env = sandboxEnv(sb.url);
    const cli = (...args: string[]) => runCli(args, { cwd: dir, env });

    const dry = await cli('run', plan, '--dry-run', '--state', join(dir, 'dry.db'));
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(sum([...dry.stdout.matchAll(/\n {2}\w+ on nfs-1: (\d+)(?=\n)/g)], (m) => Number(m[1]))).toBe(total);
    expect(dry.stdout).not.toMatch(/stay/);
    expect(sum([...dry.stdout.matchAll(/\n {2}(?:cluster|nfs-2)\s+(\d+) item\(s\)/g)], (m) => Number(m[1]))).toBe(
      total,
    );
    expect(dry.stdout).toMatch(new RegExp(`known size: .* in \\d+ of ${total} items\\n`));

    const state = join(dir, 'run.db');
    const metrics = join(dir, 'spread.prom');
    const run = await cli('run', plan, '--state', state, '--metrics-file', metrics);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout.split('\n')[0]).toBe('DONE: every repository moved and verified');
    expect(onStorage(sb, 'nfs-1')).toBe(0);
    expect((await allMovesOf(sb.url)).filter((m) => m.state === 'finished')).toHaveLength(total);
    const status = JSON.parse((await cli('status', plan, '--state', state, '--json')).stdout) as StatusJson;
    expect(status).toMatchObject({ total, remaining: 0, staying: 0 });
    expect(sum(status.placement, (p) => p.items)).toBe(total);
    expect(sum(status.placement, (p) => p.moved)).toBe(total);
    const report = JSON.parse((await cli('report', plan, '--state', state, '--json')).stdout) as ReportJson;
    expect(report.outcome).toMatchObject({ total, remaining: 0, staying: 0 });
    expect(sum(report.kinds, (k) => k.moved + k.left)).toBe(total);
    const ended = readFileSync(metrics, 'utf8');
    expect(sum([...ended.matchAll(/^shardmove_items\{[^}]*state="moved"\} (\d+)$/gm)], (m) => Number(m[1]))).toBe(
      total,
    );
  });
});
