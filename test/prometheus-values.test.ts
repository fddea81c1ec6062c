/**
 * Prometheus's special values read honestly, on a real Prometheus, judged from the sandbox's own
 * records:
 *
 * - a full destination makes `used / avail` answer +Inf: the pause rule on it holds (+Inf is above
 *   every bound), so no move is created until the destination has room again;
 * - a source whose free space Prometheus answers as -5e18 cannot bound a partial drain
 *   (`move.until: {free}`): pre-flight refuses before any write instead of draining everything.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { flat, runCli, sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { prometheusSkipReason, startPrometheusStack } from './support/prometheus.js';
import type { PrometheusStack } from './support/prometheus.js';
import { writeProjectsPlan } from './support/projects-plan.js';

const skip = prometheusSkipReason();
if (skip) console.warn(`prometheus-values.test.ts: skipped: ${skip}`);

/** Writes textfile gauges to `file`.prom atomically (node_exporter may read the directory at any moment). */
function writeGauges(dir: string, file: string, gauges: Record<string, number | string>): void {
  const tmp = join(dir, `.${file}.prom.tmp`);
  writeFileSync(
    tmp,
    Object.entries(gauges)
      .map(([k, v]) => `${k} ${v}\n`)
      .join(''),
  );
  renameSync(tmp, join(dir, `${file}.prom`));
}

const movesIn = (sandbox: RunningSandbox) =>
  (sandbox.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number }).n;

describe("Prometheus's special values", { timeout: 180_000 }, () => {
  // One Prometheus + node_exporter for the file (a start costs ~5 s of target discovery): each test
  // writes its own gauges, in its own file of the shared textfile directory.
  let shared: string;
  let textfileDir: string;
  let stack: PrometheusStack;
  beforeAll(async () => {
    if (skip !== null) return;
    shared = tempDir('prom-values-stack');
    textfileDir = join(shared, 'textfile');
    mkdirSync(textfileDir, { recursive: true });
    // cluster is full: nothing available, so used / avail is +Inf.
    writeGauges(textfileDir, 'inf', { test_used_bytes: 5e11, test_avail_bytes: 0 });
    writeGauges(textfileDir, 'negative', { test_free_bytes: '-5e+18' });
    stack = await startPrometheusStack({ textfileDir, scrapeIntervalMs: 500 });
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    if (shared) rmSync(shared, { recursive: true, force: true });
  });

  it.skipIf(skip !== null)(
    'a pause rule answering +Inf (a full destination) holds: no move until the destination has room',
    async () => {
      const dir = tempDir('prom-inf');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const query = 'max(test_used_bytes) / max(test_avail_bytes)';
      // (The harness reads +Inf as null: wait for what makes it.)
      await stack.waitFor('max(test_avail_bytes)', (s) => s.length === 1 && s[0]!.value === 0, 20_000);
      const sandbox = await startSandbox({
        seed: writeSeed(dir, { projects: 20, snippets: 0, groups: 0 }),
        workers: 4,
        moveDurationMs: 20,
      });
      onTestFinished(() => sandbox.close());
      const plan = writePlan(dir, { concurrency: 4 });
      writeFileSync(
        plan,
        `${readFileSync(plan, 'utf8')}prometheus:\n  url: ${stack.prometheusUrl}\n  timeout: 5s\n` +
          `throttle:\n  health_every: 200ms\n  rules:\n    - {name: cluster-full, query: '${query}', above: 0.95, action: pause}\n`,
      );
      const checkpoint = join(dir, 'state', 'it.db');
      let movesWhileHeld = -1;
      let freedAt = 0;
      const run = await runCli(['run', plan], {
        cwd: dir,
        env: sandboxEnv(sandbox.url),
        onStart: () => {
          // Once the checkpoint says the rule holds, the sandbox must have no move; then the
          // destination gets room, and the run goes on.
          const watch = setInterval(() => {
            let holding = false;
            try {
              const store = openCheckpoint(checkpoint, { readOnly: true });
              holding = store
                .readEvents(0, 1_000_000)
                .some((e) => e.type === 'rule.changed' && e.data['status'] === 'holding');
              store.close();
            } catch {
              return; // not created yet
            }
            if (!holding && movesIn(sandbox) === 0) return;
            clearInterval(watch);
            movesWhileHeld = movesIn(sandbox);
            freedAt = Date.now();
            writeGauges(textfileDir, 'inf', { test_used_bytes: 5e11, test_avail_bytes: 5e12 });
          }, 50);
        },
      });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(movesWhileHeld).toBe(0);
      expect(run.stderr).toMatch(/note: rule cluster-full: \+Inf above 0\.95: no new move while it holds/);
      // The sandbox's records: every move was created after the destination got room.
      const created = (sandbox.state.db.prepare('SELECT created_at FROM moves').all() as { created_at: string }[]).map(
        (m) => Date.parse(m.created_at),
      );
      expect(created.length).toBeGreaterThanOrEqual(20);
      expect(created.filter((t) => t < freedAt)).toEqual([]);
    },
  );

  it.skipIf(skip !== null)(
    "a source's free space answered as -5e18 is unreadable: the partial drain is refused before any write",
    async () => {
      const dir = tempDir('prom-negative');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      await stack.waitFor('max(test_free_bytes)', (s) => s.length === 1 && s[0]!.value === -5e18, 20_000);
      const sandbox = await startSandbox({
        seed: writeSeed(dir, { projects: 30, snippets: 0, groups: 0 }),
        workers: 4,
        moveDurationMs: 10,
      });
      onTestFinished(() => sandbox.close());
      const settings = () => sandbox.state.db.prepare("SELECT value FROM meta WHERE key = 'settings'").get();
      const before = settings();
      const plan = writeProjectsPlan(dir, ['cluster'], {
        name: 'negative',
        moveLines: ['  until: {free: 2.3GB}'],
        extra: [
          `prometheus:\n  url: ${stack.prometheusUrl}`,
          'capacity:',
          "  storages: {nfs-1: {free: 'max(test_free_bytes)'}, cluster: {free: 1TiB}}",
        ],
      });
      const run = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
      expect(run.code, run.stdout + run.stderr).toBe(1);
      expect(flat(run.stdout + run.stderr)).toMatch(
        /capacity\.storages\.nfs-1\.free: the query answers -5e\+18, which is not a number of free bytes: the free space of nfs-1 cannot be read/,
      );
      // Nothing written: no move, the weights as they were.
      expect(movesIn(sandbox)).toBe(0);
      expect(settings()).toEqual(before);
    },
  );
});
