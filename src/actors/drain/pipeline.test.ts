/**
 * One pipeline across drains. While one (source, kind) drain is down to its tail,
 * its free slots take the next drain's items; the cap holds at every instant, each drain still
 * re-lists its own source, and crashes anywhere leave no item moved twice or left behind.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CodedError } from '../../../test/support/coded-error.js';
import { createHarness, range, resumed, testPlan, withDelays } from '../../../test/support/drain-harness.js';
import type { DrainInput } from '../../machine/types.js';
import { runDrain } from './run.js';
import { assertProperty } from '../../../test/support/property.js';

const first: DrainInput = {
  source: 'nfs-1',
  kind: 'projects',
  access: 'listing',
  ahead: { source: 'nfs-2', kind: 'projects', access: 'listing' },
};
const second: DrainInput = { source: 'nfs-2', kind: 'projects', access: 'listing', ahead: null };

function plan(concurrency: number) {
  return testPlan({
    move: { from: ['nfs-1', 'nfs-2'], kinds: ['projects'], concurrency },
    poll: { intervalMs: 1_000 },
    retry: { maxAttempts: 3, backoffMs: 2_000 },
  });
}

describe('one pipeline across drains', () => {
  it("fills the first drain's tail with the next drain's items, under the cap, and the next drain finishes them", async () => {
    const h = createHarness(plan(5), { startDelayMs: 0, durationMs: 2_000 });
    h.fake.addItems('projects', 'nfs-1', range(1, 10));
    h.fake.addItems('projects', 'nfs-2', range(101, 400));
    // One huge repository on nfs-1: without the pipeline four slots idle while it moves alone.
    h.fake.setSize('projects', 1, 50 * 1024 ** 3, 60_000);
    const r1 = await runDrain(h.deps, first);
    expect(r1).toMatchObject({ moved: 10, remaining: 0 });
    const endOfFirst = h.clock.now();
    const earlyNext = h.fake.moves.filter((m) => m.itemId >= 101 && m.createdMs < endOfFirst);
    expect(earlyNext.length).toBeGreaterThan(10);
    // The first drain stops once its own items are done: the rest of nfs-2 is the next drain's.
    expect(h.store.countStates('projects', 'nfs-2').pending).toBeGreaterThan(0);
    const r2 = await runDrain(h.deps, second);
    expect(r2).toMatchObject({ moved: 300, remaining: 0 });
    expect(h.fake.peakInFlight).toBeLessThanOrEqual(5);
    expect(h.fake.violations).toEqual([]);
    for (const id of [...range(1, 10), ...range(101, 400)])
      expect(h.fake.movesOf('projects', id).filter((m) => m.state === 'finished')).toHaveLength(1);
  });

  it('without the next drain named, the first drain behaves as before (nothing of nfs-2 moves early)', async () => {
    const h = createHarness(plan(5), { startDelayMs: 0, durationMs: 2_000 });
    h.fake.addItems('projects', 'nfs-1', range(1, 10));
    h.fake.addItems('projects', 'nfs-2', range(101, 110));
    await runDrain(h.deps, { ...first, ahead: null });
    expect(h.fake.movesOf('projects', 101)).toHaveLength(0);
  });

  it('under crashes at any point and random durations: the cap holds at the start of every move, nothing moves twice, nothing is left', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 100, max: 30_000 }), { minLength: 2, maxLength: 12 }),
        fc.array(fc.integer({ min: 100, max: 30_000 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.integer({ min: 1, max: 80 }), { maxLength: 3 }),
        async (firstDurations, secondDurations, concurrency, crashes) => {
          const h = createHarness(plan(concurrency), { startDelayMs: 0 });
          firstDurations.forEach((ms, i) => {
            h.fake.addItems('projects', 'nfs-1', [i + 1]);
            h.fake.setSize('projects', i + 1, ms * 1024, ms);
          });
          secondDurations.forEach((ms, i) => {
            h.fake.addItems('projects', 'nfs-2', [i + 101]);
            h.fake.setSize('projects', i + 101, ms * 1024, ms);
          });
          let run = h;
          // The machine re-invokes the drain it was on: crash anywhere in the first, then finish both.
          for (const at of crashes) {
            let n = 0;
            h.fake.onRequest = () => {
              if (++n >= at) throw new CodedError('TEST_CRASH', 'killed');
            };
            await runDrain(run.deps, first).catch(() => undefined);
            h.fake.onRequest = null;
            run = resumed(run);
          }
          await runDrain(run.deps, first);
          const r2 = await runDrain(run.deps, second);
          expect(r2.remaining).toBe(0);
          expect(h.fake.violations).toEqual([]);
          expect(h.fake.peakInFlight).toBeLessThanOrEqual(concurrency);
          for (let i = 0; i < firstDurations.length; i++)
            expect(h.fake.item('projects', i + 1)?.storage).toBe('cluster');
          for (let i = 0; i < secondDurations.length; i++)
            expect(h.fake.item('projects', i + 101)?.storage).toBe('cluster');
        },
      ),
      { numRuns: 40 },
    );
  });

  it("runs the drain's verification re-list alongside the next drain's moves, and still retries what it finds", async () => {
    // A listing page of nfs-1 takes 10 s on the fake clock, five times a move: moves of nfs-2 end during its re-list.
    const h = withDelays(createHarness(plan(4), { startDelayMs: 0, durationMs: 2_000, perPage: 2 }), {
      listItemsOnStorage: (_kind, storage) => (storage === 'nfs-1' ? 10_000 : 0),
    });
    h.fake.addItems('projects', 'nfs-1', range(1, 10));
    h.fake.addItems('projects', 'nfs-2', range(101, 160));
    // Its first move says finished but leaves it on nfs-1: the re-list must find it and send it again.
    h.fake.script('projects', 3, 'finished-not-moved', 'ok');
    const r1 = await runDrain(h.deps, first);
    expect(r1).toMatchObject({ moved: 10, remaining: 0 });
    const events = h.store.readEvents(0, 100_000);
    const relist = events.find(
      (e) => e.type === 'enumerate.started' && e.data.source === 'nfs-1' && e.data.round === 2,
    );
    const relisted = events.find(
      (e) => e.type === 'enumerate.finished' && e.data.source === 'nfs-1' && e.data.round === 2,
    );
    expect(relist && relisted).toBeTruthy();
    const during = h.fake.moves.filter(
      (m) => m.itemId >= 101 && m.createdMs > (relist?.at ?? 0) && m.createdMs < (relisted?.at ?? 0),
    );
    expect(during.length).toBeGreaterThan(0);
    expect(h.fake.movesOf('projects', 3)).toHaveLength(2);
    expect(h.fake.item('projects', 3)?.storage).toBe('cluster');
    const r2 = await runDrain(h.deps, second);
    expect(r2).toMatchObject({ moved: 60, remaining: 0 });
    expect(h.fake.peakInFlight).toBeLessThanOrEqual(4);
    expect(h.fake.violations).toEqual([]);
  });
});
