import { describe, expect, it } from 'vitest';
import { ApiAmbiguousError, ApiRateLimitedError } from '../../api/errors.js';
import { abortAt, createHarness, range, resumed, testPlan } from '../../../test/support/drain-harness.js';
import { bulkThrottleWaitMs } from './bulk.js';
import { runDrain } from './run.js';
import { runVerify } from '../verify.js';

const bulkPlan = (concurrency = 10) => testPlan({ move: { mode: 'bulk', concurrency } });

/**
 * 20 snippets drained in bulk, the bulk POST applied but answered by a dropped connection: the
 * drain posts it once, and each snippet gets one move.
 */
async function postsOnceAfterAmbiguous(h: ReturnType<typeof createHarness>): Promise<void> {
  h.fake.addItems('snippets', 'nfs-1', range(1, 20));
  const real = h.fake.scheduleBulk.bind(h.fake);
  h.fake.scheduleBulk = async (kind, source, dest) => {
    await real(kind, source, dest);
    throw new ApiAmbiguousError({ method: 'POST', path: '/snippet_repository_storage_moves' }, null, 'socket hang up');
  };
  const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets' });
  expect(h.fake.bulkPosts).toBe(1);
  expect(r).toEqual({ moved: 20, quarantined: 0, remaining: 0 });
  for (const id of range(1, 20)) expect(h.fake.movesOf('snippets', id)).toHaveLength(1);
}

describe('bulk drain', () => {
  it('posts once per kind and source, follows the moves, and retries failures per item', async () => {
    const h = createHarness(bulkPlan());
    h.fake.addItems('projects', 'nfs-1', range(1, 150));
    h.fake.addItems('projects', 'nfs-2', range(1000, 1010));
    h.fake.script('projects', 7, 'fail', 'ok');
    h.fake.script('projects', 8, 'fail');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(h.fake.bulkPosts).toBe(1);
    expect(r).toEqual({ moved: 149, quarantined: 1, remaining: 0 });
    expect(h.fake.movesOf('projects', 7).map((m) => m.state)).toEqual(['failed', 'finished']);
    expect(h.fake.movesOf('projects', 8)).toHaveLength(3);
    expect(h.fake.item('projects', 1005)?.storage).toBe('nfs-2');
    expect(h.fake.violations).toEqual([]);
  });

  it('does not post again after an ambiguous failure once the bulk moves appeared', async () => {
    const h = createHarness(bulkPlan());
    await postsOnceAfterAmbiguous(h);
  });

  it('waits Retry-After after a 429 on the bulk POST and posts again: two POSTs, no failed drain', async () => {
    const h = createHarness(bulkPlan());
    h.fake.addItems('projects', 'nfs-1', range(1, 20));
    const real = h.fake.scheduleBulk.bind(h.fake);
    const postedAt: number[] = [];
    h.fake.scheduleBulk = async (kind, source, dest) => {
      postedAt.push(h.clock.now());
      if (postedAt.length === 1) {
        throw new ApiRateLimitedError(
          { method: 'POST', path: '/api/v4/project_repository_storage_moves' },
          'Retry later',
          'Retry later',
          120_000,
        );
      }
      await real(kind, source, dest);
    };
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(postedAt).toHaveLength(2);
    expect((postedAt[1] as number) - (postedAt[0] as number)).toBe(120_000);
    expect(r).toEqual({ moved: 20, quarantined: 0, remaining: 0 });
    expect(h.fake.postsPerItem.size).toBe(0);
  });

  it('stops waiting out a bulk 429 when the drain is aborted, without posting again', async () => {
    const h = createHarness(bulkPlan());
    h.fake.addItems('projects', 'nfs-1', range(1, 5));
    let posts = 0;
    h.fake.scheduleBulk = async () => {
      posts++;
      h.abort.abort(new Error('SIGINT'));
      throw new ApiRateLimitedError(
        { method: 'POST', path: '/api/v4/project_repository_storage_moves' },
        'Retry later',
        'Retry later',
        60_000,
      );
    };
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).rejects.toMatchObject({
      code: 'SHARDMOVE_ABORTED',
    });
    expect(posts).toBe(1);
  });

  it('caps a long Retry-After, waits a default without one, and never spins on Retry-After: 0', () => {
    expect(bulkThrottleWaitMs(3_600_000)).toBe(300_000);
    expect(bulkThrottleWaitMs(null)).toBe(60_000);
    expect(bulkThrottleWaitMs(0)).toBe(1_000);
    expect(bulkThrottleWaitMs(7_000)).toBe(7_000);
  });

  it('resumes after an abort while following the bulk job without posting it again', async () => {
    const h = createHarness(bulkPlan(), { durationMs: 20_000 });
    h.fake.addItems('groups', 'nfs-1', range(1, 30));
    abortAt(h, 'listMoves', 3, 'SIGTERM');
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'groups' })).rejects.toMatchObject({
      code: 'SHARDMOVE_ABORTED',
    });
    h.fake.onRequest = null;
    const r = await runDrain(resumed(h).deps, { source: 'nfs-1', kind: 'groups' });
    expect(r).toEqual({ moved: 30, quarantined: 0, remaining: 0 });
    expect(h.fake.bulkPosts).toBe(1);
    for (const id of range(1, 30)) expect(h.fake.movesOf('groups', id)).toHaveLength(1);
  });

  it('sends nothing mutating in a dry run', async () => {
    const h = createHarness(bulkPlan());
    h.fake.addItems('projects', 'nfs-1', range(1, 10));
    const r = await runDrain({ ...h.deps, dryRun: true }, { source: 'nfs-1', kind: 'projects' });
    expect(r.remaining).toBe(10);
    expect(h.fake.stats().mutating).toBe(0);
  });
});

describe('bulk drain with a slow bulk job', () => {
  it('does not post again after an ambiguous failure while the job waits in the queue, with no move yet', async () => {
    const h = createHarness(bulkPlan(), { bulkDelayMs: 75_000 });
    await postsOnceAfterAmbiguous(h);
  });

  it("waits for the job while Sidekiq's queue shows it, instead of racing it with per-item POSTs", async () => {
    const h = createHarness(bulkPlan(), { bulkDelayMs: 10 * 60_000 });
    h.fake.addItems('projects', 'nfs-1', range(1, 10));
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 10, quarantined: 0, remaining: 0 });
    expect(h.fake.postsPerItem.size).toBe(0);
    for (const id of range(1, 10)) expect(h.fake.movesOf('projects', id)).toHaveLength(1);
    // The wait was a hold on the run, released once the job left the queue.
    const caps = h.store.lastEventsOf(['cap.changed'], 50).map((e) => e.data.limit);
    expect(caps).toContain('queue');
    expect(h.store.lastEventOf(['cap.changed'])?.data.limit).not.toBe('queue');
  });

  it("waits a minute at most when Sidekiq's queue cannot be read", async () => {
    const h = createHarness(bulkPlan(), { queueMetrics: 'forbidden' });
    h.fake.addItems('projects', 'nfs-1', range(1, 10));
    const real = h.fake.scheduleBulk.bind(h.fake);
    const postedAt = { t: 0 };
    // The job is accepted now but its moves only appear 40 s later (a busy Sidekiq).
    h.fake.scheduleBulk = async () => {
      h.fake.bulkPosts++;
      postedAt.t = h.clock.now();
    };
    const listMoves = h.fake.listMoves.bind(h.fake);
    h.fake.listMoves = async (...a) => {
      if (postedAt.t > 0 && h.clock.now() >= postedAt.t + 40_000) {
        postedAt.t = -1;
        h.fake.bulkPosts--;
        await real('projects', 'nfs-1', 'cluster');
      }
      return listMoves(...a);
    };
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 10, quarantined: 0, remaining: 0 });
    expect(h.fake.postsPerItem.size).toBe(0);
    for (const id of range(1, 10)) expect(h.fake.movesOf('projects', id)).toHaveLength(1);
  });
});

describe('content verification of a bulk move', () => {
  const contentPlan = () => ({ ...bulkPlan(), verify: { content: { fraction: 1 } } });

  it('reads every sampled project before the POST and finds a drift the move made', async () => {
    const h = createHarness(contentPlan());
    h.fake.addItems('projects', 'nfs-1', range(1, 12));
    const real = h.fake.scheduleBulk.bind(h.fake);
    let readsBefore = -1;
    h.fake.scheduleBulk = async (kind, source, dest) => {
      readsBefore = h.deps.store.eventsOf(['content.recorded'], 0, 100).length;
      await real(kind, source, dest);
      // The move loses a tag of project 3.
      h.fake.fingerprints.set(3, { defaultBranch: 'main', head: 'head-of-3', branches: 1, tags: 2 });
    };
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(readsBefore).toBe(12);
    const v = await runVerify(h.deps);
    expect(v.ok).toBe(false);
    expect(v.content).toMatchObject({ sampled: 12, equal: 11, differ: 1, notCompared: 0 });
    expect(v.problems).toContain('projects 3 (projects/3): its content differs after its move: tags 3 -> 2');
  });

  it('reads nothing once a POST may have been sent before a restart, and counts those projects as not compared', async () => {
    const h = createHarness(contentPlan());
    h.fake.addItems('projects', 'nfs-1', range(1, 4));
    const now = h.clock.now();
    // A process before this one recorded the intent and may have sent the POST (its answer was not seen).
    h.deps.store.setBulk({ kind: 'projects', source: 'nfs-1', state: 'intent', intentAt: now, seenMaxMoveId: 0 });
    h.deps.store.appendEvent(
      'bulk.intent',
      { kind: 'projects', source: 'nfs-1', destination: 'cluster', attempt: 1 },
      now,
    );
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(h.deps.store.eventsOf(['content.recorded'], 0, 100)).toEqual([]);
    const v = await runVerify(h.deps);
    expect(v.content).toMatchObject({ sampled: 4, equal: 0, differ: 0, notCompared: 4 });
    expect(v.content!.unchecked[0]!.why).toContain('none was taken: its bulk POST may have been sent already');
  });
});
