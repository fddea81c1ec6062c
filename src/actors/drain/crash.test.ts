/**
 * Crash tests: the instance stops answering at the N-th request (the process "dies" there), then
 * a new drain resumes on the same checkpoint. Whatever N, the end state is the same and the
 * invariants hold: no second move in flight for an item, no move for an item already on the
 * destination, no item moved twice.
 */
import { describe, expect, it } from 'vitest';
import { createHarness, range, resumed, testPlan } from '../../../test/support/drain-harness.js';
import type { Harness } from '../../../test/support/drain-harness.js';
import { runDrain } from './run.js';

class Crash extends Error {
  readonly code = 'TEST_CRASH';
}

function setup(mode: 'throttled' | 'bulk'): Harness {
  const h = createHarness(testPlan({ move: { mode, concurrency: 4 }, retry: { maxAttempts: 2, backoffMs: 10_000 } }));
  h.fake.addItems('projects', 'nfs-1', range(1, 12));
  h.fake.script('projects', 3, 'fail', 'ok');
  h.fake.script('projects', 9, 'fail');
  h.fake.ambiguousApplied.add('projects:5');
  return h;
}

async function crashAt(h: Harness, n: number): Promise<boolean> {
  let count = 0;
  h.fake.onRequest = () => {
    if (++count >= n) throw new Crash(`killed at request ${n}`);
  };
  try {
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    return false;
  } catch (err) {
    if (!(err instanceof Crash) && (err as { code?: string }).code !== 'TEST_CRASH') throw err;
    return true;
  } finally {
    h.fake.onRequest = null;
  }
}

describe.each(['throttled', 'bulk'] as const)('%s drain killed at any request', (mode) => {
  it('resumes to the same end state with the invariants intact', async () => {
    const baseline = setup(mode);
    await runDrain(baseline.deps, { source: 'nfs-1', kind: 'projects' });
    const requests = baseline.fake.stats().requests;
    let crashes = 0;
    for (let n = 1; n <= 200; n += 1) {
      const h = setup(mode);
      const crashed = await crashAt(h, n);
      const r = await runDrain(resumed(h).deps, { source: 'nfs-1', kind: 'projects' });
      expect({ n, r }).toEqual({ n, r: { moved: 11, quarantined: 1, remaining: 0 } });
      expect({ n, v: h.fake.violations }).toEqual({ n, v: [] });
      for (const id of range(1, 12)) {
        const finished = h.fake.movesOf('projects', id).filter((m) => m.state === 'finished');
        expect({ n, id, finished: finished.length }).toEqual({ n, id, finished: id === 9 ? 0 : 1 });
      }
      expect(h.fake.movesOf('projects', 9)).toHaveLength(2);
      if (!crashed) break;
      crashes++;
    }
    // Every request of an uninterrupted drain was a crash point once.
    expect(crashes).toBeGreaterThanOrEqual(requests);
  });
});

describe.each(['throttled', 'bulk'] as const)('%s drain killed right after a POST was applied', (mode) => {
  it('reconciles without a second POST for the same move', async () => {
    for (let m = 1; m <= 40; m++) {
      const h = setup(mode);
      let posts = 0;
      const one = h.fake.scheduleMove.bind(h.fake);
      const bulk = h.fake.scheduleBulk.bind(h.fake);
      // After the kill nothing answers any more: the dead process sends nothing.
      const die = (): never => {
        h.fake.onRequest = () => {
          throw new Crash('dead');
        };
        throw new Crash('killed after the POST');
      };
      h.fake.scheduleMove = async (...a) => {
        const r = await one(...a);
        if (++posts === m) die();
        return r;
      };
      h.fake.scheduleBulk = async (...a) => {
        await bulk(...a);
        if (++posts === m) die();
      };
      await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' }).catch(() => undefined);
      const crashed = posts >= m;
      h.fake.scheduleMove = one;
      h.fake.scheduleBulk = bulk;
      h.fake.onRequest = null;
      const r = await runDrain(resumed(h).deps, { source: 'nfs-1', kind: 'projects' });
      expect({ m, r }).toEqual({ m, r: { moved: 11, quarantined: 1, remaining: 0 } });
      expect({ m, v: h.fake.violations }).toEqual({ m, v: [] });
      expect(h.fake.bulkPosts).toBeLessThanOrEqual(1);
      for (const id of range(1, 12))
        expect({ m, id, n: h.fake.movesOf('projects', id).length }).toEqual({ m, id, n: id === 3 || id === 9 ? 2 : 1 });
      if (!crashed) break;
    }
  });
});
