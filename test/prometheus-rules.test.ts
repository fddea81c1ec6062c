/**
 * Throttle rules against a real Prometheus, judged from the sandbox's own
 * records (its moves and its settings):
 *
 * - a rule that starts holding mid-run: the test writes `test_gate 1` into node_exporter's textfile
 *   directory once the drain is under way; the run sends no move POST while the rule holds, and
 *   finishes once the test writes `test_gate 0`;
 * - Prometheus stopped mid-run: the run says what failed and sends no move POST (on_error: pause),
 *   then goes on when Prometheus is back on the same address, and finishes;
 * - a destination whose free bytes (node_filesystem_avail_bytes of the sandbox's node_exporter,
 *   scraped by Prometheus) cannot take the drain is refused in pre-flight before any write;
 * - a query that Prometheus rejects is refused in pre-flight (exit 1, quoting Prometheus), before
 *   any write: no move and the weights as they were.
 */
import { appendFileSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { flat, runCli, sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { prometheusSkipReason, startPrometheusStack } from './support/prometheus.js';
import type { PrometheusStack } from './support/prometheus.js';

const skip = prometheusSkipReason();
if (skip) console.warn(`prometheus-rules.test.ts: skipped: ${skip}`);

/** Writes a textfile gauge atomically (node_exporter may read the directory at any moment). */
function writeGauge(dir: string, name: string, value: number): void {
  const tmp = join(dir, `.${name}.prom.tmp`);
  writeFileSync(tmp, `# TYPE ${name} gauge\n${name} ${value}\n`);
  renameSync(tmp, join(dir, `${name}.prom`));
}

/**
 * Calls `then` once, when the child's stderr has said something matching `pattern`, or when the
 * child has exited or `boundMs` has passed without it (the test's assertions then say what is amiss).
 */
function onStderr(child: ChildProcess, pattern: RegExp, then: () => void, boundMs = 20_000): void {
  let seen = '';
  const once = () => {
    child.stderr?.off('data', listen);
    child.off('exit', once);
    clearTimeout(timer);
    then();
  };
  const listen = (chunk: unknown) => {
    seen += String(chunk);
    if (pattern.test(seen)) once();
  };
  const timer = setTimeout(once, boundMs);
  child.stderr?.on('data', listen);
  child.once('exit', once);
}

async function weightsOf(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/v4/application/settings`, {
    headers: { 'PRIVATE-TOKEN': sandboxEnv(url).SHARDMOVE_TOKEN ?? '' },
  });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}

describe('throttle rules on a real Prometheus', { timeout: 180_000 }, () => {
  // One Prometheus + node_exporter for the whole file (each start costs ~5 s of target discovery and
  // a TSDB): every test has its own gauge in the shared textfile directory, and the stack also
  // scrapes the sandbox whose filesystem the capacity test reads. The outage test stops and restarts
  // this Prometheus; it runs last and leaves it answering again.
  let shared: string;
  let textfileDir: string;
  let stack: PrometheusStack;
  let capacitySandbox: RunningSandbox;
  let capacityDir: string;
  beforeAll(async () => {
    if (skip !== null) return;
    shared = tempDir('prom-rules-stack');
    textfileDir = join(shared, 'textfile');
    mkdirSync(textfileDir, { recursive: true });
    writeGauge(textfileDir, 'test_gate', 0);
    writeGauge(textfileDir, 'test_outage_gate', 0);
    capacityDir = join(shared, 'capacity');
    mkdirSync(capacityDir, { recursive: true });
    const seed = writeSeed(capacityDir, { projects: 10, snippets: 0, groups: 0 });
    // The destination's filesystem: 64 MiB, far below ten projects.
    writeFileSync(
      seed,
      readFileSync(seed, 'utf8').replace(/^(\s*)storage_capacity: .*$/m, '$1storage_capacity: { cluster: 67108864 }'),
    );
    capacitySandbox = await startSandbox({ seed, workers: 2, moveDurationMs: 10 });
    stack = await startPrometheusStack({
      textfileDir,
      scrapeIntervalMs: 500,
      scrapeTargets: [{ job: 'sandbox', urls: [capacitySandbox.url], metricsPath: '/-/sandbox/node-exporter/metrics' }],
    });
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    await capacitySandbox?.close();
    if (shared) rmSync(shared, { recursive: true, force: true });
  });

  it.skipIf(skip !== null)(
    'a pause rule that starts holding mid-run stops every new POST until it lets go; the run then finishes',
    async () => {
      const dir = tempDir('prom-rules');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      await stack.waitFor('test_gate', (s) => s.length === 1 && s[0]!.value === 0, 20_000);
      const sandbox = await startSandbox({
        seed: writeSeed(dir, { projects: 120, snippets: 2, groups: 2 }),
        workers: 4,
        moveDurationMs: 150,
      });
      onTestFinished(() => sandbox.close());
      const plan = writePlan(dir, { concurrency: 4 });
      appendFileSync(
        plan,
        `prometheus:\n  url: ${stack.prometheusUrl}\n  timeout: 5s\nthrottle:\n  health_every: 200ms\n  rules:\n    - {name: test-gate, query: 'max(test_gate)', above: 0.5, action: pause}\n`,
      );

      let phase: 'before' | 'holding' | 'released' = 'before';
      const run = await runCli(['run', plan, '--events', join(dir, 'events.jsonl')], {
        cwd: dir,
        env: sandboxEnv(sandbox.url),
        onStart: (child) => {
          // Once the drain is under way (the sandbox's own move records), the gauge goes to 1; once
          // the run says the rule holds (so Prometheus showed it) and a further 1.5 s has passed with
          // the rule holding, it goes back to 0.
          const watch = setInterval(() => {
            const { n } = sandbox.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number };
            if (phase === 'before' && n >= 20) {
              phase = 'holding';
              clearInterval(watch);
              writeGauge(textfileDir, 'test_gate', 1);
              onStderr(child, /rule test-gate: 1 above 0\.5: no new move while it holds/, () => {
                setTimeout(() => {
                  writeGauge(textfileDir, 'test_gate', 0);
                  phase = 'released';
                }, 1500);
              });
            }
          }, 20);
        },
      });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stderr).toMatch(/rule test-gate: 1 above 0\.5: no new move while it holds/);

      const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
      const events = store.readEvents(0, 1_000_000);
      store.close();
      const rules = events.filter((e) => e.type === 'rule.changed');
      const held = rules.find((e) => e.data['status'] === 'holding');
      const freed = rules.find((e) => e.seq > (held?.seq ?? Infinity) && e.data['status'] === 'ok');
      expect(held?.data).toMatchObject({ rule: 'test-gate', value: 1, bound: 0.5, op: 'above', action: 'pause' });
      expect(freed).toBeDefined();
      const cap = events.find((e) => e.type === 'cap.changed' && e.data['limit'] === 'rule');
      expect(cap?.data).toMatchObject({
        cap: 0,
        rule: 'test-gate',
        reason: expect.stringContaining('rule test-gate: 1 above 0.5'),
      });
      // --events shows which rule holds the run, and since when.
      const lines = readFileSync(join(dir, 'events.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const line = lines.find((l) => l['type'] === 'cap.changed' && l['limit'] === 'rule');
      expect(line).toMatchObject({ cap: 0, rule: 'test-gate', since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
      // Since the reading that found it past its bound: the same reading that recorded rule.changed.
      expect(Date.parse(String(line!['since']))).toBe(held!.data['since']);
      // The pause itself, for notifications: paused by the rule, then unpaused once it let go.
      const pauses = lines.filter((l) => l['type'] === 'run.paused' || l['type'] === 'run.unpaused');
      expect(pauses).toEqual([
        expect.objectContaining({ type: 'run.paused', by: 'rule', rule: 'test-gate' }),
        expect.objectContaining({ type: 'run.unpaused', by: 'rule' }),
      ]);
      // The sandbox's own records: no move created while the rule held (a POST already on its way
      // when the rule was read is answered within moments), and every project moved in the end.
      const created = (sandbox.state.db.prepare('SELECT created_at FROM moves').all() as { created_at: string }[]).map(
        (m) => Date.parse(m.created_at),
      );
      expect(created.filter((t) => t > held!.at + 250 && t < freed!.at)).toEqual([]);
      expect(created.filter((t) => t >= freed!.at).length).toBeGreaterThan(0);
      const left = sandbox.state.db
        .prepare("SELECT count(*) AS n FROM items WHERE kind = 'projects' AND storage = 'default'")
        .get() as { n: number };
      expect(left.n).toBe(0);
    },
  );

  it.skipIf(skip !== null)(
    'a query that Prometheus rejects is refused in pre-flight, quoting Prometheus, before any write',
    async () => {
      const dir = tempDir('prom-rules-bad');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const sandbox = await startSandbox({
        seed: writeSeed(dir, { projects: 5, snippets: 0, groups: 0 }),
        workers: 2,
        moveDurationMs: 10,
      });
      onTestFinished(() => sandbox.close());
      const before = await weightsOf(sandbox.url);
      const plan = writePlan(dir, {});
      appendFileSync(
        plan,
        `prometheus:\n  url: ${stack.prometheusUrl}\nthrottle:\n  rules:\n    - {name: broken, query: 'max(rate(node_cpu_seconds_total[5m])', above: 0.8, action: cut}\n`,
      );
      const run = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
      expect(run.code, run.stdout + run.stderr).toBe(1);
      expect(flat(run.stdout + run.stderr)).toMatch(
        /throttle rule broken: Prometheus refused the query \(400 bad_data\): .*parse error/,
      );
      expect((sandbox.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number }).n).toBe(0);
      expect(await weightsOf(sandbox.url)).toEqual(before);
    },
  );

  it.skipIf(skip !== null)(
    'a destination whose free bytes in Prometheus cannot take the drain is refused before any write',
    async () => {
      const dir = capacityDir;
      const sandbox = capacitySandbox;
      // The built-in seed's cluster storage lives on /mnt/gitaly-cluster.
      const query = 'node_filesystem_avail_bytes{job="sandbox",mountpoint="/mnt/gitaly-cluster"}';
      const [avail] = await stack.waitFor(query, (s) => s.length === 1, 30_000);
      const before = await weightsOf(sandbox.url);
      const plan = writePlan(dir, {});
      appendFileSync(
        plan,
        `prometheus:\n  url: ${stack.prometheusUrl}\ncapacity:\n  storages:\n    cluster: {free: '${query}'}\n`,
      );
      const run = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
      expect(run.code, run.stdout + run.stderr).toBe(1);
      expect(run.stdout + run.stderr).toContain(`and cluster has ${avail!.value} bytes`);
      expect((sandbox.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number }).n).toBe(0);
      expect(await weightsOf(sandbox.url)).toEqual(before);
    },
  );

  it.skipIf(skip !== null)(
    'Prometheus stopped mid-run pauses the run with a message, and it recovers when Prometheus is back',
    async () => {
      const dir = tempDir('prom-outage');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      await stack.waitFor('test_outage_gate', (s) => s.length === 1 && s[0]!.value === 0, 20_000);
      const sandbox = await startSandbox({
        seed: writeSeed(dir, { projects: 120, snippets: 2, groups: 2 }),
        workers: 4,
        moveDurationMs: 150,
      });
      onTestFinished(() => sandbox.close());
      const plan = writePlan(dir, { concurrency: 4 });
      appendFileSync(
        plan,
        `prometheus:\n  url: ${stack.prometheusUrl}\n  timeout: 2s\nthrottle:\n  health_every: 200ms\n  rules:\n    - {name: test-gate, query: 'max(test_outage_gate)', above: 0.5, action: pause}\n`,
      );
      let outage: Promise<void> | null = null;
      const run = await runCli(['run', plan], {
        cwd: dir,
        env: sandboxEnv(sandbox.url),
        onStart: (child) => {
          // Prometheus goes away once the drain is under way, and comes back 1.5 s after the run has
          // said it cannot read it.
          const watch = setInterval(() => {
            const { n } = sandbox.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number };
            if (n < 20) return;
            clearInterval(watch);
            outage = (async () => {
              const noticed = new Promise<void>((r) => onStderr(child, /warning: rule test-gate: Prometheus at /, r));
              await stack.stopPrometheus();
              await noticed;
              await new Promise((r) => setTimeout(r, 1500));
              await stack.startPrometheus();
            })();
          }, 20);
        },
      });
      await outage;
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stderr).toMatch(
        /warning: rule test-gate: Prometheus at http:\/\/127\.0\.0\.1:\d+ did not answer \(\w+\): no new move until it answers \(prometheus\.on_error: pause\)/,
      );
      expect(run.stderr).toMatch(/note: rule test-gate no longer holds \(Prometheus answers again\)/);

      const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
      const events = store.readEvents(0, 1_000_000);
      store.close();
      const failed = events.find((e) => e.type === 'rule.changed' && e.data['status'] === 'error');
      const back = events.find(
        (e) => e.type === 'rule.changed' && e.seq > (failed?.seq ?? Infinity) && e.data['status'] === 'ok',
      );
      expect(failed).toBeDefined();
      expect(back).toBeDefined();
      expect(events.find((e) => e.type === 'cap.changed' && e.data['limit'] === 'rule')?.data).toMatchObject({
        reason: expect.stringMatching(/Prometheus could not be read for rule test-gate/),
      });
      const created = (sandbox.state.db.prepare('SELECT created_at FROM moves').all() as { created_at: string }[]).map(
        (m) => Date.parse(m.created_at),
      );
      expect(created.filter((t) => t > failed!.at + 250 && t < back!.at)).toEqual([]);
      const left = sandbox.state.db
        .prepare("SELECT count(*) AS n FROM items WHERE kind = 'projects' AND storage = 'default'")
        .get() as { n: number };
      expect(left.n).toBe(0);
    },
  );
});
