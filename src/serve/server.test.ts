import { request } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { COOKIE, PAGE_HEADER, cookieName, cookieOf } from './auth.js';
import { servedRun } from './runs.js';
import { CONSOLE_JS } from './assets.js';
import { CSP, controlOf, startConsole } from './server.js';
import type { ConsoleControl, RunReader } from './server.js';

const TOKEN = 'console-token-for-the-tests-0123456789abcdef';
const RUN = servedRun('/tmp/shardmove-serve-test/it.db', null, null);

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function call(
  server: Server,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function console_(readOnly = false): Promise<{ server: Server; controls: ConsoleControl[]; origin: string }> {
  const controls: ConsoleControl[] = [];
  const reader: RunReader = {
    status: () => ({ state: 'running', total: 3 }),
    text: () => 'Plan it: running',
    headline: () => ({ name: 'it', state: 'running', headline: 'RUNNING' }),
    reportHtml: () => '<!doctype html><p>report</p>',
    reportJson: () => ({ report: true }),
    caps: () => [{ at: 0, cap: 4, ceiling: 4, limit: 'plan', reason: "the plan's move.concurrency" }],
    weights: () => ['', 'Weights before: default=100', 'Weights now:    cluster=100'],
    control: (_run, c) => {
      controls.push(c);
      return `did ${c.action}`;
    },
  };
  const server = await startConsole({ runs: [RUN], reader, token: TOKEN, readOnly }, '127.0.0.1', 0);
  servers.push(server);
  const { port } = server.address() as AddressInfo;
  return { server, controls, origin: `http://127.0.0.1:${port}` };
}

const cookie = { Cookie: `${cookieName(TOKEN)}=${TOKEN}` };

/** The page token of a page the console served. */
async function pageToken(server: Server): Promise<string> {
  const page = await call(server, 'GET', '/', cookie);
  const m = /<meta name="shardmove-page" content="([^"]+)">/.exec(page.body);
  if (!m) throw new Error('no page token in the page');
  return m[1] as string;
}

const ROUTES = [
  ['GET', '/'],
  ['GET', '/assets/console.js'],
  ['GET', '/assets/console.css'],
  ['GET', '/api/runs'],
  ['GET', `/api/runs/${RUN.id}`],
  ['GET', `/api/runs/${RUN.id}/text`],
  ['GET', `/api/runs/${RUN.id}/report.html`],
  ['GET', `/api/runs/${RUN.id}/report`],
  ['GET', `/api/runs/${RUN.id}/caps`],
  ['GET', `/api/runs/${RUN.id}/weights`],
  ['POST', `/api/runs/${RUN.id}/control`],
  ['GET', '/no/such/route'],
] as const;

describe('the console: who may use it', () => {
  it('answers 401 to every route without the token, and 403 with a wrong one, saying why in JSON', async () => {
    const { server } = await console_();
    for (const [method, path] of ROUTES) {
      const none = await call(server, method, path);
      expect(none.status, `${method} ${path}`).toBe(401);
      expect(JSON.parse(none.body)).toMatchObject({ error: expect.stringContaining('no token') });
      const wrong = await call(server, method, path, { Authorization: 'Bearer not-the-token' });
      expect(wrong.status, `${method} ${path}`).toBe(403);
      const badCookie = await call(server, method, path, { Cookie: `${cookieName(TOKEN)}=not-the-token` });
      expect(badCookie.status, `${method} ${path}`).toBe(401);
      // A right cookie does not make a wrong Authorization header right.
      const mixed = await call(server, method, path, { ...cookie, Authorization: 'Bearer nope' });
      expect(mixed.status, `${method} ${path}`).toBe(403);
    }
  });

  it('turns the printed URL into an HttpOnly, SameSite=Strict cookie and takes the token out of the address bar', async () => {
    const { server } = await console_();
    const given = await call(server, 'GET', `/?token=${TOKEN}`);
    expect(given.status).toBe(303);
    expect(given.headers.location).toBe('/');
    const set = String(given.headers['set-cookie']);
    expect(cookieOf(set.split(';')[0], cookieName(TOKEN))).toBe(TOKEN);
    // Another console's cookie (another port of the same host) has another name: both stay.
    expect(cookieName('another-console-token')).not.toBe(cookieName(TOKEN));
    expect(cookieName(TOKEN).startsWith(`${COOKIE}_`)).toBe(true);
    const other = await call(server, 'GET', '/api/runs', { Cookie: `${COOKIE}=${TOKEN}` });
    expect(other.status).toBe(401);
    expect(set).toContain('HttpOnly');
    expect(set).toContain('SameSite=Strict');
    expect((await call(server, 'GET', '/?token=wrong')).status).toBe(403);
    const page = await call(server, 'GET', '/', cookie);
    expect(page.status).toBe(200);
    expect(page.body).not.toContain(TOKEN);
  });

  it('serves the JSON API to a Bearer token, and every answer carries the strict policy, no-store and no framing', async () => {
    const { server } = await console_();
    const bearer = { Authorization: `Bearer ${TOKEN}` };
    const list = await call(server, 'GET', '/api/runs', bearer);
    expect(JSON.parse(list.body)).toEqual({
      readOnly: false,
      runs: [{ id: RUN.id, file: RUN.file, plan: null, name: 'it', state: 'running', headline: 'RUNNING' }],
    });
    expect(JSON.parse((await call(server, 'GET', `/api/runs/${RUN.id}`, bearer)).body)).toEqual({
      state: 'running',
      total: 3,
    });
    for (const [method, path] of ROUTES.filter(([m]) => m === 'GET')) {
      const a = await call(server, method, path, bearer);
      if (path.endsWith('report.html')) expect(a.headers['content-security-policy']).toContain('sandbox allow-scripts');
      else expect(a.headers['content-security-policy'], path).toBe(CSP);
      expect(a.headers['cache-control']).toBe('no-store');
      expect(a.headers['x-frame-options']).toBe('DENY');
      expect(a.headers['x-content-type-options']).toBe('nosniff');
    }
    expect((await call(server, 'GET', '/api/runs/000000000000', bearer)).status).toBe(404);
  });
});

describe('the console: control', () => {
  it("takes a control only from its own page: the token, the console's Origin and a page token it handed out", async () => {
    const { server, controls, origin } = await console_();
    const page = await pageToken(server);
    const path = `/api/runs/${RUN.id}/control`;
    const body = JSON.stringify({ action: 'pause' });
    const json = { 'Content-Type': 'application/json' };
    const cases: [Record<string, string>, number][] = [
      [{ ...cookie, ...json, [PAGE_HEADER]: page }, 403], // no Origin
      [{ ...cookie, ...json, [PAGE_HEADER]: page, Origin: 'https://evil.example' }, 403],
      [{ ...cookie, ...json, [PAGE_HEADER]: page, Origin: 'null' }, 403],
      [{ ...cookie, ...json, Origin: origin }, 403], // no page token
      [{ ...cookie, ...json, Origin: origin, [PAGE_HEADER]: 'made-up' }, 403],
      [{ ...json, Origin: origin, [PAGE_HEADER]: page }, 401], // no token
      [{ ...cookie, 'Content-Type': 'text/plain', Origin: origin, [PAGE_HEADER]: page }, 415], // a form's type
    ];
    for (const [headers, status] of cases) {
      const a = await call(server, 'POST', path, headers, body);
      expect(a.status, JSON.stringify(headers)).toBe(status);
    }
    expect(controls).toEqual([]);
    const ok = await call(server, 'POST', path, { ...cookie, ...json, Origin: origin, [PAGE_HEADER]: page }, body);
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ ok: true, says: 'did pause' });
    expect(controls).toEqual([{ action: 'pause' }]);
  });

  it('has no control at all under --read-only, and its page shows none', async () => {
    const { server, controls, origin } = await console_(true);
    const page = await pageToken(server);
    const a = await call(
      server,
      'POST',
      `/api/runs/${RUN.id}/control`,
      { ...cookie, 'Content-Type': 'application/json', Origin: origin, [PAGE_HEADER]: page },
      JSON.stringify({ action: 'stop' }),
    );
    expect(a.status).toBe(404);
    expect(JSON.parse(a.body).error).toContain('read-only');
    expect(controls).toEqual([]);
    expect((await call(server, 'GET', '/', cookie)).body).toContain('name="shardmove-read-only" content="true"');
  });

  it('refuses a body too large, not JSON, or not a control, naming the problem', async () => {
    const { server, controls, origin } = await console_();
    const page = await pageToken(server);
    const headers = { ...cookie, 'Content-Type': 'application/json', Origin: origin, [PAGE_HEADER]: page };
    const path = `/api/runs/${RUN.id}/control`;
    const big = await call(server, 'POST', path, headers, JSON.stringify({ action: 'pause', pad: 'x'.repeat(5000) }));
    expect(big.status).toBe(413);
    const notJson = await call(server, 'POST', path, headers, '{pause');
    expect([notJson.status, JSON.parse(notJson.body).error]).toEqual([400, 'the body is not valid JSON']);
    const wrong = await call(server, 'POST', path, headers, JSON.stringify({ action: 'delete' }));
    expect(wrong.status).toBe(400);
    expect(JSON.parse(wrong.body).error).toContain('"action" must be');
    expect(controls).toEqual([]);
  });
});

describe("the page's script", () => {
  it('is valid JavaScript (it is a string in assets.ts: an escape written once too few breaks it)', () => {
    expect(() => new Function(CONSOLE_JS)).not.toThrow();
  });
});

describe('controlOf', () => {
  it.each([
    [{ action: 'pause' }, { action: 'pause' }],
    [{ action: 'unpause' }, { action: 'unpause' }],
    [{ action: 'stop' }, { action: 'stop' }],
    [
      { action: 'concurrency', value: 12 },
      { action: 'concurrency', value: 12 },
    ],
    [
      { action: 'concurrency', value: 'plan' },
      { action: 'concurrency', value: null },
    ],
    [
      { action: 'concurrency', value: null },
      { action: 'concurrency', value: null },
    ],
    // Hands a pinned cap back to move.concurrency: auto's limiter, as control --concurrency auto does.
    [
      { action: 'concurrency', value: 'auto' },
      { action: 'concurrency', value: null },
    ],
  ])('takes %j', (body, control) => {
    expect(controlOf(body)).toEqual(control);
  });

  it.each([
    [null],
    [[]],
    ['pause'],
    [{}],
    [{ action: 'concurrency', value: 0 }],
    [{ action: 'concurrency', value: 2.5 }],
    [{ action: 'concurrency', value: 1001 }],
    [{ action: 'concurrency', value: '8' }],
    [{ action: 'concurrency', value: 'AUTO' }],
  ])('refuses %j', (body) => {
    expect(() => controlOf(body)).toThrow();
  });
});
