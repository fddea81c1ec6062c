/**
 * Ctrl-C while a throttle rule's query hangs: the run stops at once, its checkpoint saved, instead
 * of waiting up to `prometheus.timeout` (here 10 minutes) for a Prometheus that never answers. The
 * stand-in answers the rule's query until the drain is under way (the sandbox's own move records),
 * then holds every query; SIGINT goes once a query is held.
 */
import { appendFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { runCli, sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';

describe('Ctrl-C during a Prometheus query', { timeout: 120_000 }, () => {
  it('abandons the query and stops the run with its checkpoint saved (exit 130)', async () => {
    const dir = tempDir('prom-abort');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const sandbox = await startSandbox({
      seed: writeSeed(dir, { projects: 200, snippets: 0, groups: 0 }),
      workers: 2,
      moveDurationMs: 100,
    });
    onTestFinished(() => sandbox.close());
    const moves = () => (sandbox.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number }).n;

    let hold = false;
    const held: ServerResponse[] = [];
    let onHeld: () => void = () => undefined;
    const firstHeld = new Promise<void>((done) => (onHeld = done));
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (!hold && moves() >= 3) hold = true;
        if (hold) {
          held.push(res);
          onHeld();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: 'success', data: { resultType: 'scalar', result: [0, '0'] } }));
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    onTestFinished(
      () =>
        new Promise<void>((done) => {
          server.closeAllConnections();
          server.close(() => done());
        }),
    );
    const promUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const plan = writePlan(dir, { concurrency: 2 });
    appendFileSync(
      plan,
      `prometheus:\n  url: ${promUrl}\n  timeout: 10m\nthrottle:\n  health_every: 100ms\n  rules:\n    - {name: gate, query: 'max(test_gate)', above: 0.5, action: pause}\n`,
    );
    const run = await runCli(['run', plan], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
      onStart: (child) => void firstHeld.then(() => child.kill('SIGINT')),
    });
    expect(run.code, run.stdout + run.stderr).toBe(130);
    expect(held.length).toBeGreaterThan(0);
    // A query abandoned because the run stops is no failed reading: no warning, no error recorded.
    expect(run.stderr).not.toMatch(/warning: rule gate/);
    const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
    const events = store.readEvents(0, 1_000_000);
    store.close();
    expect(events.some((e) => e.type === 'run.interrupted')).toBe(true);
    expect(events.filter((e) => e.type === 'rule.changed' && e.data['status'] === 'error')).toEqual([]);
    // And the drain really was under way when it stopped: the sandbox has its moves, not all of them.
    expect(moves()).toBeGreaterThanOrEqual(3);
    expect(moves()).toBeLessThan(200);
  });
});
