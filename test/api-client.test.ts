/**
 * The client over real sockets (a local node:http server on port 0, not the sandbox): undici's own
 * timeouts fire, error bodies are consumed so keep-alive sockets are reused, and a dropped
 * connection makes a POST ambiguous while a GET is retried.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createStaticTokenProvider } from '../src/api/auth.js';
import { createClient } from '../src/api/client.js';
import type { ApiClient } from '../src/api/client.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const open: { server: Server; client?: ApiClient }[] = [];

async function start(handler: Handler): Promise<{ url: string; sockets: () => number; server: Server }> {
  let sockets = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(req, res));
  });
  server.on('connection', () => sockets++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push({ server });
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, sockets: () => sockets, server };
}

function client(url: string, timeoutMs = 2000): ApiClient {
  const c = createClient({
    baseUrl: url,
    credentials: createStaticTokenProvider('glpat-real'),
    timeoutMs,
    sleep: () => Promise.resolve(),
    retry: { maxAttempts: 2 },
  });
  const entry = open.at(-1);
  if (entry) entry.client = c;
  return c;
}

afterEach(async () => {
  for (const { server, client: c } of open.splice(0)) {
    await c?.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('client over real HTTP', () => {
  it('reuses keep-alive sockets across success and error answers (bodies consumed)', async () => {
    let n = 0;
    const { url, sockets } = await start((_req, res) => {
      n++;
      const status = n % 3 === 0 ? 404 : n % 3 === 1 ? 200 : 400;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: 'x'.repeat(64 * 1024) }));
    });
    const c = client(url);
    for (let i = 0; i < 12; i++) await c.request({ method: 'GET', path: '/x' }).catch(() => undefined);
    expect(n).toBe(12);
    // An unread body pins its socket: each request would then need a fresh one (up to 12).
    expect(sockets()).toBeLessThanOrEqual(2);
  });

  it('times out a silent server: GET retried then SHARDMOVE_API_TIMEOUT, POST ambiguous', async () => {
    let seen = 0;
    const { url } = await start(() => {
      seen++; // never answer
    });
    const c = client(url, 150);
    await expect(c.request({ method: 'GET', path: '/slow' })).rejects.toMatchObject({ code: 'SHARDMOVE_API_TIMEOUT' });
    expect(seen).toBe(2);
    await expect(c.request({ method: 'POST', path: '/slow', body: {} })).rejects.toMatchObject({
      code: 'SHARDMOVE_API_AMBIGUOUS',
    });
    expect(seen).toBe(3);
  });

  it('makes a POST ambiguous when the connection drops after the request, and retries a GET', async () => {
    let n = 0;
    const { url } = await start((req, res) => {
      n++;
      if (n % 2 === 1) {
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    const c = client(url);
    await expect(c.request({ method: 'POST', path: '/moves', body: {} })).rejects.toMatchObject({
      code: 'SHARDMOVE_API_AMBIGUOUS',
    });
    expect(n).toBe(1);
    await c.request({ method: 'GET', path: '/moves' }); // n=2: ok
    const res = await c.request({ method: 'GET', path: '/moves' }); // n=3 dropped, n=4 ok
    expect(res.body).toEqual({ ok: true });
    expect(n).toBe(4);
  });

  it('aborts an in-flight request at once when the client-wide signal fires', async () => {
    const { url } = await start(() => undefined);
    const controller = new AbortController();
    const c = createClient({
      baseUrl: url,
      credentials: createStaticTokenProvider('glpat-real'),
      timeoutMs: 10_000,
      signal: controller.signal,
    });
    open[open.length - 1]!.client = c;
    const started = Date.now();
    setTimeout(() => controller.abort(new Error('shutting down')), 50);
    await expect(c.request({ method: 'GET', path: '/slow' })).rejects.toThrow('shutting down');
    expect(Date.now() - started).toBeLessThan(2000);
    await expect(c.request({ method: 'GET', path: '/slow' })).rejects.toThrow('shutting down');
  });

  it('reports a refused connection on POST as a network error: nothing was sent', async () => {
    const { url, server } = await start(() => undefined);
    server.close();
    open.pop();
    const c = createClient({ baseUrl: url, credentials: createStaticTokenProvider('glpat-real'), timeoutMs: 500 });
    try {
      await expect(c.request({ method: 'POST', path: '/moves' })).rejects.toMatchObject({
        code: 'SHARDMOVE_API_NETWORK',
        causeCode: 'ECONNREFUSED',
      });
    } finally {
      await c.close();
    }
  });
});
