// Every fault option over real HTTP, and the same counts again under the same --fault-seed.
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSandbox, SandboxOptions } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';

const ADMIN = 'glpat-sandbox-root-api-sudo-0001';

function seed(): Seed {
  const s = loadSeed();
  s.inventory = { projects: Array.from({ length: 40 }, (_, i) => ({ id: i + 1, storage: 'nfs-1' })) };
  return s;
}

const running: RunningSandbox[] = [];
async function start(options: SandboxOptions): Promise<RunningSandbox> {
  const sb = await startSandbox({ seed: seed(), moveDurationMs: 10, ...options });
  running.push(sb);
  return sb;
}
afterEach(async () => {
  await Promise.all(running.splice(0).map((sb) => sb.close()));
});

type Outcome = number | 'reset';
async function get(
  sb: RunningSandbox,
  path = '/api/v4/version',
): Promise<{ outcome: Outcome; text: string; headers?: Headers }> {
  try {
    // A fresh connection per request: a reset must not poison the next one.
    const res = await fetch(`${sb.url}${path}`, { headers: { 'private-token': ADMIN, connection: 'close' } });
    return { outcome: res.status, text: await res.text(), headers: res.headers };
  } catch {
    return { outcome: 'reset', text: '' };
  }
}

async function sequence(sb: RunningSandbox, n: number): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (let i = 0; i < n; i++) out.push((await get(sb)).outcome);
  return out;
}

async function moveOf(sb: RunningSandbox, projectId: number, waitMs = 3000): Promise<Record<string, unknown>> {
  const res = await fetch(`${sb.url}/api/v4/projects/${projectId}/repository_storage_moves`, {
    method: 'POST',
    headers: { 'private-token': ADMIN, 'content-type': 'application/json' },
    body: JSON.stringify({ destination_storage_name: 'cluster' }),
  });
  expect(res.status).toBe(201);
  const move = (await res.json()) as { id: number };
  const end = Date.now() + waitMs;
  for (;;) {
    const r = await fetch(`${sb.url}/api/v4/project_repository_storage_moves/${move.id}`, {
      headers: { 'private-token': ADMIN },
    });
    const body = (await r.json()) as Record<string, unknown>;
    if (['finished', 'failed', 'cleanup failed'].includes(body.state as string) || Date.now() > end) return body;
    await new Promise((r2) => setTimeout(r2, 10));
  }
}

describe('request faults', () => {
  it('--latency delays API answers but not health probes', async () => {
    const sb = await start({ faults: { latencyMs: 120 } });
    let t = performance.now();
    expect((await get(sb)).outcome).toBe(200);
    expect(performance.now() - t).toBeGreaterThanOrEqual(110);
    t = performance.now();
    expect((await get(sb, '/-/liveness')).outcome).toBe(200);
    expect(performance.now() - t).toBeLessThan(100);
    expect(sb.state.faults.counts()).toEqual({ latency: 1 });
  });

  it('--error-rate answers 503 JSON, deterministically under the seed', async () => {
    const a = await start({ faults: { errorRate: 0.4, seed: 5 } });
    const b = await start({ faults: { errorRate: 0.4, seed: 5 } });
    const seqA = await sequence(a, 40);
    expect(await sequence(b, 40)).toEqual(seqA);
    const errors = seqA.filter((o) => o === 503).length;
    expect(errors).toBeGreaterThan(5);
    expect(errors).toBeLessThan(35);
    expect(a.state.faults.counts()).toEqual({ error: errors });
    const c = await start({ faults: { errorRate: 1 } });
    const r = await get(c);
    expect(r.outcome).toBe(503);
    expect(JSON.parse(r.text)).toEqual({ message: '503 Service Unavailable' });
  });

  it('--reset-rate destroys the connection without an answer', async () => {
    const a = await start({ faults: { resetRate: 0.3, seed: 9 } });
    const b = await start({ faults: { resetRate: 0.3, seed: 9 } });
    const seqA = await sequence(a, 30);
    expect(await sequence(b, 30)).toEqual(seqA);
    const resets = seqA.filter((o) => o === 'reset').length;
    expect(resets).toBeGreaterThan(2);
    expect(seqA.filter((o) => o === 200).length).toBe(30 - resets);
    expect(a.state.faults.counts()).toEqual({ reset: resets });
  });

  it('--rate-limit answers 429 "Retry later" with Retry-After and RateLimit-* headers', async () => {
    const sb = await start({ faults: { rateLimit: 5 } });
    let limited: Awaited<ReturnType<typeof get>> | undefined;
    // Within 11 requests a 429 must come even if a minute boundary falls in between.
    for (let i = 0; i < 11 && !limited; i++) {
      const r = await get(sb);
      if (r.outcome === 429) limited = r;
      else expect(r.outcome).toBe(200);
    }
    expect(limited).toBeDefined();
    const h = limited?.headers as Headers;
    expect(limited?.text).toBe('Retry later\n');
    expect(Number(h.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(h.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(h.get('ratelimit-limit')).toBe('5');
    expect(h.get('ratelimit-remaining')).toBe('0');
    expect(Number(h.get('ratelimit-observed'))).toBe(6);
    expect(h.get('ratelimit-name')).toBe('throttle_authenticated_api');
    expect(Number(h.get('ratelimit-reset')) * 1000).toBeGreaterThan(Date.now());
    expect(new Date(h.get('ratelimit-resettime') as string).getTime()).toBe(Number(h.get('ratelimit-reset')) * 1000);
    expect((await get(sb, '/-/health')).outcome).toBe(200);
  });
});

describe('move faults', () => {
  it('--broken-items always fail, and a rescheduled move fails again', async () => {
    const sb = await start({ faults: { brokenItems: ['project:3'] } });
    const first = await moveOf(sb, 3);
    expect(first).toMatchObject({ state: 'failed', error_message: expect.stringMatching(/\S/) });
    expect((await moveOf(sb, 3)).state).toBe('failed');
    expect((await moveOf(sb, 4)).state).toBe('finished');
    expect(sb.state.faults.counts()).toEqual({ move_broken: 2 });
  });

  it('--move-fail-rate fails moves with an error message, the same ones under the same seed', async () => {
    const outcomes = async () => {
      const sb = await start({ faults: { moveFailRate: 0.5, seed: 21 } });
      const states: string[] = [];
      for (let id = 1; id <= 12; id++) states.push((await moveOf(sb, id)).state as string);
      return { states, counts: sb.state.faults.counts() };
    };
    const a = await outcomes();
    expect((await outcomes()).states).toEqual(a.states);
    const failed = a.states.filter((s) => s !== 'finished').length;
    expect(failed).toBeGreaterThan(0);
    expect(failed).toBeLessThan(12);
    expect((a.counts.move_fail ?? 0) + (a.counts.move_cleanup_fail ?? 0)).toBe(failed);
  });

  it('--stuck-rate keeps a move in started', async () => {
    const sb = await start({ faults: { stuckRate: 1 } });
    // Moves take 10 ms here; 300 ms later a stuck one has still not left started.
    const move = await moveOf(sb, 5, 300);
    expect(move.state).toBe('started');
    expect(sb.state.faults.counts()).toEqual({ move_stuck: 1 });
  });
});
