/**
 * Partial drains, the second form: `move.until: {free: SIZE}` stops a partial drain once the
 * source's free space, read from a real Prometheus scraping the sandbox's node_filesystem metrics,
 * reaches SIZE. Judged from the sandbox's own records: the source's free space afterwards, and what
 * stayed on it. And the free space is read when each source's drain starts: a source that fills up
 * while an earlier source drains gets the budget it has then, not the one it had at the start.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { fromDb, runCli, sandboxEnv, tempDir, writeChangedSeed, writeSeed } from './support/cli-harness.js';
import { startHoldProxy } from './support/hold-proxy.js';
import { prometheusSkipReason, startPrometheusStack } from './support/prometheus.js';
import type { PrometheusStack } from './support/prometheus.js';
import { sandboxProjects, writeProjectsPlan } from './support/projects-plan.js';

const MIB = 2 ** 20;
const skip = prometheusSkipReason();

describe("a partial drain bounded by the source's free space (real Prometheus)", { timeout: 120_000 }, () => {
  // One Prometheus + node_exporter for the file (a start costs ~5 s of target discovery): it scrapes
  // the first test's sandbox (started here, so the scrape configuration can name it), and the second
  // test's gauges come from free.prom in the shared textfile directory.
  let shared: string;
  let textfileDir: string;
  let stack: PrometheusStack;
  let freeDir: string;
  let freeSandbox: RunningSandbox;
  beforeAll(async () => {
    if (skip !== null) return;
    shared = tempDir('until-free-stack');
    textfileDir = join(shared, 'textfile');
    mkdirSync(textfileDir, { recursive: true });
    freeDir = join(shared, 'until-free');
    mkdirSync(freeDir, { recursive: true });
    const seed = writeSeed(freeDir, { projects: 60, snippets: 0, groups: 0 });
    writeFileSync(
      seed,
      readFileSync(seed, 'utf8').replace(
        /^(\s*)storage_capacity: .*$/m,
        '$1storage_capacity: { nfs-1: 1099511627776, cluster: 1099511627776 }',
      ),
    );
    freeSandbox = await startSandbox({ seed, workers: 4, moveDurationMs: 20 });
    stack = await startPrometheusStack({
      textfileDir,
      scrapeIntervalMs: 500,
      scrapeTargets: [{ job: 'sandbox', urls: [freeSandbox.url], metricsPath: '/-/sandbox/node-exporter/metrics' }],
    });
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    await freeSandbox?.close();
    if (shared) rmSync(shared, { recursive: true, force: true });
  });

  it.skipIf(skip !== null)(
    'stops once nfs-1 has the free space asked for, and verification reports the rest as planned',
    async () => {
      const dir = freeDir;
      const sandbox = freeSandbox;
      // Where the built-in seed mounts them.
      const mountpoint: Record<string, string> = { 'nfs-1': '/mnt/nfs-1', cluster: '/mnt/gitaly-cluster' };
      const query = (storage: string) =>
        `node_filesystem_avail_bytes{job="sandbox",mountpoint="${mountpoint[storage]}"}`;
      const [avail] = await stack.waitFor(query('nfs-1'), (s) => s.length === 1, 30_000);
      const onSource = sandboxProjects(sandbox).filter((p) => p.storage === 'nfs-1');
      const sourceMib = onSource.reduce((n, p) => n + p.size_mb, 0);
      // Ask for 40% of nfs-1's projects' bytes more free space than it has now.
      const wantFree = Math.round(avail!.value + 0.4 * sourceMib * MIB);
      const plan = writeProjectsPlan(dir, ['cluster'], {
        name: 'until-free',
        moveLines: [`  until: {free: ${wantFree}}`],
        extra: [
          `prometheus:\n  url: ${stack.prometheusUrl}`,
          'capacity:',
          '  storages:',
          `    nfs-1: {free: '${query('nfs-1')}'}`,
          `    cluster: {free: '${query('cluster')}'}`,
        ],
      });
      const state = join(dir, 'until-free.db');
      const run = await runCli(['run', plan, '--state', state], { cwd: dir, env: sandboxEnv(sandbox.url) });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toMatch(/Verification: passed/);
      expect(run.stdout).toMatch(/projects on nfs-1: \d+ still there, as planned \(move\.until reached\)/);

      // The sandbox's records: what left nfs-1 gives it at least the free space asked for, and the
      // last item moved is the one that crossed the bound (without it, less than asked).
      const after = new Map(sandboxProjects(sandbox).map((p) => [p.id, p.storage]));
      const moved = onSource.filter((p) => after.get(p.id) === 'cluster');
      const kept = onSource.filter((p) => after.get(p.id) === 'nfs-1');
      expect(kept.length).toBeGreaterThan(0);
      const movedBytes = moved.reduce((n, p) => n + p.size_mb * MIB, 0);
      const needed = wantFree - avail!.value;
      expect(movedBytes).toBeGreaterThanOrEqual(needed - MIB);
      expect(movedBytes - Math.min(...moved.map((p) => p.size_mb * MIB))).toBeLessThan(needed + MIB);
      expect(fromDb<{ source: string; note: string }>(state, 'SELECT source, note FROM bounds')).toEqual([
        { source: 'nfs-1', note: `move.until free: ${wantFree} bytes` },
      ]);
      // And Prometheus, scraping the sandbox, sees nfs-1 with at least that much free now.
      await stack.waitFor(query('nfs-1'), (s) => s.length === 1 && s[0]!.value >= wantFree - MIB, 30_000);
    },
  );

  it.skipIf(skip !== null)(
    "reads nfs-2's free space when nfs-2's drain starts: it filled up while nfs-1 drained, so it gives up items",
    async () => {
      const dir = tempDir('until-free-late');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const sandbox = await startSandbox({
        seed: writeChangedSeed(dir, { projects: 40, snippets: 0, groups: 0 }, (doc) =>
          doc.setIn(['inventory', 'generate', 'storages'], doc.createNode({ 'nfs-1': 1, 'nfs-2': 1 })),
        ),
        workers: 4,
        moveDurationMs: 20,
      });
      onTestFinished(() => sandbox.close());
      // Between the CLI and the sandbox: the first move POST is held, so nfs-1's drain waits
      // (after the run read what it reads at the start) while nfs-2 fills up.
      const proxy = await startHoldProxy(sandbox.url);
      onTestFinished(() => proxy.close());
      const nfs2 = sandboxProjects(sandbox).filter((p) => p.storage === 'nfs-2');
      const wantFree = Math.round(0.3 * nfs2.reduce((n, p) => n + p.size_mb, 0) * MIB);
      const gauges = (nfs2Free: number) => {
        const tmp = join(textfileDir, '.free.prom.tmp');
        writeFileSync(tmp, `test_free{storage="nfs-1"} 0\ntest_free{storage="nfs-2"} ${nfs2Free}\n`);
        renameSync(tmp, join(textfileDir, 'free.prom'));
      };
      // When the run starts, nfs-2 already has the free space asked for.
      gauges(wantFree);
      const nfs2Query = 'max(test_free{storage="nfs-2"})';
      await stack.waitFor(nfs2Query, (s) => s.length === 1 && s[0]!.value === wantFree, 20_000);
      const plan = join(dir, 'late.yaml');
      writeFileSync(
        plan,
        [
          'version: 1',
          'name: late',
          'instance:',
          '  url: ${SHARDMOVE_URL}',
          '  token: ${SHARDMOVE_TOKEN}',
          '  timeout: 60s',
          'move:',
          '  from: [nfs-1, nfs-2]',
          '  to: cluster',
          `  until: {free: ${wantFree}}`,
          '  kinds: [projects]',
          '  concurrency: 2',
          // A source's drain after another's: the one schedule reads every source's room at once.
          '  order: by-kind',
          'poll: { interval: 100ms }',
          'retry: { max_attempts: 2, backoff: 100ms }',
          `prometheus:\n  url: ${stack.prometheusUrl}`,
          'capacity:',
          '  storages:',
          `    nfs-1: {free: 'max(test_free{storage="nfs-1"})'}`,
          `    nfs-2: {free: '${nfs2Query}'}`,
          '    cluster: {free: 1PiB}',
          '',
        ].join('\n'),
      );
      const held = proxy.arm({
        match: (r) => r.method === 'POST' && r.url.includes('repository_storage_moves'),
        forward: true,
      });
      let hit = false;
      const filled = held.then(async () => {
        hit = true;
        gauges(0);
        await stack.waitFor(nfs2Query, (s) => s.length === 1 && s[0]!.value === 0, 20_000);
        proxy.release();
      });
      const run = await runCli(['run', plan, '--state', join(dir, 'late.db')], {
        cwd: dir,
        env: sandboxEnv(proxy.url),
      });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(hit).toBe(true);
      await filled;

      // The sandbox's records: nfs-2 gave up at least the bytes it needed once full, not nothing.
      const after = new Map(sandboxProjects(sandbox).map((p) => [p.id, p.storage]));
      const moved = nfs2.filter((p) => after.get(p.id) === 'cluster');
      const movedBytes = moved.reduce((n, p) => n + p.size_mb * MIB, 0);
      expect(moved.length).toBeGreaterThan(0);
      expect(movedBytes).toBeGreaterThanOrEqual(wantFree - MIB);
      expect(nfs2.filter((p) => after.get(p.id) === 'nfs-2').length).toBeGreaterThan(0);
    },
  );
});
