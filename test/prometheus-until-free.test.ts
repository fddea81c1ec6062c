/**
 * Issue 23 item 2, the second form: `move.until: {free: SIZE}` stops a partial drain once the
 * source's free space, read from a real Prometheus scraping the sandbox's node_filesystem metrics,
 * reaches SIZE. Judged from the sandbox's own records: the source's free space afterwards, and what
 * stayed on it.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import { fromDb, runCli, sandboxEnv, tempDir, writeSeed } from './support/cli-harness.js';
import { prometheusSkipReason, startPrometheusStack } from './support/prometheus.js';
import { sandboxProjects, writeProjectsPlan } from './support/projects-plan.js';

const MIB = 2 ** 20;
const skip = prometheusSkipReason();

describe("a partial drain bounded by the source's free space (real Prometheus)", { timeout: 120_000 }, () => {
  it.skipIf(skip !== null)(
    'stops once nfs-1 has the free space asked for, and verification reports the rest as planned',
    async () => {
      const dir = tempDir('until-free');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const seed = writeSeed(dir, { projects: 60, snippets: 0, groups: 0 });
      writeFileSync(
        seed,
        readFileSync(seed, 'utf8').replace(
          /^(\s*)storage_capacity: .*$/m,
          '$1storage_capacity: { nfs-1: 1099511627776, cluster: 1099511627776 }',
        ),
      );
      const sandbox = await startSandbox({ seed, workers: 4, moveDurationMs: 20 });
      onTestFinished(() => sandbox.close());
      const stack = await startPrometheusStack({
        textfileDir: join(dir, 'textfile'),
        scrapeTargets: [{ job: 'sandbox', urls: [sandbox.url], metricsPath: '/-/sandbox/node-exporter/metrics' }],
      });
      onTestFinished(() => stack.stop());
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
});
