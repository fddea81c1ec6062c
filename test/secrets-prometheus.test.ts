/**
 * Secrets hygiene with a Prometheus (or a proxy in front of it) that echoes what it was sent: every
 * error it answers quotes the request's Authorization header, and the GitLab token a shared proxy
 * saw before. Two runs: one whose rule query is refused in pre-flight (the refusal lands in the
 * checkpoint's snapshot, stdout, the events file and `status`/`report`), one whose Prometheus fails
 * mid-run for a while (rule.changed, cap.changed, the stderr warning) and recovers. Then status
 * (text and JSON) and report (JSON and HTML) of both, and every byte written or printed is searched
 * for the Prometheus token (read from a file for one run, from the environment for the other) and
 * the GitLab token: zero hits.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { SECRETS } from './support/secrets-harness.js';
import { ALL_KNOWN, expectCompleted, leaksOf, planFor, scenario } from './support/secrets-scenario.js';
import { movesFinished } from './support/secrets-scenario.js';
import { flat } from './support/cli-harness.js';

/** Distinctive: occurs nowhere but in the token file, the environment and the stand-in's requests. */
const PROM_TOKEN = 'promtok-Wq4Zr8Xm2Kv6Jd9Nc3Bt7Hy';

type Mode = 'ok' | 'refuse' | 'unavailable';

/**
 * A Prometheus stand-in on loopback: answers `max(test_gate)` with 0 while `ok`, and otherwise an
 * API error (bad_data, or unavailable with 503) whose text echoes every request header and the
 * GitLab token, raw, URL-encoded and cut short.
 */
async function echoingPrometheus(): Promise<{ url: string; mode: Mode; echoed: number; sawToken: boolean }> {
  const state = { url: '', mode: 'ok' as Mode, echoed: 0, sawToken: false };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const auth = String(req.headers['authorization'] ?? '');
      if (auth.includes(PROM_TOKEN)) state.sawToken = true;
      if (state.mode === 'ok') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            status: 'success',
            data: { resultType: 'vector', result: [{ metric: {}, value: [0, '0'] }] },
          }),
        );
        return;
      }
      state.echoed += 1;
      const headers = Object.entries(req.headers)
        .map(([k, v]) => `${k}: ${String(v)}`)
        .join('; ');
      const refuse = state.mode === 'refuse';
      res.writeHead(refuse ? 400 : 503, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          status: 'error',
          errorType: refuse ? 'bad_data' : 'unavailable',
          error: `proxy echo: ${headers}; encoded ${encodeURIComponent(auth)}; cut short ${auth.slice(0, 21)}...; upstream PRIVATE-TOKEN ${SECRETS.pat}`,
        }),
      );
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
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

const promSection = (url: string, token: string) =>
  `prometheus:\n  url: ${url}\n  ${token}\n  timeout: 5s\n  on_error: pause\n` +
  "throttle:\n  health_every: 100ms\n  rules:\n    - {name: gate, query: 'max(test_gate)', above: 0.5, action: pause}\n";

describe('a Prometheus that echoes the request leaks no secret', { timeout: 180_000 }, () => {
  it('refused in pre-flight, failing mid-run: nothing written or printed holds a token', async () => {
    const s = await scenario('secrets-prom', ['--move-duration', '60', '--workers', '10'], { projects: 40 });
    const prom = await echoingPrometheus();
    const env = { SHARDMOVE_TOKEN: SECRETS.pat, PROM_TOKEN };

    // Run 1: the token from a file; every query refused, echoing it.
    const refusedPlan = planFor(s, 'env', { name: 'refused' });
    const tokenFile = join(s.work, 'prom-token.txt');
    writeFileSync(tokenFile, `${PROM_TOKEN}\n`, { mode: 0o600 });
    s.tokenFiles.add(tokenFile);
    writeFileSync(refusedPlan, `${readPlan(refusedPlan)}${promSection(prom.url, 'token_file: prom-token.txt')}`);
    prom.mode = 'refuse';
    const refused = await s.run('refused run', ['run', refusedPlan, '--events', 'refused.events.jsonl'], env);
    expect(refused.code, refused.stdout + refused.stderr).toBe(1);
    expect(flat(refused.stdout + refused.stderr)).toMatch(
      /Prometheus refused the query \(400 bad_data\): proxy echo: /,
    );
    expect(flat(refused.stdout + refused.stderr)).toContain('Bearer [REDACTED]');

    // Run 2: the token from the environment; Prometheus answers, then fails mid-run, then answers again.
    const midPlan = planFor(s, 'env', { name: 'mid' });
    writeFileSync(midPlan, `${readPlan(midPlan)}${promSection(prom.url, 'token: ${PROM_TOKEN}')}`);
    prom.mode = 'ok';
    const mid = await s.run('mid-run failure', ['run', midPlan, '--events', 'mid.events.jsonl'], env, () => {
      void (async () => {
        while ((await movesFinished(s.sandbox.url)) < 5) await new Promise((r) => setTimeout(r, 20));
        prom.mode = 'unavailable';
        const from = prom.echoed;
        while (prom.echoed < from + 5) await new Promise((r) => setTimeout(r, 20));
        prom.mode = 'ok';
      })();
    });
    expect(mid.code, mid.stdout + mid.stderr).toBe(0);
    expect(mid.stderr).toMatch(/warning: rule gate: Prometheus refused the query \(503 unavailable\): proxy echo: /);
    await expectCompleted(s.sandbox.url);

    for (const name of ['refused', 'mid']) {
      const plan = join(s.work, `${name}.yaml`);
      expect((await s.run(`status ${name}`, ['status', plan], env)).code).toBeLessThanOrEqual(1);
      expect((await s.run(`status --json ${name}`, ['status', plan, '--json'], env)).code).toBeLessThanOrEqual(1);
      expect((await s.run(`report --json ${name}`, ['report', plan, '--json'], env)).code).toBeLessThanOrEqual(1);
      const html = join(s.work, `${name}.html`);
      expect((await s.run(`report --html ${name}`, ['report', plan, '--html', html], env)).code).toBeLessThanOrEqual(1);
    }

    // The situation was real: the stand-in got the token and echoed it many times.
    expect(prom.sawToken).toBe(true);
    expect(prom.echoed).toBeGreaterThanOrEqual(6);
    const { leaks, scanned } = leaksOf(s, [...ALL_KNOWN, PROM_TOKEN]);
    for (const f of ['refused.db', 'mid.db', 'refused.log', 'mid.log'])
      expect(scanned).toContain(join(s.work, 'state', f));
    for (const f of ['refused.events.jsonl', 'mid.events.jsonl', 'refused.html', 'mid.html'])
      expect(scanned).toContain(join(s.work, f));
    expect(leaks).toEqual([]);
  });
});

function readPlan(file: string): string {
  return readFileSync(file, 'utf8');
}
