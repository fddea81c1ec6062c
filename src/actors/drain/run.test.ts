import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiRateLimitedError, ApiUnauthorizedError } from '../../api/errors.js';
import { KINDS } from '../../plan/types.js';
import { openCheckpoint } from '../../store/checkpoint.js';
import { abortAt, createHarness, range, resumed, testPlan } from '../../../test/support/drain-harness.js';
import { runDrain } from './run.js';

/** Where the scripted POST failures claim to come from. */
const POST = { method: 'POST', path: '/projects/1/repository_storage_moves' };

describe('throttled drain', () => {
  it('moves every item of every kind and verifies by re-listing the source', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 120));
    h.fake.addItems('snippets', 'nfs-1', range(1, 30));
    h.fake.addItems('groups', 'nfs-1', range(1, 12));
    h.fake.addItems('projects', 'other', range(500, 510));
    for (const kind of KINDS) {
      const r = await runDrain(h.deps, { source: 'nfs-1', kind });
      expect(r.quarantined).toBe(0);
      expect(r.remaining).toBe(0);
    }
    for (const it of h.fake.items.values()) expect(it.storage).toBe(it.id >= 500 ? 'other' : 'cluster');
    expect(h.fake.violations).toEqual([]);
    expect(
      h.store
        .summary(h.clock.now())
        .counts.filter((c) => c.state === 'moved')
        .reduce((a, c) => a + c.n, 0),
    ).toBe(162);
  });

  it('never has more than `concurrency` moves in flight', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 7 } }));
    h.fake.addItems('projects', 'nfs-1', range(1, 100));
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(h.fake.peakInFlight).toBe(7);
    expect(h.fake.violations).toEqual([]);
  });

  it('counts moves in flight across the whole run, not per kind', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 4 } }), { durationMs: 60_000 });
    h.fake.addItems('projects', 'nfs-1', range(1, 10));
    h.fake.addItems('snippets', 'nfs-1', range(1, 10));
    abortAt(h, 'scheduleMove', 4, 'SIGINT');
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).rejects.toMatchObject({
      code: 'SHARDMOVE_ABORTED',
    });
    expect(h.store.countInFlight()).toBe(4);
    h.fake.onRequest = null;
    // A drain of another kind still sees the 4 project moves in flight: no room until they end.
    const r = await runDrain(resumed(h).deps, { source: 'nfs-1', kind: 'snippets' });
    expect(r).toEqual({ moved: 10, quarantined: 0, remaining: 0 });
    expect(h.fake.peakInFlight).toBe(4);
    expect(h.store.countStates('projects', 'nfs-1')).toMatchObject({ moved: 4, in_flight: 0, pending: 6 });
  });

  it('fills free slots from each listed page as it lands, not one page per poll interval', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 400 } }), { durationMs: 60_000 });
    h.fake.addItems('projects', 'nfs-1', range(1, 500));
    let posts = 0;
    let postsBeforeFirstPoll: number | null = null;
    h.fake.onRequest = (name) => {
      if (name === 'scheduleMove') posts++;
      if (name === 'listMoves') postsBeforeFirstPoll ??= posts;
    };
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    // Pages of 100: the cap (400) is reached from the listing alone, before the first poll.
    expect(postsBeforeFirstPoll).toBe(400);
    expect(h.fake.violations).toEqual([]);
  });

  it('starts moving with the first listed page instead of after the whole listing', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 500));
    const calls: string[] = [];
    h.fake.onRequest = (name) => calls.push(name);
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    const pages = calls.flatMap((c, i) => (c === 'listItemsOnStorage' ? [i] : []));
    // Pages 1-5 of round 1 (then the verification rounds): the first POST comes before page 5.
    expect(calls.indexOf('scheduleMove')).toBeLessThan(pages[4]!);
  });

  it('retries a failed move after the backoff and then succeeds', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 5));
    h.fake.script('projects', 3, 'fail', 'fail', 'ok');
    const t0 = h.clock.now();
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 5, quarantined: 0, remaining: 0 });
    expect(h.fake.movesOf('projects', 3).map((m) => m.state)).toEqual(['failed', 'failed', 'finished']);
    const [m1, m2] = h.fake.movesOf('projects', 3);
    expect(m2!.createdMs - m1!.createdMs).toBeGreaterThanOrEqual(30_000);
    expect(h.clock.now() - t0).toBeGreaterThan(60_000);
    expect(h.store.getItem('projects', 3)).toMatchObject({ state: 'moved', attempts: 3 });
  });

  it('reads a retried item before its POST and never moves it onto the storage it is on', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', [1, 2]);
    h.fake.script('projects', 1, 'fail');
    // The failed move changed the storage record anyway (the kind of bug that loses data on a re-run).
    h.fake.onRequest = (name) => {
      if (name === 'getItem') h.fake.item('projects', 1)!.storage = 'cluster';
    };
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 2, quarantined: 0, remaining: 0 });
    expect(h.fake.movesOf('projects', 1)).toHaveLength(1);
    // A failed move that switched the storage anyway: moved, its source copy reported as left behind.
    expect(h.store.getItem('projects', 1)).toMatchObject({
      state: 'moved',
      moveState: 'failed',
      lastError: expect.stringMatching(/failed after the switch/),
    });
    expect(h.fake.violations).toEqual([]);
  });

  it('moves a snippet GET /snippets/:id hides from the admin: its 404 is not read as deleted', async () => {
    const h = createHarness();
    h.fake.addItems('snippets', 'nfs-1', [1, 2, 3]);
    h.fake.hideSnippet(2);
    // A failed first move: the retry reads the item again before its POST.
    h.fake.script('snippets', 2, 'fail', 'ok');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets' });
    expect(r).toEqual({ moved: 3, quarantined: 0, remaining: 0 });
    expect(h.fake.item('snippets', 2)?.storage).toBe('cluster');
    expect(h.store.getItem('snippets', 2)).toMatchObject({ state: 'moved', attempts: 2 });
    expect(h.store.readEvents(0, 10_000).filter((e) => e.type === 'item.not_on_source')).toEqual([]);
  });

  it('counts a move that failed after the switch as moved, and lists its source copy as left behind', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', [1, 2, 3]);
    h.fake.script('projects', 2, 'fail-after-switch');
    h.fake.script('projects', 3, 'fail', 'ok');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 3, quarantined: 0, remaining: 0 });
    // One move only: the item was found on the destination before a second POST.
    expect(h.fake.movesOf('projects', 2).map((m) => m.state)).toEqual(['failed']);
    expect(h.fake.violations).toEqual([]);
    const [move] = h.fake.movesOf('projects', 2);
    expect(h.store.summary(h.clock.now()).orphans).toEqual([
      { kind: 'projects', id: 2, name: expect.any(String), source: 'nfs-1', moveId: move!.id, moveState: 'failed' },
    ]);
    expect(h.store.getItem('projects', 2)?.lastError).toMatch(
      /failed after the switch: the repository is on cluster, its copy on nfs-1 is left behind/,
    );
  });

  it('quarantines a permanently failing item with GitLab error_message', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 4));
    h.fake.script('projects', 2, 'fail');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 3, quarantined: 1, remaining: 0 });
    expect(h.fake.movesOf('projects', 2)).toHaveLength(3);
    const q = h.store.summary(h.clock.now()).quarantined;
    expect(q).toEqual([
      expect.objectContaining({ id: 2, attempts: 3, reason: 'Failed to replicate projects 2: checksum mismatch' }),
    ]);
  });

  it('quarantines an item the instance keeps rejecting, with the rejection as the reason', async () => {
    const h = createHarness(testPlan({ retry: { maxAttempts: 2 } }));
    h.fake.addItems('projects', 'nfs-1', [1, 2]);
    h.fake.rejections.set('projects:1', 'destination_storage_name is not included in the list');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 1, quarantined: 1, remaining: 0 });
    expect(h.fake.postsPerItem.get('projects:1')).toBe(2);
    expect(h.store.getItem('projects', 1)?.lastError).toMatch(/not included in the list/);
  });

  it('stops on a revoked token without counting the attempt, and resumes with a new one', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 3));
    h.fake.onRequest = (name) => {
      if (name === 'scheduleMove')
        throw new ApiUnauthorizedError(POST, '401 Unauthorized', null, {
          invalidToken: true,
          description: 'Token was revoked.',
        });
    };
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).rejects.toMatchObject({
      code: 'SHARDMOVE_API_UNAUTHORIZED',
    });
    expect(h.store.getItem('projects', 1)).toMatchObject({ state: 'pending', attempts: 0 });
    expect(h.store.summary(h.clock.now()).quarantined).toEqual([]);
    h.fake.onRequest = null;
    expect(await runDrain(resumed(h).deps, { source: 'nfs-1', kind: 'projects' })).toEqual({
      moved: 3,
      quarantined: 0,
      remaining: 0,
    });
  });

  it('waits out a 429 on a POST without counting an attempt', async () => {
    const h = createHarness(testPlan({ retry: { maxAttempts: 1 } }));
    h.fake.addItems('projects', 'nfs-1', [1]);
    let limited = 2;
    h.fake.onRequest = (name) => {
      if (name === 'scheduleMove' && limited-- > 0) throw new ApiRateLimitedError(POST, null, null, 7000);
    };
    expect(await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).toEqual({
      moved: 1,
      quarantined: 0,
      remaining: 0,
    });
    expect(h.store.getItem('projects', 1)?.attempts).toBe(1);
  });

  it('reports cleanup failed as moved with the source copy left behind', async () => {
    const h = createHarness();
    h.fake.addItems('snippets', 'nfs-1', [1, 2]);
    h.fake.script('snippets', 1, 'cleanup-fail');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets' });
    expect(r).toEqual({ moved: 2, quarantined: 0, remaining: 0 });
    expect(h.store.getItem('snippets', 1)).toMatchObject({ state: 'moved', moveState: 'cleanup failed' });
    expect(h.store.getItem('snippets', 1)?.lastError).toMatch(/source copy left behind/);
    expect(h.fake.movesOf('snippets', 1)).toHaveLength(1);
    expect(h.store.summary(h.clock.now()).orphans).toEqual([
      expect.objectContaining({ kind: 'snippets', id: 1, source: 'nfs-1', moveState: 'cleanup failed' }),
    ]);
  });

  it('adopts a move already running (read-only) instead of fighting it', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 3));
    const foreign = h.fake.startForeignMove('projects', 2, 'cluster');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 3, quarantined: 0, remaining: 0 });
    expect(h.fake.movesOf('projects', 2).map((m) => m.id)).toEqual([foreign.id]);
    expect(h.fake.postsPerItem.get('projects:2')).toBe(1);
    expect(h.store.getItem('projects', 2)).toMatchObject({ state: 'moved', moveId: foreign.id });
    expect(h.fake.violations).toEqual([]);
  });

  it('re-lists items before their POST when the listing is stale, and skips those that left', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 1 } }));
    h.fake.addItems('projects', 'nfs-1', range(1, 3));
    // Someone else moves item 3 while the run is busy with items 1 and 2.
    h.fake.startForeignMove('projects', 3, 'cluster');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 3, quarantined: 0, remaining: 0 });
    expect(h.fake.postsPerItem.get('projects:3')).toBeUndefined();
    // Not listed any more, so read on its own: it is on the destination (moved by someone else), not just "gone".
    expect(h.store.getItem('projects', 3)).toMatchObject({ state: 'moved', lastError: 'already on the destination' });
    expect(h.fake.violations).toEqual([]);
  });

  it('reconciles an ambiguous POST that was applied, without a second POST', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 3));
    h.fake.ambiguousApplied.add('projects:2');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 3, quarantined: 0, remaining: 0 });
    expect(h.fake.postsPerItem.get('projects:2')).toBe(1);
    expect(h.fake.movesOf('projects', 2)).toHaveLength(1);
    expect(h.store.getItem('projects', 2)).toMatchObject({ state: 'moved', attempts: 1 });
  });

  it('re-schedules after an ambiguous POST only once the instance shows no move was created', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', [1]);
    h.fake.ambiguousLost.add('projects:1');
    const calls: string[] = [];
    h.fake.onRequest = (name) => calls.push(name);
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    const first = calls.indexOf('scheduleMove');
    const second = calls.indexOf('scheduleMove', first + 1);
    // In between: the item's moves and its storage are read (and maybe a freshness listing), nothing else.
    expect(calls.slice(first + 1, second).filter((c) => c !== 'listItemsOnStorage')).toEqual([
      'listItemMoves',
      'getItem',
    ]);
    expect(h.store.getItem('projects', 1)).toMatchObject({ state: 'moved', attempts: 1 });
  });

  it('quarantines a stuck move and never schedules the item again', async () => {
    const h = createHarness(testPlan({ poll: { stuckRunningAfterMs: 60_000 } }));
    h.fake.addItems('projects', 'nfs-1', range(1, 3));
    h.fake.script('projects', 1, 'stuck');
    expect(await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).toEqual({
      moved: 2,
      quarantined: 1,
      remaining: 0,
    });
    expect(h.fake.movesOf('projects', 1)).toHaveLength(1);
    const s = h.store.summary(h.clock.now());
    expect(s.stuck).toEqual([expect.objectContaining({ kind: 'projects', id: 1, moveState: 'started' })]);
    expect(s.quarantined[0]?.reason).toMatch(/^stuck/);
  });

  it('takes a stuck item out of quarantine on a later run once its move has ended', async () => {
    const h = createHarness(testPlan({ poll: { stuckRunningAfterMs: 60_000 } }));
    h.fake.addItems('projects', 'nfs-1', [1, 2]);
    h.fake.script('projects', 1, 'stuck');
    h.fake.script('projects', 2, 'stuck');
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(h.store.summary(h.clock.now()).stuck).toHaveLength(2);
    // An operator fixes item 1's move by hand; item 2's is still running.
    const [m1] = h.fake.movesOf('projects', 1);
    m1!.state = 'finished';
    h.fake.item('projects', 1)!.storage = 'cluster';
    h.fake.item('projects', 1)!.readOnly = false;
    const r = await runDrain(resumed(h).deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 1, quarantined: 1, remaining: 0 });
    expect(h.store.summary(h.clock.now()).stuck.map((s) => s.id)).toEqual([2]);
    expect(h.fake.movesOf('projects', 2)).toHaveLength(1);
  });

  it('sends an item that finished but is still listed on the source back for a new attempt', async () => {
    const h = createHarness();
    h.fake.addItems('groups', 'nfs-1', range(1, 3));
    h.fake.script('groups', 2, 'finished-not-moved', 'ok');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'groups' });
    expect(r).toEqual({ moved: 3, quarantined: 0, remaining: 0 });
    expect(h.fake.movesOf('groups', 2).map((m) => m.state)).toEqual(['finished', 'finished']);
    expect(h.fake.item('groups', 2)?.storage).toBe('cluster');
    expect(h.store.readEvents(0, 10_000).some((e) => e.type === 'item.still_on_source')).toBe(true);
  });

  it('picks up items that appear on the source mid-run', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 20));
    let added = false;
    h.fake.onRequest = (name) => {
      if (!added && name === 'scheduleMove') {
        added = true;
        h.fake.addItems('projects', 'nfs-1', [5000, 5001]);
      }
    };
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 22, quarantined: 0, remaining: 0 });
    expect(h.fake.item('projects', 5001)?.storage).toBe('cluster');
  });

  it('resumes after an abort mid-drain without scheduling any item twice', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 5 } }));
    h.fake.addItems('projects', 'nfs-1', range(1, 40));
    abortAt(h, 'scheduleMove', 12, 'SIGINT');
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).rejects.toMatchObject({
      code: 'SHARDMOVE_ABORTED',
    });
    const mid = h.store.summary(h.clock.now());
    expect(mid.total).toBe(40);
    h.fake.onRequest = null;
    const again = resumed(h);
    const r = await runDrain(again.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 40, quarantined: 0, remaining: 0 });
    for (const id of range(1, 40)) expect(h.fake.movesOf('projects', id)).toHaveLength(1);
    expect(h.fake.violations).toEqual([]);
  });

  it('reconciles items left in `scheduling` by a kill between intent and move id', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 4));
    // Simulate the kill: listing done, intents committed, POSTs applied, answers never recorded.
    h.store.startRound('projects', 'nfs-1', 1);
    h.store.recordPage(
      'projects',
      'nfs-1',
      1,
      [...range(1, 4)].map((id) => ({
        kind: 'projects' as const,
        id,
        storage: 'nfs-1',
        name: `p${id}`,
        sizeBytes: null,
      })),
      0,
    );
    h.store.finishRound('projects', 'nfs-1', 1);
    for (const id of [1, 2]) {
      h.store.markIntent('projects', id, h.clock.now());
      await h.fake.scheduleMove('projects', id, 'cluster');
    }
    h.store.markIntent('projects', 3, h.clock.now()); // POST never sent
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 4, quarantined: 0, remaining: 0 });
    for (const id of range(1, 4)) expect(h.fake.postsPerItem.get(`projects:${id}`)).toBe(1);
    expect(h.store.getItem('projects', 3)?.attempts).toBe(1);
  });

  it('uses at most 1.5 requests per moved item on a 1,000-item run', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 50 } }), { startDelayMs: 200, durationMs: 2000 });
    h.fake.addItems('projects', 'nfs-1', range(1, 1000));
    for (const id of [10, 200, 444]) h.fake.script('projects', id, 'fail', 'ok');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r.moved).toBe(1000);
    const perItem = h.fake.stats().requests / r.moved;
    expect(perItem).toBeLessThanOrEqual(1.5);
    expect(h.fake.violations).toEqual([]);
    // Every mutating request has its intent in the event log, written before it was sent.
    const intents = h.store.readEvents(0, 100_000).filter((e) => e.type === 'move.intent').length;
    expect(intents).toBe(h.fake.stats().mutating);
    expect(intents).toBe(1003);
  });
});

describe('a listing that ignores the storage filter', () => {
  it('stops the drain before any POST', async () => {
    const h = createHarness(testPlan(), { ignoreFilter: true });
    h.fake.addItems('projects', 'nfs-1', [1, 2]);
    h.fake.addItems('projects', 'cluster', [3]);
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).rejects.toMatchObject({
      code: 'SHARDMOVE_VERIFY_FILTER_IGNORED',
    });
    expect(h.fake.stats().mutating).toBe(0);
  });
});

describe('dry run', () => {
  it('enumerates and estimates without a single mutating request', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 250));
    const r = await runDrain({ ...h.deps, dryRun: true }, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 0, quarantined: 0, remaining: 250 });
    expect(h.fake.stats().mutating).toBe(0);
    expect(h.fake.moves).toHaveLength(0);
    expect(h.store.readEvents(0, 100).find((e) => e.type === 'drain.dry_run')?.data).toMatchObject({
      wouldSchedule: 250,
    });
  });
});

describe('status while a drain runs', () => {
  it('reads consistent counts from a second connection on the same file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sm-drain-'));
    try {
      const h = createHarness(testPlan(), {}, join(dir, 'run.db'));
      h.fake.addItems('projects', 'nfs-1', range(1, 300));
      const reader = openCheckpoint(join(dir, 'run.db'), { readOnly: true, busyTimeoutMs: 100 });
      const totals: number[] = [];
      h.deps.onProgress = () => {
        const s = reader.summary(h.clock.now());
        expect(s.counts.reduce((a, c) => a + c.n, 0)).toBe(s.total);
        totals.push(s.counts.filter((c) => c.state === 'moved').reduce((a, c) => a + c.n, 0));
      };
      await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
      expect(totals.length).toBeGreaterThan(10);
      expect(totals.at(-1)).toBe(300);
      expect([...totals].sort((a, b) => a - b)).toEqual(totals);
      reader.close();
      h.store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('live control (shardmove control)', () => {
  /** Calls `hook` before every sleep of the drain (its poll and backoff waits). */
  /** Projects 1 to `items` on nfs-1, the `failing` ones failing once, under a failure breaker. */
  function withBreaker(
    concurrency: number,
    pauseAfter: { failures: number; withinMs: number },
    items: number,
    failing: number[],
  ) {
    const plan = testPlan({ move: { concurrency }, retry: { maxAttempts: 3, backoffMs: 1_000, pauseAfter } });
    const h = createHarness(plan, { durationMs: 5_000 });
    h.fake.addItems('projects', 'nfs-1', range(1, items));
    for (const id of failing) h.fake.script('projects', id, 'fail', 'ok');
    return h;
  }

  function onSleep(h: ReturnType<typeof createHarness>, hook: () => void): void {
    const sleep = h.clock.sleep.bind(h.clock);
    h.clock.sleep = (ms, signal) => {
      hook();
      return sleep(ms, signal);
    };
  }

  it('a pause stops new moves while those in flight are followed to their end; unpausing moves the rest', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 5 } }), { durationMs: 20_000 });
    h.fake.addItems('projects', 'nfs-1', range(1, 40));
    let posts = 0;
    let pausedAt: number | null = null;
    let postsAtUnpause: number | null = null;
    h.fake.onRequest = (name) => {
      if (name === 'scheduleMove' && ++posts === 5) {
        h.store.writeControl({ paused: true }, h.clock.now());
        pausedAt = h.clock.now();
      }
    };
    onSleep(h, () => {
      // Two minutes paused: far longer than the five moves in flight take.
      if (pausedAt !== null && postsAtUnpause === null && h.clock.now() - pausedAt > 120_000) {
        expect(h.store.countInFlight()).toBe(0);
        expect(h.store.countStates('projects', 'nfs-1')).toMatchObject({ moved: 5, pending: 35 });
        postsAtUnpause = posts;
        h.store.writeControl({ paused: false }, h.clock.now());
      }
    });
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(postsAtUnpause).toBe(5);
    expect(r).toEqual({ moved: 40, quarantined: 0, remaining: 0 });
    expect(posts).toBe(40);
    expect(h.fake.violations).toEqual([]);
  });

  it("a stop asked for while a retry's item is read before its POST: that POST and every later one are not sent", async () => {
    const h = createHarness(testPlan({ move: { concurrency: 5 }, retry: { backoffMs: 1_000 } }), {
      durationMs: 5_000,
    });
    h.fake.addItems('projects', 'nfs-1', range(1, 10));
    h.fake.script('projects', 1, 'fail', 'ok');
    let stoppedAt: number | null = null;
    let postsAfterStop = 0;
    const getItem = h.fake.getItem.bind(h.fake);
    // The read of item 1 before its second POST: the stop lands while it is answered.
    h.fake.getItem = (kind, id) => {
      if (id === 1 && stoppedAt === null) {
        h.store.writeControl({ stop: { by: 'control' } }, h.clock.now());
        stoppedAt = h.clock.now();
      }
      return getItem(kind, id);
    };
    h.fake.onRequest = (name) => {
      if (name === 'scheduleMove' && stoppedAt !== null) postsAfterStop++;
    };
    // The run's watcher ends a stopped run once nothing is in flight: here, the test does.
    onSleep(h, () => {
      if (stoppedAt !== null && h.store.countInFlight() === 0) h.abort.abort(new Error('stopped on request'));
    });
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).rejects.toMatchObject({
      code: 'SHARDMOVE_ABORTED',
    });
    expect(stoppedAt).not.toBeNull();
    expect(postsAfterStop).toBe(0);
    // Item 1 waits again, its attempt not counted for the POST that was never sent.
    const row = h.store.getItem('projects', 1);
    expect(row).toMatchObject({ state: 'pending', attempts: 1 });
    expect(h.fake.violations).toEqual([]);
  });

  it('the failure breaker pauses the run after N failed moves within its window; nothing starts until unpaused', async () => {
    const h = withBreaker(2, { failures: 3, withinMs: 600_000 }, 10, [1, 2, 3]);
    let postsWhilePaused = 0;
    let trippedAt: number | null = null;
    h.fake.onRequest = (name) => {
      if (name === 'scheduleMove' && h.store.readControl().paused) postsWhilePaused++;
    };
    onSleep(h, () => {
      const control = h.store.readControl();
      if (control.paused && trippedAt === null) trippedAt = h.clock.now();
      // An hour paused, then the operator unpauses.
      if (trippedAt !== null && control.paused && h.clock.now() - trippedAt > 3_600_000)
        h.store.writeControl({ paused: false }, h.clock.now());
    });
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 10, quarantined: 0, remaining: 0 });
    expect(trippedAt).not.toBeNull();
    expect(postsWhilePaused).toBe(0);
    const tripped = h.store.readEvents(0, 10_000).filter((e) => e.type === 'breaker.tripped');
    expect(tripped).toHaveLength(1);
    expect(tripped[0]?.data).toMatchObject({
      failures: 3,
      withinMs: 600_000,
      reason: expect.stringMatching(/^paused by the failure breaker: 3 moves failed within 10m/),
    });
    const caps = h.store.readEvents(0, 10_000).flatMap((e) => (e.type === 'cap.changed' ? [e.data] : []));
    expect(caps.some((c) => c.limit === 'paused' && c.reason.startsWith('paused by the failure breaker'))).toBe(true);
    expect(h.fake.violations).toEqual([]);
  });

  it("failures spread wider than the breaker's window never trip it", async () => {
    const h = withBreaker(1, { failures: 2, withinMs: 1_000 }, 4, [1, 3]);
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 4, quarantined: 0, remaining: 0 });
    expect(h.store.readEvents(0, 10_000).filter((e) => e.type === 'breaker.tripped')).toEqual([]);
    expect(h.store.readControl().paused).toBe(false);
  });

  it('a lower cap set mid-run holds from the moment the moves above it have ended; "plan" restores the plan\'s', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 10 } }), { durationMs: 20_000 });
    h.fake.addItems('projects', 'nfs-1', range(1, 80));
    let posts = 0;
    let phase: 'plan' | 'lowering' | 'low' | 'restored' = 'plan';
    let peakLow = 0;
    let peakRestored = 0;
    h.fake.onRequest = (name) => {
      if (name !== 'scheduleMove') return;
      posts++;
      const inFlight = h.store.countInFlight();
      if (phase === 'low') peakLow = Math.max(peakLow, inFlight);
      if (phase === 'restored') peakRestored = Math.max(peakRestored, inFlight);
      if (posts === 10) {
        h.store.writeControl({ concurrency: 3 }, h.clock.now());
        phase = 'lowering';
      }
      if (posts === 40) {
        h.store.writeControl({ concurrency: null }, h.clock.now());
        phase = 'restored';
      }
    };
    onSleep(h, () => {
      if (phase === 'lowering' && h.store.countInFlight() <= 3) phase = 'low';
    });
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 80, quarantined: 0, remaining: 0 });
    expect(peakLow).toBeGreaterThan(0);
    expect(peakLow).toBeLessThanOrEqual(3);
    expect(peakRestored).toBe(10);
    expect(h.fake.violations).toEqual([]);
  });

  it('bulk mode holds its bulk POST while paused', async () => {
    const h = createHarness(testPlan({ move: { mode: 'bulk' } }));
    h.fake.addItems('projects', 'nfs-1', range(1, 20));
    h.store.writeControl({ paused: true }, h.clock.now());
    const t0 = h.clock.now();
    let bulkAt: number | null = null;
    h.fake.onRequest = (name) => {
      if (name === 'scheduleBulk') bulkAt ??= h.clock.now();
    };
    onSleep(h, () => {
      if (h.clock.now() - t0 >= 60_000 && h.store.readControl().paused)
        h.store.writeControl({ paused: false }, h.clock.now());
    });
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 20, quarantined: 0, remaining: 0 });
    expect(bulkAt).not.toBeNull();
    expect(bulkAt! - t0).toBeGreaterThanOrEqual(60_000);
  });
});
