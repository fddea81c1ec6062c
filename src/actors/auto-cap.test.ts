import { describe, expect, it } from 'vitest';
import { createHarness, range, resumed, testPlan } from '../../test/support/drain-harness.js';
import type { Harness } from '../../test/support/drain-harness.js';
import { capInForce } from './cap.js';
import { runDrain } from './drain/run.js';
import { startAuto } from '../schedule/auto-limit.js';
import { savedAutoState } from './auto-cap.js';

const MB = 1e6;

/**
 * A shared disk on the fake instance: each move pays 2 s of fixed cost and 1 s more for every
 * move in flight beside it, so throughput grows with the cap until the fixed cost is hidden
 * (2 -> 4 -> 8 -> 16 gain 33%, 20%, 11%; 16 -> 32 gains 6%).
 */
function sharedDisk(items: number): Harness {
  const h = createHarness(testPlan({ move: { concurrency: { auto: { min: 2, max: 64 } } } }), {
    startDelayMs: 0,
    durationFor: (inFlight) => 2000 + inFlight * 1000,
  });
  h.fake.addItems('projects', 'nfs-1', range(1, items));
  for (const id of range(1, items)) h.fake.setSize('projects', id, 10 * MB);
  return h;
}

const capEvents = (h: Harness) =>
  h.store
    .readEvents()
    .filter((e) => e.type === 'cap.changed')
    .map((e) => e.data);

describe('move.concurrency: auto in a drain on the fake clock', () => {
  it('raises the cap while throughput grows and goes back to the knee, each change a cap.changed with an auto: reason', async () => {
    const h = sharedDisk(600);
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 600, quarantined: 0, remaining: 0 });
    const caps = capEvents(h);
    expect(caps[0]).toMatchObject({ cap: 2, limit: 'plan', reason: 'auto: starting at 2 (min 2, max 64)' });
    expect(caps.slice(1).every((c) => c.reason.startsWith('auto: '))).toBe(true);
    expect(caps.map((c) => c.cap).slice(0, 4)).toEqual([2, 4, 8, 16]);
    expect(caps.some((c) => c.reason.startsWith('auto: throughput flat at '))).toBe(true);
    expect(h.fake.peakInFlight).toBeLessThanOrEqual(64);
    expect(h.fake.violations).toEqual([]);
    expect(savedAutoState(h.store)?.state.knee).toBeGreaterThanOrEqual(8);
  });

  it("survives a resume: the new process goes on from the checkpoint's cap, not from min", async () => {
    const h = sharedDisk(400);
    let finished = 0;
    h.fake.onRequest = (req) => {
      if (req === 'scheduleMove' && ++finished === 150) h.abort.abort(new Error('SIGINT'));
    };
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).rejects.toMatchObject({
      code: 'SHARDMOVE_ABORTED',
    });
    h.fake.onRequest = null;
    const kept = savedAutoState(h.store)?.state.cap ?? 0;
    expect(kept).toBeGreaterThan(2);
    const before = capEvents(h).length;
    const again = resumed(h);
    const r = await runDrain(again.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r.remaining).toBe(0);
    expect(capEvents(h)[before]).toMatchObject({ cap: kept, reason: `auto: resumed at ${kept}` });
  });

  it('a cap pinned with shardmove control holds until --concurrency auto hands it back', async () => {
    const h = sharedDisk(10);
    expect(await capInForce(h.deps)).toMatchObject({ cap: 2, limit: 'plan' });
    h.store.writeControl({ concurrency: 30 }, h.clock.now());
    expect(await capInForce(h.deps)).toMatchObject({
      cap: 30,
      limit: 'control',
      reason: 'set with shardmove control (the plan says auto (2 to 64))',
    });
    h.store.writeControl({ concurrency: null }, h.clock.now());
    expect(await capInForce(h.deps)).toMatchObject({
      cap: 2,
      limit: 'plan',
      reason: 'auto: the limiter decides again from 2',
    });
  });

  it('the failure breaker wins over the limiter: cap 0 while it holds, no move posted, no auto change', async () => {
    const h = createHarness(
      testPlan({
        move: { concurrency: { auto: { min: 2, max: 16 } } },
        poll: { intervalMs: 250 },
        retry: { maxAttempts: 3, backoffMs: 1_000, pauseAfter: { failures: 3, withinMs: 900_000 } },
      }),
      { durationMs: 1_000 },
    );
    h.fake.addItems('projects', 'nfs-1', range(1, 60));
    for (const id of range(1, 60)) h.fake.setSize('projects', id, 10 * MB);
    for (const id of [5, 10, 15]) h.fake.script('projects', id, 'fail', 'ok');
    let postsWhilePaused = 0;
    h.fake.onRequest = (name) => {
      if (name === 'scheduleMove' && h.store.readControl().paused) postsWhilePaused++;
    };
    // The operator unpauses two minutes of the run's clock after the trip.
    const sleep = h.clock.sleep.bind(h.clock);
    let pausedAt: number | null = null;
    h.clock.sleep = (ms, signal) => {
      if (h.store.readControl().paused) pausedAt ??= h.clock.now();
      if (pausedAt !== null && h.clock.now() - pausedAt > 120_000) {
        h.store.writeControl({ paused: false }, h.clock.now());
        pausedAt = null;
      }
      return sleep(ms, signal);
    };
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r.remaining).toBe(0);
    const caps = capEvents(h);
    const trip = caps.findIndex((c) => c.limit === 'paused');
    expect(trip).toBeGreaterThan(0);
    expect(caps[trip]).toMatchObject({ cap: 0, paused: true });
    expect(caps[trip]!.reason).toMatch(/^paused by the failure breaker: /);
    // The next change is the unpause handing the cap back to the limiter, not an auto change meanwhile.
    expect(caps[trip + 1]).toMatchObject({ limit: 'plan', paused: false });
    expect(caps[trip + 1]!.reason).toMatch(/^auto: the limiter decides again from \d+$/);
    expect(postsWhilePaused).toBe(0);
  });

  it("a checkpoint's auto_cap row that is not a limiter's state is set aside: the limiter starts fresh at min", async () => {
    const kept = (() => {
      const h = sharedDisk(1);
      return JSON.parse(JSON.stringify({ v: 1, state: startAuto({ min: 2, max: 64 }, h.clock.now(), 8) })) as {
        v: number;
        state: Record<string, unknown>;
      };
    })();
    const rows = [
      '{"v":1,"state":{"cap":8', // cut short
      'null',
      JSON.stringify({ ...kept, v: 2 }), // a version this build does not know
      JSON.stringify({ v: 1, state: { cap: 8 } }), // a cap and nothing the limiter reads beside it
      JSON.stringify({ ...kept, state: { ...kept.state, last: { cap: 8 } } }),
      JSON.stringify({ ...kept, state: { ...kept.state, phase: 'ramp' } }),
      JSON.stringify({ ...kept, state: { ...kept.state, cap: -3 } }),
      JSON.stringify({ ...kept, state: { ...kept.state, bw: 'fast' } }), // the copies' bandwidths, not a list
      JSON.stringify({ ...kept, state: { ...kept.state, bw: [[1, 2, 3]] } }),
      JSON.stringify({ ...kept, state: { ...kept.state, busy: { cap: 16 } } }), // a busy mark without its bandwidth
    ];
    for (const raw of rows) {
      const h = sharedDisk(40);
      h.store.setAutoCap(raw, h.clock.now());
      expect(savedAutoState(h.store), raw).toBeNull();
      const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
      expect(r, raw).toEqual({ moved: 40, quarantined: 0, remaining: 0 });
      expect(capEvents(h)[0], raw).toMatchObject({ cap: 2, reason: 'auto: starting at 2 (min 2, max 64)' });
    }
    // The same state whole is a resume, with the bandwidths and the busy mark too.
    const h = sharedDisk(40);
    h.store.setAutoCap(
      JSON.stringify({
        ...kept,
        state: { ...kept.state, bw: [[400_000, 1e-6]], busy: { cap: 16, bandwidth: 400_000 } },
      }),
      h.clock.now(),
    );
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(capEvents(h)[0]).toMatchObject({ cap: 8, reason: 'auto: resumed at 8' });
  });

  it('a plan with a number never consults the limiter and keeps no state', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 5 } }));
    h.fake.addItems('projects', 'nfs-1', range(1, 20));
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(capEvents(h).map((c) => c.reason)).toEqual(["the plan's move.concurrency"]);
    expect(h.store.getAutoCap()).toBeNull();
  });
});
