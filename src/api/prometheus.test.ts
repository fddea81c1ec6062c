import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { resolvedSecrets } from '../secrets/registry.js';
import { MAX_ANSWER_BYTES, createPrometheusClient, parseAnswer, parseSampleValue } from './prometheus.js';

/** A loopback server standing in for Prometheus (or a proxy in front of it); closed when the test ends. */
async function standIn(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handle);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  onTestFinished(
    () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const TOKEN = 'prom-Tk7Rq2Vx9Lm4Nw8Zp3Hc6Jb1';

describe('the Prometheus client', () => {
  it('scrubs the token from an answer that echoes the Authorization header, in every form', async () => {
    const url = await standIn((req, res) => {
      const auth = String(req.headers['authorization']);
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          status: 'error',
          errorType: 'bad_data',
          error: `proxy refused: Authorization: ${auth}; as sent: ${encodeURIComponent(auth)}`,
        }),
      );
    });
    const client = createPrometheusClient({ url, token: TOKEN, timeoutMs: 5000 });
    onTestFinished(() => client.close());
    const err = (await client.query('up').catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(
      /^Prometheus refused the query \(400 bad_data\): proxy refused: Authorization: Bearer /,
    );
    expect(err.message).not.toContain(TOKEN);
    expect(err.message).not.toContain(TOKEN.slice(0, 12));
    expect(err.message).toContain('[REDACTED]');
  });

  it("scrubs every secret the process resolved, not only its own token (the plan's GitLab token echoed back)", async () => {
    const gitlab = 'glpat-Pm3Xs8Qw2Lk5Rt9Vb4Nz';
    resolvedSecrets.add(gitlab);
    const url = await standIn((_req, res) => {
      res.writeHead(422, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'error', errorType: 'execution', error: `saw ${gitlab} somewhere` }));
    });
    const client = createPrometheusClient({ url, token: null, timeoutMs: 5000 });
    onTestFinished(() => client.close());
    const err = (await client.query('up').catch((e: unknown) => e)) as Error;
    expect(err.message).toBe('Prometheus refused the query (422 execution): saw [REDACTED] somewhere');
  });

  it('stops reading an answer past its cap, says so, and closes the connection', async () => {
    let sent = 0;
    let closedEarly: Promise<boolean> | null = null;
    const total = 64 * MAX_ANSWER_BYTES;
    const url = await standIn((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      closedEarly = new Promise((done) => {
        res.on('close', () => done(sent < total));
        const pump = () => {
          while (sent < total) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.write('{"status":"success","data":{"resultType":"vector","result":[');
        pump();
      });
    });
    const client = createPrometheusClient({ url, token: null, timeoutMs: 30_000 });
    onTestFinished(() => client.close());
    const err = (await client.query('{__name__=~".+"}').catch((e: unknown) => e)) as Error & { code?: string };
    expect(err.code).toBe('SHARDMOVE_PROMETHEUS_INVALID_RESPONSE');
    expect(err.message).toMatch(/answered more than 8 MiB; the read was stopped/);
    // The stand-in saw its connection closed long before it had written the whole answer.
    expect(await closedEarly).toBe(true);
    expect(sent).toBeLessThan(total / 2);
  });

  it("abandons a query in flight when the run's signal aborts, with the signal's reason", async () => {
    let arrived: () => void = () => undefined;
    const held = new Promise<void>((done) => (arrived = done));
    let gone: () => void = () => undefined;
    const abandoned = new Promise<void>((done) => (gone = done));
    // Never answers: the query waits for the client's own decision.
    const url = await standIn((req) => {
      req.socket.once('close', () => gone());
      arrived();
    });
    const controller = new AbortController();
    const client = createPrometheusClient({ url, token: null, timeoutMs: 600_000, signal: controller.signal });
    onTestFinished(() => client.close());
    const query = client.query('up').catch((e: unknown) => e);
    await held;
    const reason = new Error('received SIGINT');
    controller.abort(reason);
    expect(await query).toBe(reason);
    // The stand-in sees the request go away.
    await abandoned;
    // And a query after the abort is not sent at all.
    expect(await client.query('up').catch((e: unknown) => e)).toBe(reason);
  });
});

describe("Prometheus's values", () => {
  it('reads +Inf, -Inf and NaN as Prometheus writes them', () => {
    expect(parseSampleValue('+Inf')).toBe(Number.POSITIVE_INFINITY);
    expect(parseSampleValue('-Inf')).toBe(Number.NEGATIVE_INFINITY);
    expect(parseSampleValue('NaN')).toBeNaN();
    expect(parseSampleValue('1.5e3')).toBe(1500);
    expect(parseSampleValue('')).toBeNaN();
    expect(parseSampleValue(null)).toBeNaN();
    const answer = (value: string) =>
      JSON.stringify({
        status: 'success',
        data: { resultType: 'vector', result: [{ metric: { storage: 'cluster' }, value: [1, value] }] },
      });
    expect(parseAnswer(200, answer('+Inf'), 'http://p')[0]!.value).toBe(Number.POSITIVE_INFINITY);
    expect(
      parseAnswer(200, JSON.stringify({ status: 'success', data: { resultType: 'scalar', result: [1, '-Inf'] } }), 'p'),
    ).toEqual([{ value: Number.NEGATIVE_INFINITY, labels: {} }]);
  });
});
