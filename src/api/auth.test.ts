import { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createOAuthProvider, createStaticTokenProvider } from './auth.js';
import type { OAuthTokenPair } from './auth.js';
import { createClient } from './client.js';
import { ApiError } from './errors.js';

const ORIGIN = 'http://gitlab.test';
const JSON_HEADERS = { headers: { 'content-type': 'application/json' } };
const OAUTH = {
  type: 'oauth' as const,
  accessToken: 'access-OLD-0000000000',
  refreshToken: 'refresh-OLD-0000000000',
  clientId: 'app-id',
  clientSecret: 'gloas-CLIENTSECRET00000',
  redirectUri: 'http://localhost/cb',
};
const EXPIRED = {
  error: 'invalid_token',
  error_description: 'Token is expired. You can either do re-authorization or token refresh.',
};

let agent: MockAgent | undefined;

function setup(opts: { marginMs?: number } = {}) {
  const mock = new MockAgent();
  agent = mock;
  mock.disableNetConnect();
  const pool = mock.get(ORIGIN);
  const clock = { t: 1_000_000 };
  const refreshed: OAuthTokenPair[] = [];
  const provider = createOAuthProvider({
    credentials: OAUTH,
    baseUrl: ORIGIN,
    dispatcher: mock,
    timeoutMs: 1000,
    userAgent: 'shardmove/test',
    now: () => clock.t,
    marginMs: opts.marginMs ?? 10_000,
    onRefresh: (pair) => {
      refreshed.push(pair);
    },
  });
  const client = createClient({
    baseUrl: ORIGIN,
    credentials: provider,
    timeoutMs: 1000,
    dispatcher: mock,
    sleep: () => Promise.resolve(),
    now: () => clock.t,
  });
  return { pool, client, clock, refreshed };
}

function bearer(token: string) {
  return { authorization: `Bearer ${token}` };
}

/** Intercepts one refresh that must present `refreshToken` and answers with the `n`th new pair. */
function interceptRefresh(pool: ReturnType<MockAgent['get']>, refreshToken: string, n: number, expiresIn = 7200) {
  pool
    .intercept({
      path: '/oauth/token',
      method: 'POST',
      body: (b) => {
        const form = new URLSearchParams(b);
        return (
          form.get('grant_type') === 'refresh_token' &&
          form.get('refresh_token') === refreshToken &&
          form.get('client_id') === OAUTH.clientId &&
          form.get('client_secret') === OAUTH.clientSecret &&
          form.get('redirect_uri') === OAUTH.redirectUri
        );
      },
    })
    .reply(
      200,
      {
        access_token: `access-NEW-${n}`,
        refresh_token: `refresh-NEW-${n}`,
        token_type: 'bearer',
        expires_in: expiresIn,
        created_at: 1,
      },
      JSON_HEADERS,
    );
}

afterEach(async () => {
  agent?.assertNoPendingInterceptors();
  await agent?.close();
  agent = undefined;
});

describe('static token', () => {
  it('sends PRIVATE-TOKEN and lets a 401 stand', async () => {
    const provider = createStaticTokenProvider('glpat-abc');
    expect(await provider.headers()).toEqual({ 'private-token': 'glpat-abc' });
    const mock = new MockAgent();
    agent = mock;
    mock.disableNetConnect();
    mock.get(ORIGIN).intercept({ path: '/api/v4/user', method: 'GET' }).reply(401, EXPIRED, JSON_HEADERS);
    const client = createClient({ baseUrl: ORIGIN, credentials: provider, timeoutMs: 1000, dispatcher: mock });
    await expect(client.request({ method: 'GET', path: '/user' })).rejects.toMatchObject({
      code: 'SHARDMOVE_API_UNAUTHORIZED',
      invalidToken: true,
    });
    expect(client.stats().requests).toBe(1);
  });
});

describe('OAuth', () => {
  it('refreshes on 401 invalid_token, rotates both tokens and retries with the new one', async () => {
    const { pool, client, refreshed } = setup();
    pool
      .intercept({ path: '/api/v4/user', method: 'GET', headers: bearer(OAUTH.accessToken) })
      .reply(401, EXPIRED, JSON_HEADERS);
    interceptRefresh(pool, OAUTH.refreshToken, 1);
    pool
      .intercept({ path: '/api/v4/user', method: 'GET', headers: bearer('access-NEW-1') })
      .reply(200, { id: 1 }, JSON_HEADERS);
    expect((await client.request({ method: 'GET', path: '/user' })).body).toEqual({ id: 1 });
    expect(refreshed).toEqual([
      { accessToken: 'access-NEW-1', refreshToken: 'refresh-NEW-1', expiresAt: 1_000_000 + 7_200_000 },
    ]);
  });

  it('shares one refresh among concurrent requests that all got 401', async () => {
    const { pool, client, refreshed } = setup();
    pool
      .intercept({ path: '/api/v4/user', method: 'GET', headers: bearer(OAUTH.accessToken) })
      .reply(401, EXPIRED, JSON_HEADERS)
      .times(5);
    interceptRefresh(pool, OAUTH.refreshToken, 1);
    pool
      .intercept({ path: '/api/v4/user', method: 'GET', headers: bearer('access-NEW-1') })
      .reply(200, { id: 1 }, JSON_HEADERS)
      .times(5);
    const results = await Promise.all(
      Array.from({ length: 5 }, () => client.request({ method: 'GET', path: '/user' })),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(refreshed).toHaveLength(1);
  });

  it('retries a POST once after a refresh: the 401 means it was never performed', async () => {
    const { pool, client } = setup();
    pool
      .intercept({
        path: '/api/v4/projects/1/repository_storage_moves',
        method: 'POST',
        headers: bearer(OAUTH.accessToken),
      })
      .reply(401, EXPIRED, JSON_HEADERS);
    interceptRefresh(pool, OAUTH.refreshToken, 1);
    pool
      .intercept({
        path: '/api/v4/projects/1/repository_storage_moves',
        method: 'POST',
        headers: bearer('access-NEW-1'),
      })
      .reply(401, EXPIRED, JSON_HEADERS);
    // The second 401 (new token rejected too) is not retried again: one refresh per request.
    await expect(
      client.request({ method: 'POST', path: '/projects/1/repository_storage_moves' }),
    ).rejects.toMatchObject({ code: 'SHARDMOVE_API_UNAUTHORIZED' });
    expect(client.stats()).toEqual({ requests: 2, mutating: 2 });
  });

  it('does not refresh on a plain 401 without invalid_token', async () => {
    const { pool, client, refreshed } = setup();
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(401, { message: '401 Unauthorized' }, JSON_HEADERS);
    await expect(client.request({ method: 'GET', path: '/user' })).rejects.toMatchObject({
      code: 'SHARDMOVE_API_UNAUTHORIZED',
      invalidToken: false,
    });
    expect(refreshed).toEqual([]);
  });

  it('fails clearly, without secrets, when the refresh is refused', async () => {
    const { pool, client } = setup();
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(401, EXPIRED, JSON_HEADERS);
    pool
      .intercept({ path: '/oauth/token', method: 'POST' })
      .reply(400, { error: 'invalid_grant', error_description: `bad ${OAUTH.refreshToken}` }, JSON_HEADERS);
    let err: unknown;
    try {
      await client.request({ method: 'GET', path: '/user' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'SHARDMOVE_API_UNAUTHORIZED', refreshFailed: true });
    const text = JSON.stringify({ m: (err as Error).message, e: err });
    expect(text).toContain('invalid_grant');
    for (const secret of [OAUTH.accessToken, OAUTH.refreshToken, OAUTH.clientSecret])
      expect(text).not.toContain(secret);
  });

  it('fails clearly when the refresh request cannot be sent', async () => {
    const { pool, client } = setup();
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(401, EXPIRED, JSON_HEADERS);
    pool
      .intercept({ path: '/oauth/token', method: 'POST' })
      .replyWithError(Object.assign(new Error('reset'), { code: 'ECONNRESET' }));
    await expect(client.request({ method: 'GET', path: '/user' })).rejects.toMatchObject({
      code: 'SHARDMOVE_API_UNAUTHORIZED',
      refreshFailed: true,
      message: expect.stringContaining('ECONNRESET') as unknown,
    });
  });

  it('refreshes ahead of a known expiry, before sending', async () => {
    const { pool, client, clock, refreshed } = setup({ marginMs: 10_000 });
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(401, EXPIRED, JSON_HEADERS);
    interceptRefresh(pool, OAUTH.refreshToken, 1, 100);
    pool
      .intercept({ path: '/api/v4/user', method: 'GET', headers: bearer('access-NEW-1') })
      .reply(200, {}, JSON_HEADERS)
      .times(2);
    await client.request({ method: 'GET', path: '/user' });
    clock.t += 89_000; // 11 s before expiry: outside the margin, no refresh
    await client.request({ method: 'GET', path: '/user' });
    expect(refreshed).toHaveLength(1);
    clock.t += 2_000; // 9 s before expiry: refresh first
    interceptRefresh(pool, 'refresh-NEW-1', 2, 100);
    pool
      .intercept({ path: '/api/v4/user', method: 'GET', headers: bearer('access-NEW-2') })
      .reply(200, {}, JSON_HEADERS);
    await client.request({ method: 'GET', path: '/user' });
    expect(refreshed.map((p) => p.refreshToken)).toEqual(['refresh-NEW-1', 'refresh-NEW-2']);
  });

  it('a token that lives seconds is refreshed at three quarters of its life, not before every request', async () => {
    const { pool, client, clock, refreshed } = setup({ marginMs: 60_000 });
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(401, EXPIRED, JSON_HEADERS);
    interceptRefresh(pool, OAUTH.refreshToken, 1, 4);
    pool
      .intercept({ path: '/api/v4/user', method: 'GET', headers: bearer('access-NEW-1') })
      .reply(200, {}, JSON_HEADERS)
      .times(3);
    await client.request({ method: 'GET', path: '/user' });
    clock.t += 1_000;
    await client.request({ method: 'GET', path: '/user' });
    clock.t += 1_900; // 2.9 s of 4: still fresh
    await client.request({ method: 'GET', path: '/user' });
    expect(refreshed).toHaveLength(1);
    clock.t += 100; // 3 s of 4: refresh first
    interceptRefresh(pool, 'refresh-NEW-1', 2, 4);
    pool
      .intercept({ path: '/api/v4/user', method: 'GET', headers: bearer('access-NEW-2') })
      .reply(200, {}, JSON_HEADERS);
    await client.request({ method: 'GET', path: '/user' });
    expect(refreshed.map((p) => p.refreshToken)).toEqual(['refresh-NEW-1', 'refresh-NEW-2']);
  });
});
