import { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createStaticTokenProvider } from './auth.js';
import { createClient } from './client.js';
import { budgetOf, checksApplicationRateLimits, createRatePacer, routeKey } from './rate-pacer.js';
import type { RatePacer } from './rate-pacer.js';
import type { RateHold } from './rate-pacer.js';

/** A 10-minute boundary of the epoch, as GitLab's fixed windows have it. */
const T0 = Date.parse('2026-06-01T00:00:00Z');
const BODY = { message: { error: 'This endpoint has been requested too many times. Try again later.' } };

/** A clock whose sleeps move time at once, recording each. */
function fakeClock(start = T0) {
  let now = start;
  const sleeps: number[] = [];
  return {
    now: () => now,
    sleep: (ms: number) => {
      sleeps.push(ms);
      now += ms;
      return Promise.resolve();
    },
    sleeps,
    set: (t: number) => void (now = t),
  };
}

describe('routeKey and the window arithmetic', () => {
  it.each([
    ['/projects', 'projects_api'],
    ['/projects?repository_storage=nfs-1', 'projects_api'],
    ['/projects/12', 'project_api'],
    ['/projects/group%2Fname', 'project_api'],
    ['/projects/12/repository_storage_moves', null],
    ['/groups', 'groups_api'],
    ['/groups/7', 'group_api'],
    ['/groups/7/projects', 'group_projects_api'],
    ['/users/3/projects', 'user_projects_api'],
    ['/project_repository_storage_moves', null],
    ['/snippets/all', null],
  ])('%s is %s', (path, key) => expect(routeKey(path)).toBe(key));

  it('keeps a little below the threshold, never less than one', () => {
    expect([budgetOf(1), budgetOf(3), budgetOf(20), budgetOf(2000)]).toEqual([1, 2, 19, 1900]);
  });

  it('knows which releases check the limits they show', () => {
    expect(['17.1.0', '17.11.2', '18.0.1', '18.1.0', '18.6.0', '19.0.0'].map(checksApplicationRateLimits)).toEqual([
      false,
      false,
      false,
      true,
      true,
      true,
    ]);
  });
});

describe('createRatePacer', () => {
  it('paces a route once the settings name its threshold on a release that checks it: no span of a window sees more than the budget', async () => {
    const clock = fakeClock();
    const holds: (RateHold | null)[] = [];
    const pacer = createRatePacer({ ...clock, onHold: (h) => holds.push(h) });
    pacer.configure({ projects_api_limit: 3, project_api_limit: 0, groups_api_limit: 'x' }, true);
    expect(pacer.limits()).toEqual({ projects_api: { limit: 3, budget: 2, intervalMs: 600_000 } });
    const starts: number[] = [];
    for (let i = 0; i < 7; i++) {
      await pacer.beforeSend('GET', '/projects', undefined);
      starts.push(clock.now() - T0);
    }
    // Two a window, each window's first a second after it began on the server.
    expect(starts).toEqual([0, 0, 601_000, 601_000, 1_201_000, 1_201_000, 1_801_000]);
    expect(holds[0]).toMatchObject({ key: 'projects_api', until: T0 + 601_000 });
    expect(holds[0]?.reason).toBe('GET /projects: 3 per 10m (projects_api)');
    // A route without a limit, and a POST, never wait.
    await pacer.beforeSend('GET', '/projects/1', undefined);
    await pacer.beforeSend('POST', '/projects', undefined);
    expect(clock.now() - T0).toBe(1_801_000);
  });

  it('before 18.1 paces nothing until a 429 proves the limit is checked, then paces at the threshold shown', async () => {
    const clock = fakeClock(T0 + 30_000);
    const pacer = createRatePacer(clock);
    pacer.configure({ project_api_limit: 2 }, false);
    expect(pacer.limits()).toEqual({});
    await pacer.waitOut('/projects/5', null, new Date(T0 + 30_000).toUTCString(), undefined);
    // The rest of the minute's window on the server's clock (its Date, read to the second), and a second.
    expect(clock.now() - T0).toBe(60_500);
    expect(pacer.limits()).toEqual({ project_api: { limit: 2, budget: 1, intervalMs: 60_000 } });
    expect(pacer.throttled()).toEqual({ project_api: 1 });
  });

  it('waits out a 429 as long as the window lasts, without Date by Retry-After, else by the route window, else a minute', async () => {
    const clock = fakeClock(T0 + 5_000);
    const pacer = createRatePacer(clock);
    const waited = async (...args: Parameters<RatePacer['waitOut']>) => {
      const from = clock.now();
      await pacer.waitOut(...args);
      return clock.now() - from;
    };
    expect(await waited('/projects', 600_000, null, undefined)).toBe(600_000);
    expect(await waited('/projects', null, null, undefined)).toBe(600_000);
    expect(await waited('/user', null, null, undefined)).toBe(60_000);
    // With both, the end of the window on the server's clock wins when it comes first.
    clock.set(T0 + 590_000);
    expect(await waited('/projects', 600_000, new Date(T0 + 590_000).toUTCString(), undefined)).toBe(10_500);
    expect(pacer.throttled()).toEqual({ projects_api: 3, other: 1 });
    expect(pacer.hold()).toBeNull();
  });

  it("follows the server's clock, not ours: a server 4 minutes ahead ends its window 4 minutes early", async () => {
    const clock = fakeClock(T0 + 60_000);
    const pacer = createRatePacer(clock);
    const from = clock.now();
    await pacer.waitOut('/projects', null, new Date(T0 + 300_000).toUTCString(), undefined);
    // Server 05:00 (and up to a second): its window ends at 10:00, and a second.
    expect(clock.now() - from).toBe(300_500);
  });

  it('an abort ends a wait with its reason', async () => {
    const pacer = createRatePacer({
      now: () => T0,
      sleep: (_ms, signal) => Promise.reject(signal?.reason as Error),
    });
    const abort = new AbortController();
    abort.abort(new Error('stop'));
    await expect(pacer.waitOut('/projects', 600_000, null, abort.signal)).rejects.toThrow('stop');
  });
});

describe('the client with a pacer', () => {
  let agent: MockAgent | undefined;
  afterEach(async () => {
    await agent?.close();
    agent = undefined;
  });

  it('never fails a GET on 429s: it waits out each window, longer than 5 minutes, and sends again', async () => {
    agent = new MockAgent();
    agent.disableNetConnect();
    const pool = agent.get('http://gitlab.test');
    const clock = fakeClock(T0 + 10_000);
    const sent: number[] = [];
    const answer = (statusCode: number, data: unknown) => () => ({
      statusCode: (sent.push(clock.now()), statusCode),
      data: JSON.stringify(data),
      responseOptions: { headers: { 'content-type': 'application/json', date: new Date(clock.now()).toUTCString() } },
    });
    for (let i = 0; i < 6; i++)
      pool.intercept({ path: /^\/api\/v4\/projects/, method: 'GET' }).reply(answer(429, BODY));
    pool.intercept({ path: /^\/api\/v4\/projects/, method: 'GET' }).reply(answer(200, []));
    const pacer = createRatePacer(clock);
    const client = createClient({
      baseUrl: 'http://gitlab.test',
      credentials: createStaticTokenProvider('glpat-SECRETSECRETSECRET01'),
      timeoutMs: 1000,
      dispatcher: agent,
      retry: { maxAttempts: 2 },
      pacer,
      ...clock,
    });
    const res = await client.request({ method: 'GET', path: '/projects', query: { per_page: 100 } });
    expect(res.status).toBe(200);
    // Each new attempt was sent in the next 10-minute window, none in the one that refused it.
    const windows = sent.map((t) => Math.floor(t / 600_000));
    expect(windows.map((w) => w - (windows[0] as number))).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(pacer.throttled()).toEqual({ projects_api: 6 });
  });
});
