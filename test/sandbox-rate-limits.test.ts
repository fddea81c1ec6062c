/**
 * GitLab's application rate limits on the projects and groups API, per release, on a manual clock:
 * none before 17.1, the flag's to 18.0, always from 18.1; fixed windows aligned on the epoch, per
 * user; the 429's body as `render_api_error!` makes it; `Retry-After` (the window) from 18.5; the
 * thresholds shown in the application settings from 17.1; 0 turns a limit off.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed, parseSeed } from '../src/sandbox/seed.js';
import { callSandbox } from './support/sandbox-call.js';
import { realTimersAt } from './support/fake-clock.js';

/** A 10-minute boundary: every window of the limits starts here. */
const T0 = Date.parse('2026-06-01T00:00:00Z');
const BODY = { message: { error: 'This endpoint has been requested too many times. Try again later.' } };

async function start(version: string, over: (s: Seed) => void = () => {}) {
  const s = structuredClone(loadSeed());
  s.instance.version = version;
  s.inventory = { projects: [{ id: 1, storage: 'nfs-1', size_mb: 1 }] };
  over(s);
  let now = T0;
  const sb = await startSandbox({ seed: s, moveDurationMs: 1000, clock: realTimersAt(() => now) });
  onTestFinished(() => sb.close());
  return { sb, advance: (ms: number) => void (now += ms) };
}

async function statuses(sb: Awaited<ReturnType<typeof start>>['sb'], path: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await callSandbox(sb, 'GET', path)).status);
  return out;
}

describe('application rate limits', () => {
  it('18.2: GET /projects is refused above its threshold until its 10-minute window ends, without Retry-After', async () => {
    const { sb, advance } = await start('18.2.0', (s) => void (s.instance.rate_limits = { projects_api: 3 }));
    expect(await statuses(sb, '/projects', 3)).toEqual([200, 200, 200]);
    const refused = await callSandbox(sb, 'GET', '/projects');
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual(BODY);
    expect(refused.headers.get('retry-after')).toBeNull();
    expect(Date.parse(refused.headers.get('date') ?? '')).toBe(T0); // the sandbox's clock
    // Another limit's route is not touched; the same window stays closed to its end.
    expect((await callSandbox(sb, 'GET', '/projects/1')).status).toBe(200);
    advance(599_000);
    expect((await callSandbox(sb, 'GET', '/projects')).status).toBe(429);
    advance(1_000);
    expect(await statuses(sb, '/projects', 3)).toEqual([200, 200, 200]);
  });

  it('18.6 names the window in Retry-After: 600 s for GET /projects, 60 s for GET /projects/:id', async () => {
    const { sb } = await start('18.6.0', (s) => void (s.instance.rate_limits = { projects_api: 1, project_api: 1 }));
    await statuses(sb, '/projects', 1);
    await statuses(sb, '/projects/1', 1);
    const list = await callSandbox(sb, 'GET', '/projects');
    const one = await callSandbox(sb, 'GET', '/projects/1');
    expect([list.status, list.headers.get('retry-after')]).toEqual([429, '600']);
    expect([one.status, one.headers.get('retry-after')]).toEqual([429, '60']);
    expect(one.body).toEqual(BODY);
  });

  it('17.5 without the flag has no limits, and shows the thresholds in the settings; with the flag it limits', async () => {
    const off = await start('17.5.0', (s) => void (s.instance.rate_limits = { projects_api: 1 }));
    expect(await statuses(off.sb, '/projects', 5)).toEqual([200, 200, 200, 200, 200]);
    const settings = (await callSandbox(off.sb, 'GET', '/application/settings')).body;
    expect(settings['projects_api_limit']).toBe(1);
    expect(settings['project_api_limit']).toBe(400);
    expect(settings['groups_api_limit']).toBe(200);
    const on = await start('17.5.0', (s) => {
      s.instance.rate_limits = { projects_api: 1 };
      s.instance.feature_flags = { rate_limit_groups_and_projects_api: true };
    });
    expect(await statuses(on.sb, '/projects', 2)).toEqual([200, 429]);
  });

  it('16.11 has none of them, in the settings or the answers; 0 turns a limit off on 18.2', async () => {
    const old = await start('16.11.0', (s) => void (s.instance.rate_limits = { projects_api: 1 }));
    expect(await statuses(old.sb, '/projects', 3)).toEqual([200, 200, 200]);
    expect((await callSandbox(old.sb, 'GET', '/application/settings')).body).not.toHaveProperty('projects_api_limit');
    const zero = await start('18.2.0', (s) => void (s.instance.rate_limits = { groups_api: 0, group_api: 1 }));
    expect(await statuses(zero.sb, '/groups', 4)).toEqual([200, 200, 200, 200]);
  });

  it('GitLab defaults apply on 18.1 when the seed names none: the 2001st GET /projects of a window is refused', async () => {
    const { sb } = await start('18.1.0');
    const seen = await statuses(sb, '/projects?per_page=1', 2001);
    expect(seen.slice(0, 2000).every((s) => s === 200)).toBe(true);
    expect(seen[2000]).toBe(429);
  });

  it('the seed refuses an unknown key and a negative threshold, with their line and column', () => {
    const base = 'users: [{ id: 1, username: root }]\ninstance:\n  rate_limits:\n';
    expect(() => parseSeed(`${base}    project_apis: 3\n`, 'seed.yaml')).toThrow(/seed\.yaml:4:\d+.*rate_limits/s);
    expect(() => parseSeed(`${base}    projects_api: -1\n`, 'seed.yaml')).toThrow(/seed\.yaml:4:\d+/);
    expect(parseSeed(`${base}    projects_api: 0\n`).instance.rate_limits).toEqual({ projects_api: 0 });
  });
});
