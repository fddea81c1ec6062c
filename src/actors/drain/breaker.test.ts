import { describe, expect, it } from 'vitest';
import type { Plan } from '../../plan/types.js';
import { createHarness, range, testPlan } from '../../../test/support/drain-harness.js';
import type { Harness } from '../../../test/support/drain-harness.js';
import { judgeBreaker } from './breaker.js';
import { runDrain } from './run.js';

const BY = { user: 'ops', host: 'bastion', pid: 4242 };
const RATE = { rate: 0.05, withinMs: 900_000, minMoves: 50 };

/** A fast drain: 40 at once, moves of a second, polled every 250 ms, failed moves retried after a second. */
function fastDrain(pauseAfter: Plan['retry']['pauseAfter'], items: number, failEvery: number): Harness {
  const plan = testPlan({
    move: { concurrency: 40 },
    poll: { intervalMs: 250 },
    retry: { maxAttempts: 3, backoffMs: 1_000, pauseAfter },
  });
  const h = createHarness(plan, { durationMs: 1_000 });
  h.fake.addItems('projects', 'nfs-1', range(1, items));
  for (let id = failEvery; id <= items; id += failEvery) h.fake.script('projects', id, 'fail', 'ok');
  return h;
}

const trips = (h: Harness) =>
  h.store.readEvents(0, 1_000_000).flatMap((e) => (e.type === 'breaker.tripped' ? [e.data] : []));

/** Unpauses a minute after each trip, as an operator would, so the drain can end. */
function unpauseAfterAMinute(h: Harness): void {
  const sleep = h.clock.sleep.bind(h.clock);
  let pausedAt: number | null = null;
  h.clock.sleep = (ms, signal) => {
    const c = h.store.readControl();
    if (c.paused) pausedAt ??= h.clock.now();
    if (c.paused && h.clock.now() - pausedAt! > 60_000) {
      h.store.writeControl({ paused: false }, h.clock.now());
      pausedAt = null;
    }
    return sleep(ms, signal);
  };
}

describe('the failure breaker by rate', () => {
  it.each([
    // [breaker, failures, ended, trips]
    [RATE, 3, 3, false], // 100%, but fewer than min_moves ended: not judged yet
    [RATE, 3, 50, true], // 6% of 50
    [RATE, 2, 50, false], // 4%
    [RATE, 5, 100, true], // exactly 5%
    [RATE, 0, 500, false],
    [{ failures: 20, withinMs: 900_000 }, 19, 19, false],
    [{ failures: 20, withinMs: 900_000 }, 20, 2_000, true], // a count ignores how many ended
  ] as const)('judges %j with %i failed of %i ended: trips %s', (b, failures, endedMoves, tripped) => {
    expect(judgeBreaker(b, failures, endedMoves) !== null).toBe(tripped);
  });

  it('1% failing on a fast drain trips a count of 5 in 15m, and never the rate of 5% over 50 moves', async () => {
    const count = fastDrain({ failures: 5, withinMs: 900_000 }, 1_000, 100);
    unpauseAfterAMinute(count);
    await runDrain(count.deps, { source: 'nfs-1', kind: 'projects' });
    expect(trips(count).length).toBeGreaterThanOrEqual(1);

    const rate = fastDrain(RATE, 1_000, 100);
    const r = await runDrain(rate.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 1_000, quarantined: 0, remaining: 0 });
    expect(trips(rate)).toEqual([]);
    expect(rate.store.readControl().paused).toBe(false);
    expect(rate.fake.violations).toEqual([]);
  });

  it('10% failing trips the rate once 50 moves ended in the window, and pauses as control --pause does', async () => {
    const h = fastDrain(RATE, 400, 10);
    let postsWhilePaused = 0;
    h.fake.onRequest = (name) => {
      if (name === 'scheduleMove' && h.store.readControl().paused) postsWhilePaused++;
    };
    unpauseAfterAMinute(h);
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    const [first] = trips(h);
    expect(first).toMatchObject({ withinMs: 900_000, rate: 0.05 });
    expect(first!.ended).toBeGreaterThanOrEqual(50);
    expect(first!.failures / first!.ended!).toBeGreaterThanOrEqual(0.05);
    expect(first!.reason).toMatch(
      /^paused by the failure breaker: \d+ moves failed within 15m \(\d+(\.\d+)?% of \d+ ended, the breaker's rate is 5%; retry\.pause_after\)/,
    );
    expect(postsWhilePaused).toBe(0);
    expect(h.fake.violations).toEqual([]);
  });

  it('a breaker set live in the checkpoint replaces the plan\'s at the next ended move; "off" turns it off', async () => {
    // The plan's count would trip on the fifth failure; the operator sets the rate form first.
    const h = fastDrain({ failures: 5, withinMs: 900_000 }, 1_000, 100);
    h.store.writeThreshold('breaker', RATE, h.clock.now(), BY);
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(trips(h)).toEqual([]);

    // Mid-run: a strict count set live trips at once on the next failure.
    const live = fastDrain(undefined, 1_000, 100);
    let posts = 0;
    live.fake.onRequest = (name) => {
      if (name === 'scheduleMove' && ++posts === 300)
        live.store.writeThreshold('breaker', { failures: 1, withinMs: 60_000 }, live.clock.now(), BY);
    };
    unpauseAfterAMinute(live);
    await runDrain(live.deps, { source: 'nfs-1', kind: 'projects' });
    expect(trips(live)[0]).toMatchObject({ failures: 1, withinMs: 60_000 });

    const off = fastDrain({ failures: 1, withinMs: 60_000 }, 300, 10);
    off.store.writeThreshold('breaker', 'off', off.clock.now(), BY);
    await runDrain(off.deps, { source: 'nfs-1', kind: 'projects' });
    expect(trips(off)).toEqual([]);
  });
});
