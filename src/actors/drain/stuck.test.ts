/**
 * Stuck detection: GitLab's move worker is a throttled Sidekiq job, so a move may
 * wait in `scheduled` for hours on a busy instance without being broken. Time queued has its own,
 * long limit; the running limit is timed from when the move was first seen running and grows with
 * the repository's size when the size is known.
 */
import { describe, expect, it } from 'vitest';
import { createHarness, range, resumed, testPlan } from '../../../test/support/drain-harness.js';
import { runDrain } from './run.js';
import { stuckLimitMs } from './outcome.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const GIB = 1024 ** 3;

/** Polls a minute apart (hours of fake time without thousands of polls), limits as given. */
function plan(poll: Partial<ReturnType<typeof testPlan>['poll']> = {}, mode: 'throttled' | 'bulk' = 'throttled') {
  return testPlan({
    move: { mode },
    poll: {
      intervalMs: MIN,
      stuckRunningAfterMs: HOUR,
      stuckScheduledAfterMs: 24 * HOUR,
      stuckRunningPerGbMs: 30 * MIN,
      ...poll,
    },
  });
}

describe('stuck detection', () => {
  it('does not quarantine a move that queued in scheduled for 5 h (longer than the running limit), then ran 10 min', async () => {
    const h = createHarness(plan(), { startDelayMs: 5 * HOUR, durationMs: 10 * MIN });
    h.fake.addItems('projects', 'nfs-1', range(1, 3));
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 3, quarantined: 0, remaining: 0 });
    expect(h.store.summary(h.clock.now()).stuck).toEqual([]);
  });

  it('quarantines a move running longer than the running limit, timed from when it was first seen running', async () => {
    const h = createHarness(plan(), { startDelayMs: 5 * HOUR });
    h.fake.addItems('projects', 'nfs-1', [1]);
    h.fake.script('projects', 1, 'stuck');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 0, quarantined: 1, remaining: 0 });
    const [move] = h.fake.movesOf('projects', 1);
    const row = h.store.getItem('projects', 1);
    expect(row?.lastError).toMatch(
      /^stuck: move \d+ still started after 36\d\ds running \(poll\.stuck_running_after 1h\)$/,
    );
    // Quarantined about an hour after it started running, not an hour after it was scheduled.
    const startedAt = (move?.createdMs ?? 0) + 5 * HOUR;
    expect(row?.stuckAt).toBeGreaterThan(startedAt + HOUR);
    expect(row?.stuckAt).toBeLessThanOrEqual(startedAt + HOUR + 3 * MIN);
  });

  it('quarantines a move queued longer than stuck_scheduled_after, saying it was queued', async () => {
    const h = createHarness(plan({ stuckScheduledAfterMs: 2 * HOUR }), { startDelayMs: 30 * HOUR });
    h.fake.addItems('projects', 'nfs-1', [1]);
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r.quarantined).toBe(1);
    expect(h.store.getItem('projects', 1)?.lastError).toMatch(
      /still scheduled after 72\d\ds in the queue \(poll\.stuck_scheduled_after 2h\)$/,
    );
  });

  it('gives a large repository a longer running allowance: 10 GiB running 3 h is fine, 100 MiB running 3 h is stuck', async () => {
    const h = createHarness(plan());
    h.fake.addItems('projects', 'nfs-1', [1, 2]);
    h.fake.setSize('projects', 1, 10 * GIB, 3 * HOUR);
    h.fake.setSize('projects', 2, 100 * 1024 ** 2, 3 * HOUR);
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 1, quarantined: 1, remaining: 0 });
    expect(h.store.getItem('projects', 1)?.state).toBe('moved');
    expect(h.store.getItem('projects', 2)?.lastError).toMatch(
      /running \(limit 1h2m56s: poll\.stuck_running_after 1h plus 30m per GiB of 0\.1 GiB\)$/,
    );
  });

  it('bulk mode: a storage of large repositories queued for hours behind the throttled worker is moved, not quarantined', async () => {
    const h = createHarness(plan({}, 'bulk'), { startDelayMs: 8 * HOUR, durationMs: 2 * HOUR });
    h.fake.addItems('projects', 'nfs-1', range(1, 40));
    for (const id of range(1, 40)) h.fake.setSize('projects', id, 4 * GIB);
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(h.fake.bulkPosts).toBe(1);
    expect(r).toEqual({ moved: 40, quarantined: 0, remaining: 0 });
  });

  it('keeps the running timer across an interrupted run (the checkpoint holds when the move was first seen running)', async () => {
    const h = createHarness(plan(), { startDelayMs: MIN });
    h.fake.addItems('projects', 'nfs-1', [1]);
    h.fake.script('projects', 1, 'stuck');
    let polls = 0;
    h.fake.onRequest = (name) => {
      if (name === 'listMoves' && ++polls === 40) h.abort.abort(new Error('SIGTERM'));
    };
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).rejects.toMatchObject({
      code: 'SHARDMOVE_ABORTED',
    });
    const runningAt = h.store.getItem('projects', 1)?.runningAt;
    expect(runningAt).toBeGreaterThan(0);
    h.fake.onRequest = null;
    await runDrain(resumed(h).deps, { source: 'nfs-1', kind: 'projects' });
    const row = h.store.getItem('projects', 1);
    expect(row?.state).toBe('quarantined');
    expect(row?.runningAt).toBe(runningAt);
    expect(row?.stuckAt).toBeLessThanOrEqual((runningAt as number) + HOUR + 2 * MIN);
  });

  it('computes the limits: queued flat, running base plus size', () => {
    const poll = plan().poll;
    expect(stuckLimitMs(poll, 'queued', 50 * GIB)).toBe(24 * HOUR);
    expect(stuckLimitMs(poll, 'running', null)).toBe(HOUR);
    expect(stuckLimitMs(poll, 'running', 4 * GIB)).toBe(3 * HOUR);
    expect(stuckLimitMs({ ...poll, stuckRunningPerGbMs: 0 }, 'running', 4 * GIB)).toBe(HOUR);
  });
});
