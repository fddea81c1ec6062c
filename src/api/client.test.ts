import { MockAgent, errors as undiciErrors } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createStaticTokenProvider } from './auth.js';
import { backoff, createClient, DEFAULT_RETRY_POLICY, gitlabMessage, parseRetryAfter } from './client.js';
import type { ClientOptions, RequestEvent } from './client.js';
import { ApiAmbiguousError, ApiError, ApiHttpError } from './errors.js';

const ORIGIN = 'http://gitlab.test';
const TOKEN = 'glpat-SECRETSECRETSECRET01';
const JSON_HEADERS = { headers: { 'content-type': 'application/json' } };

let agent: MockAgent | undefined;

function setup(extra: Partial<ClientOptions> = {}) {
  const mock = new MockAgent();
  agent = mock;
  mock.disableNetConnect();
  const pool = mock.get(ORIGIN);
  const sleeps: number[] = [];
  const events: RequestEvent[] = [];
  const client = createClient({
    baseUrl: ORIGIN,
    credentials: createStaticTokenProvider(TOKEN),
    timeoutMs: 1000,
    dispatcher: mock,
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    random: () => 1,
    now: () => Date.parse('2026-11-22T12:00:00Z'),
    onRequest: (e) => events.push(e),
    onResponse: (e) => events.push(e),
    ...extra,
  });
  return { pool, client, sleeps, events };
}

async function caught(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

afterEach(async () => {
  // Every interceptor used: no request was skipped and none was sent twice.
  agent?.assertNoPendingInterceptors();
  await agent?.close();
  agent = undefined;
});

describe('requests', () => {
  it('sends the token, sudo, user agent and JSON body under /api/v4 of a base path', async () => {
    const { pool, client } = setup({ baseUrl: `${ORIGIN}/gitlab/`, sudo: 'root' });
    pool
      .intercept({
        path: '/gitlab/api/v4/application/settings',
        method: 'PUT',
        headers: {
          'private-token': TOKEN,
          sudo: 'root',
          'user-agent': /^shardmove\/\d+\.\d+\.\d+/,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ a: 1 }),
      })
      .reply(200, { ok: true }, JSON_HEADERS);
    const res = await client.request({ method: 'PUT', path: '/application/settings', body: { a: 1 } });
    expect(res.body).toEqual({ ok: true });
  });

  it('puts root paths outside /api/v4 and sends no credentials when anonymous', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/-/readiness?all=1', method: 'GET', headers: (h) => !('private-token' in h) })
      .reply(503, { status: 'failed' }, JSON_HEADERS);
    const res = await client.request({
      method: 'GET',
      path: '/-/readiness',
      root: true,
      anonymous: true,
      query: { all: 1 },
      acceptStatus: [503],
    });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ status: 'failed' });
  });
});

describe('retries (GET and PUT)', () => {
  it('retries a GET on 503 with exponential backoff', async () => {
    const { pool, client, sleeps } = setup();
    pool.intercept({ path: '/api/v4/version', method: 'GET' }).reply(503, 'down').times(2);
    pool.intercept({ path: '/api/v4/version', method: 'GET' }).reply(200, { version: '17.9.0' }, JSON_HEADERS);
    const res = await client.request({ method: 'GET', path: '/version' });
    expect(res.body).toEqual({ version: '17.9.0' });
    expect(sleeps).toEqual([500, 1000]);
    expect(client.stats()).toEqual({ requests: 3, mutating: 0 });
  });

  it('honours Retry-After in seconds and as an HTTP date on 429', async () => {
    const { pool, client, sleeps } = setup();
    pool
      .intercept({ path: '/api/v4/user', method: 'GET' })
      .reply(429, 'Retry later', { headers: { 'retry-after': '7' } });
    pool
      .intercept({ path: '/api/v4/user', method: 'GET' })
      .reply(429, 'Retry later', { headers: { 'retry-after': 'Sun, 22 Nov 2026 12:00:03 GMT' } });
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(200, { id: 1 }, JSON_HEADERS);
    await client.request({ method: 'GET', path: '/user' });
    expect(sleeps).toEqual([7000, 3000]);
  });

  it('gives up after maxAttempts with a retryable HTTP error', async () => {
    const { pool, client, sleeps } = setup({ retry: { maxAttempts: 3 } });
    pool
      .intercept({ path: '/api/v4/user', method: 'GET' })
      .reply(502, { message: 'bad gateway' }, JSON_HEADERS)
      .times(3);
    const err = await caught(client.request({ method: 'GET', path: '/user' }));
    expect(err).toBeInstanceOf(ApiHttpError);
    expect(err.code).toBe('SHARDMOVE_API_HTTP');
    expect(err.retryable).toBe(true);
    expect((err as ApiHttpError).status).toBe(502);
    expect(sleeps).toHaveLength(2);
  });

  it('gives up on 429 with a rate-limited error carrying Retry-After', async () => {
    const { pool, client } = setup({ retry: { maxAttempts: 1 } });
    pool
      .intercept({ path: '/api/v4/user', method: 'GET' })
      .reply(429, 'Retry later', { headers: { 'retry-after': '12' } });
    const err = await caught(client.request({ method: 'GET', path: '/user' }));
    expect(err.code).toBe('SHARDMOVE_API_RATE_LIMITED');
    expect(err).toMatchObject({ retryAfterMs: 12000, retryable: true });
  });

  it('retries a PUT on a connection reset and a GET on a timeout', async () => {
    const { pool, client } = setup();
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    pool.intercept({ path: '/api/v4/application/settings', method: 'PUT' }).replyWithError(reset);
    pool.intercept({ path: '/api/v4/application/settings', method: 'PUT' }).reply(200, {}, JSON_HEADERS);
    await client.request({ method: 'PUT', path: '/application/settings', body: {} });
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).replyWithError(new undiciErrors.HeadersTimeoutError());
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(200, {}, JSON_HEADERS);
    await client.request({ method: 'GET', path: '/user' });
    expect(client.stats()).toEqual({ requests: 4, mutating: 2 });
  });

  it('ends with a timeout error once the attempts run out', async () => {
    const { pool, client, events } = setup({ retry: { maxAttempts: 2 } });
    pool
      .intercept({ path: '/api/v4/user', method: 'GET' })
      .replyWithError(new undiciErrors.BodyTimeoutError())
      .times(2);
    const err = await caught(client.request({ method: 'GET', path: '/user' }));
    expect(err.code).toBe('SHARDMOVE_API_TIMEOUT');
    expect(err.message).toContain('body timeout');
    expect(events.filter((e) => e.status === null).map((e) => e.errorCode)).toEqual([
      'SHARDMOVE_API_TIMEOUT',
      'SHARDMOVE_API_TIMEOUT',
    ]);
  });

  it('does not retry 4xx answers', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/api/v4/projects/9', method: 'GET' })
      .reply(404, { message: '404 Project Not Found' }, JSON_HEADERS);
    const err = await caught(client.request({ method: 'GET', path: '/projects/9' }));
    expect(err).toMatchObject({
      code: 'SHARDMOVE_API_NOT_FOUND',
      retryable: false,
      gitlabMessage: '404 Project Not Found',
    });
    expect(client.stats().requests).toBe(1);
  });

  it('stops waiting when the signal aborts during backoff', async () => {
    const controller = new AbortController();
    const { pool, client } = setup({
      sleep: (_ms, signal) => {
        controller.abort(new Error('stop'));
        return Promise.reject(signal?.reason as Error);
      },
    });
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(503, '');
    await expect(client.request({ method: 'GET', path: '/user', signal: controller.signal })).rejects.toThrow('stop');
  });
});

describe('POST and DELETE are sent once', () => {
  it('turns a 503 on POST into an ambiguous error without retrying', async () => {
    const { pool, client, sleeps } = setup();
    pool.intercept({ path: '/api/v4/projects/1/repository_storage_moves', method: 'POST' }).reply(503, 'oops');
    const err = await caught(
      client.request({ method: 'POST', path: '/projects/1/repository_storage_moves', body: {} }),
    );
    expect(err).toBeInstanceOf(ApiAmbiguousError);
    expect(err).toMatchObject({ code: 'SHARDMOVE_API_AMBIGUOUS', retryable: false, status: 503 });
    expect(sleeps).toEqual([]);
    expect(client.stats()).toEqual({ requests: 1, mutating: 1 });
  });

  it('turns a reset or a timeout after sending into an ambiguous error', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/api/v4/x', method: 'POST' })
      .replyWithError(Object.assign(new Error('socket hang up'), { code: 'UND_ERR_SOCKET' }));
    expect((await caught(client.request({ method: 'POST', path: '/x' }))).code).toBe('SHARDMOVE_API_AMBIGUOUS');
    pool.intercept({ path: '/api/v4/x', method: 'DELETE' }).replyWithError(new undiciErrors.HeadersTimeoutError());
    expect((await caught(client.request({ method: 'DELETE', path: '/x' }))).code).toBe('SHARDMOVE_API_AMBIGUOUS');
  });

  it('reports a refused connection as a plain network error: nothing was sent', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/api/v4/x', method: 'POST' })
      .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    const err = await caught(client.request({ method: 'POST', path: '/x' }));
    expect(err).toMatchObject({ code: 'SHARDMOVE_API_NETWORK', retryable: true, causeCode: 'ECONNREFUSED' });
  });

  it('reports a 429 on POST as rate limited (not performed), without retrying', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/api/v4/x', method: 'POST' })
      .reply(429, 'Retry later', { headers: { 'retry-after': '5' } });
    const err = await caught(client.request({ method: 'POST', path: '/x' }));
    expect(err.code).toBe('SHARDMOVE_API_RATE_LIMITED');
    expect(client.stats().requests).toBe(1);
  });
});

describe('read-only (dry run)', () => {
  it('blocks POST, PUT and DELETE before sending, allows GET and declared-safe POSTs', async () => {
    const { pool, client, events } = setup({ readOnly: true });
    for (const method of ['POST', 'PUT', 'DELETE'] as const) {
      const err = await caught(client.request({ method, path: '/projects/1/repository_storage_moves' }));
      expect(err.code).toBe('SHARDMOVE_DRY_RUN_BLOCKED');
    }
    const graphql = await caught(client.request({ method: 'POST', path: '/api/graphql', root: true, body: {} }));
    expect(graphql.code).toBe('SHARDMOVE_DRY_RUN_BLOCKED');
    expect(events).toEqual([]);
    pool.intercept({ path: '/api/v4/admin/token', method: 'POST' }).reply(200, { id: 1 }, JSON_HEADERS);
    pool.intercept({ path: '/api/v4/version', method: 'GET' }).reply(200, { version: '1' }, JSON_HEADERS);
    await client.request({ method: 'POST', path: '/admin/token', body: { token: TOKEN }, readOnlySafe: true });
    await client.request({ method: 'GET', path: '/version' });
    expect(client.stats()).toEqual({ requests: 2, mutating: 0 });
  });
});

describe('errors and secrets', () => {
  it('classifies 401 invalid_token, 403 insufficient_scope and validation hashes', async () => {
    const { pool, client } = setup();
    pool.intercept({ path: '/api/v4/a', method: 'GET' }).reply(
      401,
      {
        error: 'invalid_token',
        error_description: 'Token is expired. You can either do re-authorization or token refresh.',
      },
      JSON_HEADERS,
    );
    pool
      .intercept({ path: '/api/v4/b', method: 'GET' })
      .reply(403, { error: 'insufficient_scope', scope: 'api' }, JSON_HEADERS);
    pool
      .intercept({ path: '/api/v4/c', method: 'POST' })
      .reply(400, { message: { destination_storage_name: ['is not included in the list'] } }, JSON_HEADERS);
    expect(await caught(client.request({ method: 'GET', path: '/a' }))).toMatchObject({
      code: 'SHARDMOVE_API_UNAUTHORIZED',
      invalidToken: true,
      tokenProblem: 'expired',
      description: expect.stringContaining('expired') as unknown,
    });
    expect(await caught(client.request({ method: 'GET', path: '/b' }))).toMatchObject({
      code: 'SHARDMOVE_API_FORBIDDEN',
      scope: 'api',
    });
    const bad = await caught(client.request({ method: 'POST', path: '/c' }));
    expect(bad).toMatchObject({ code: 'SHARDMOVE_API_HTTP', status: 400, retryable: false });
    expect(bad.message).toBe('POST /api/v4/c: HTTP 400: destination_storage_name: is not included in the list');
  });

  it('never lets a token value reach error messages or hook payloads', async () => {
    const { pool, client, events } = setup();
    const other = 'glpat-INSPECTEDTOKEN999';
    pool
      .intercept({ path: (p) => p.startsWith('/api/v4/echo'), method: 'GET' })
      .reply(500, { message: `bad token ${TOKEN}` }, JSON_HEADERS)
      .times(4);
    pool
      .intercept({ path: '/api/v4/admin/token', method: 'POST' })
      .reply(422, { message: `Token type not supported: ${other}` }, JSON_HEADERS);
    const e1 = await caught(
      client.request({ method: 'GET', path: '/echo', query: { private_token: TOKEN, access_token: TOKEN, page: 2 } }),
    );
    const e2 = await caught(
      client.request({ method: 'POST', path: '/admin/token', body: { token: other }, secrets: [other] }),
    );
    const seen = JSON.stringify([
      e1.message,
      e2.message,
      (e1 as ApiHttpError).gitlabMessage,
      (e2 as ApiHttpError).gitlabMessage,
      events,
      String(e1),
      String(e2),
    ]);
    expect(seen).not.toContain(TOKEN);
    expect(seen).not.toContain(other);
    expect(seen).toContain('[REDACTED]');
    expect(events[0]?.path).toBe('/api/v4/echo?page=2');
  });
});

describe('hooks', () => {
  it('reports each attempt with status, duration and error code', async () => {
    const { pool, client, events } = setup();
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(503, '');
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(200, {}, JSON_HEADERS);
    await client.request({ method: 'GET', path: '/user' });
    expect(events).toEqual([
      { method: 'GET', path: '/api/v4/user', attempt: 1, mutating: false },
      {
        method: 'GET',
        path: '/api/v4/user',
        attempt: 1,
        mutating: false,
        status: 503,
        durationMs: 0,
        errorCode: 'SHARDMOVE_API_HTTP',
      },
      { method: 'GET', path: '/api/v4/user', attempt: 2, mutating: false },
      { method: 'GET', path: '/api/v4/user', attempt: 2, mutating: false, status: 200, durationMs: 0, errorCode: null },
    ]);
  });

  it('lets a failing hook surface as itself, not as a network error', async () => {
    const { pool, client } = setup({
      onResponse: () => {
        throw new Error('hook broke');
      },
    });
    pool.intercept({ path: '/api/v4/x', method: 'POST' }).reply(201, {}, JSON_HEADERS);
    await expect(client.request({ method: 'POST', path: '/x' })).rejects.toThrow('hook broke');
  });
});

describe('helpers', () => {
  it('parses Retry-After', () => {
    const now = Date.parse('2026-11-22T12:00:00Z');
    expect(parseRetryAfter('30', now)).toBe(30000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 12:01:00 GMT', now)).toBe(60000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });

  it('caps exponential backoff and applies jitter', () => {
    const p = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 500, maxDelayMs: 2000, jitter: 0.5 };
    expect([1, 2, 3, 4, 10].map((n) => backoff(p, n, () => 1))).toEqual([500, 1000, 2000, 2000, 2000]);
    expect(backoff(p, 3, () => 0)).toBe(1000);
  });

  it('flattens GitLab error bodies', () => {
    expect(gitlabMessage({ message: '404 Not found' })).toBe('404 Not found');
    expect(gitlabMessage({ message: { project: ['is read-only'] } })).toBe('project: is read-only');
    expect(gitlabMessage({ error: 'invalid_token', error_description: 'Token was revoked.' })).toBe(
      'invalid_token: Token was revoked.',
    );
    expect(gitlabMessage('Retry later\n')).toBe('Retry later');
    expect(gitlabMessage(null)).toBeNull();
  });
});

describe('redirects', () => {
  const OLD = '/api/v4/projects/acme%2Fold-name';
  const moved = (location: string) => ({ headers: { location, 'content-type': 'application/json' } });

  it('follows a GET once to the project id on the same origin, with the token, and says where from', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: OLD, method: 'GET' })
      .reply(301, { message: '301 Moved Permanently' }, moved(`${ORIGIN}/api/v4/projects/42`));
    pool
      .intercept({ path: '/api/v4/projects/42', method: 'GET', headers: { 'private-token': TOKEN } })
      .reply(200, { id: 42, path_with_namespace: 'acme/new-name' }, JSON_HEADERS);
    const res = await client.request({ method: 'GET', path: '/projects/acme%2Fold-name' });
    expect(res.body).toEqual({ id: 42, path_with_namespace: 'acme/new-name' });
    expect(res.redirectedFrom).toBe(OLD);
  });

  it('keeps the query and a base path, and follows to a route under the project id', async () => {
    const { pool, client } = setup({ baseUrl: `${ORIGIN}/gitlab` });
    pool
      .intercept({ path: `/gitlab${OLD}/repository_storage_moves?per_page=1`, method: 'GET' })
      .reply(301, '', moved('/gitlab/api/v4/projects/42/repository_storage_moves?per_page=1'));
    pool
      .intercept({ path: '/gitlab/api/v4/projects/42/repository_storage_moves?per_page=1', method: 'GET' })
      .reply(200, [], JSON_HEADERS);
    const res = await client.request({
      method: 'GET',
      path: '/projects/acme%2Fold-name/repository_storage_moves',
      query: { per_page: 1 },
    });
    expect(res.body).toEqual([]);
  });

  it('never follows to another origin, and says so instead of a bare status', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: OLD, method: 'GET' })
      .reply(301, '', moved('http://elsewhere.test/api/v4/projects/42?private_token=leak'));
    const err = await caught(client.request({ method: 'GET', path: '/projects/acme%2Fold-name' }));
    expect(err).toBeInstanceOf(ApiHttpError);
    expect(err.message).toContain('another origin (http://elsewhere.test/api/v4/projects/42)');
    expect(err.message).toContain('no credentials were sent there');
    expect(err.message).not.toContain('leak');
  });

  it('follows only to a project id: not to another route of the same origin', async () => {
    const { pool, client } = setup();
    pool.intercept({ path: OLD, method: 'GET' }).reply(302, '', moved(`${ORIGIN}/users/sign_in`));
    const err = await caught(client.request({ method: 'GET', path: '/projects/acme%2Fold-name' }));
    expect(err.message).toMatch(
      /HTTP 302: redirected to http:\/\/gitlab\.test\/users\/sign_in; only a redirect to a project's id/,
    );
  });

  it('follows once: a second redirect is an error', async () => {
    const { pool, client } = setup();
    pool.intercept({ path: OLD, method: 'GET' }).reply(301, '', moved('/api/v4/projects/42'));
    pool.intercept({ path: '/api/v4/projects/42', method: 'GET' }).reply(301, '', moved('/api/v4/projects/42'));
    const err = await caught(client.request({ method: 'GET', path: '/projects/acme%2Fold-name' }));
    expect(err.message).toContain('redirected again');
  });

  it('does not follow a redirect of a POST: nothing is sent to the Location', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: `${OLD}/repository_storage_moves`, method: 'POST' })
      .reply(301, '', moved('/api/v4/projects/42/repository_storage_moves'));
    const err = await caught(
      client.request({ method: 'POST', path: '/projects/acme%2Fold-name/repository_storage_moves', body: {} }),
    );
    expect(err).toBeInstanceOf(ApiHttpError);
    expect(err.message).toContain('only a GET is followed');
  });

  it('a redirect without a Location is named as such', async () => {
    const { pool, client } = setup();
    pool.intercept({ path: OLD, method: 'GET' }).reply(301, '');
    const err = await caught(client.request({ method: 'GET', path: '/projects/acme%2Fold-name' }));
    expect(err.message).toContain('a redirect without a Location');
  });
});
