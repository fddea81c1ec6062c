/**
 * Completion prediction on the fake clock: where polls land with a model that is right,
 * too slow or too fast, and that the model is checkpoint state a restart continues from.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../../store/checkpoint.js';
import type { Harness } from '../../../test/support/drain-harness.js';
import { abortAt, createHarness, range, testPlan } from '../../../test/support/drain-harness.js';
import { runDrain } from './run.js';
import { MoveModel } from './move-model.js';
import { coldLook } from './poll.js';

const MB = 1_000_000;
/** The instance's true duration of a move: 10 s plus 10 s per MB. */
const truth = (size: number) => 10_000 + size / 100;

/** A model trained on exact observations of `ms(size)` (what a long, well-watched run converges to). */
function seedModel(h: Harness, ms: (size: number) => number): void {
  const m = new MoveModel(h.store);
  for (let i = 1; i <= 64; i++) m.observe('projects', ((i % 8) + 1) * MB, ms(((i % 8) + 1) * MB));
  m.save(h.clock.now());
}

/** Items 1..n with sizes i MB whose moves take `truth`; records when each poll and each POST happened. */
function inventory(h: Harness, n: number) {
  h.fake.addItems('projects', 'nfs-1', range(1, n));
  for (const id of range(1, n)) h.fake.setSize('projects', id, id * MB, truth(id * MB));
  const polls: number[] = [];
  h.fake.onRequest = (name) => {
    if (name === 'listMoves' && polls.at(-1) !== h.clock.now()) polls.push(h.clock.now());
  };
  return polls;
}

const gaps = (ts: number[]) => ts.slice(1).map((t, i) => t - (ts[i] as number));

describe('completion prediction', () => {
  it('polls when the earliest move in flight is expected to end, not at the poll interval', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 3 }, poll: { intervalMs: 300_000, minIntervalMs: 250 } }), {
      startDelayMs: 0,
    });
    seedModel(h, truth);
    const polls = inventory(h, 6);
    const t0 = h.clock.now();
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 6, quarantined: 0, remaining: 0 });
    // Largest first by size class (powers of two: 5 and 6 MB, then 3 and 4 MB share a class): items
    // 5, 6 and 3 start together; 3 (40 s) is expected to end first, and the first poll lands exactly
    // then, not at the 5-minute interval.
    expect(h.fake.moves.slice(0, 3).map((m) => m.itemId)).toEqual([5, 6, 3]);
    expect(polls[0]).toBe(t0 + truth(3 * MB));
    // Every move's end is seen by a poll within a quarter of its duration (the fixed cadence would
    // take up to the whole 5-minute interval).
    for (const m of h.fake.moves) {
      const d = truth(h.fake.item('projects', m.itemId)?.sizeBytes ?? 0);
      const seen = polls.find((t) => t >= m.createdMs + d);
      expect(seen).toBeDefined();
      expect((seen ?? Infinity) - (m.createdMs + d)).toBeLessThanOrEqual(d / 4);
    }
    expect(Math.max(...gaps(polls))).toBeLessThan(300_000);
    expect(h.fake.violations).toEqual([]);
  });

  it('never waits longer than poll.interval with moves in flight when the model expects moves to take far longer', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 3 }, poll: { intervalMs: 5_000, minIntervalMs: 250 } }), {
      startDelayMs: 0,
    });
    seedModel(h, () => 3_600_000);
    const polls = inventory(h, 6);
    const t0 = h.clock.now();
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(polls[0]).toBe(t0 + 5_000);
    expect(Math.max(...gaps(polls))).toBeLessThanOrEqual(5_000);
    expect(h.store.countStates('projects', 'nfs-1')).toMatchObject({ moved: 6, pending: 0, in_flight: 0 });
  });

  it('never polls sooner than poll.min_interval, and backs off, when the model expects moves to end at once', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 3 }, poll: { intervalMs: 5_000, minIntervalMs: 250 } }), {
      startDelayMs: 0,
    });
    seedModel(h, () => 1);
    const polls = inventory(h, 6);
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(Math.min(...gaps(polls))).toBeGreaterThanOrEqual(250);
    expect(Math.max(...gaps(polls))).toBeLessThanOrEqual(5_000);
    // Overdue moves are looked at again after a quarter of their age: a fraction of the 440 polls
    // that one per min_interval over the 110 s the six moves take would cost.
    expect(polls.length).toBeLessThan(110_000 / 250 / 4);
    expect(h.store.countStates('projects', 'nfs-1')).toMatchObject({ moved: 6, pending: 0, in_flight: 0 });
  });

  it('learns the fixed and per-byte parts from watched moves, despite outliers', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 4 }, poll: { intervalMs: 1_000, minIntervalMs: 250 } }), {
      startDelayMs: 0,
    });
    inventory(h, 24);
    // Two moves that hit a slow Gitaly: ten times their usual duration.
    h.fake.durations.set('projects:7', truth(7 * MB) * 10);
    h.fake.durations.set('projects:13', truth(13 * MB) * 10);
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    const fit = new MoveModel(h.store).describe('projects');
    // Observations are accurate to about half a poll interval.
    expect(fit?.fixedMs).toBeGreaterThan(8_000);
    expect(fit?.fixedMs).toBeLessThan(12_000);
    expect((fit?.perByteMs ?? 0) * MB).toBeGreaterThan(9_000);
    expect((fit?.perByteMs ?? 0) * MB).toBeLessThan(11_000);
  });

  it('continues from the checkpointed model after a restart: the first poll of the new process is a predicted one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardmove-predict-'));
    try {
      const file = join(dir, 'cp.sqlite');
      const plan = testPlan({ move: { concurrency: 4 }, poll: { intervalMs: 300_000, minIntervalMs: 250 } });
      const h = createHarness(plan, { startDelayMs: 0 }, file);
      seedModel(h, truth);
      inventory(h, 4);
      await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
      const before = new MoveModel(h.store).describe('projects');
      h.store.close();
      // A new process: the model comes back from the file, and drives the new items' first poll.
      const store = openCheckpoint(file);
      expect(new MoveModel(store).describe('projects')).toEqual(before);
      h.fake.addItems('projects', 'nfs-1', [9]);
      h.fake.setSize('projects', 9, 2 * MB, truth(2 * MB));
      const polls: number[] = [];
      h.fake.onRequest = (name) => {
        if (name === 'listMoves' && polls.at(-1) !== h.clock.now()) polls.push(h.clock.now());
      };
      let posted = 0;
      const onReq = h.fake.onRequest;
      h.fake.onRequest = (name, m) => {
        if (name === 'scheduleMove') posted = h.clock.now();
        onReq(name, m);
      };
      const r = await runDrain({ ...h.deps, store }, { source: 'nfs-1', kind: 'projects' });
      expect(r.moved).toBe(5);
      const predicted = new MoveModel(store).predict('projects', 2 * MB) ?? 0;
      expect(polls.filter((t) => t > posted)[0]).toBeLessThan(posted + 300_000);
      expect(Math.abs((polls.filter((t) => t > posted)[0] ?? 0) - (posted + truth(2 * MB)))).toBeLessThanOrEqual(
        Math.max(250, predicted / 4),
      );
      store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the first moves of a kind, before the model can predict', () => {
  it('are looked at from poll.min_interval after their POST, then a quarter of their age later, never past the next whole poll.interval', () => {
    const row = { scheduledAt: 100_000, intentAt: 99_990 };
    // [now, expected next look] with min_interval 250 ms and poll.interval 10 s.
    const table: Array<[number, number]> = [
      [100_000, 100_250], // just posted: min_interval
      [100_500, 100_750], // a quarter of 500 ms is less than min_interval
      [102_000, 102_500], // 2 s old: a quarter of its age
      [108_000, 110_000], // 8 s old: 2 s later would pass the interval since the POST (110 s)
      [109_900, 110_150], // just before it: never sooner than min_interval
      [140_000, 150_000], // 40 s old: the next whole interval, not 10 s later
    ];
    for (const [now, at] of table) expect([now, coldLook(row, now, 250, 10_000)]).toEqual([now, at]);
    // Without a POST answer yet the intent counts; without either, now.
    expect(coldLook({ scheduledAt: null, intentAt: 99_000 }, 101_000, 250, 10_000)).toBe(101_500);
    expect(coldLook({ scheduledAt: null, intentAt: null }, 5_000, 250, 10_000)).toBe(5_250);
  });

  it("see a kind's first moves end long before poll.interval, and learn from them", async () => {
    const h = createHarness(testPlan({ move: { concurrency: 2 }, poll: { intervalMs: 60_000, minIntervalMs: 250 } }), {
      startDelayMs: 0,
      durationMs: 2_000,
    });
    h.fake.addItems('projects', 'nfs-1', range(1, 8));
    const posts: number[] = [];
    const polls: number[] = [];
    h.fake.onRequest = (name) => {
      if (name === 'scheduleMove') posts.push(h.clock.now());
      if (name === 'listMoves' && polls.at(-1) !== h.clock.now()) polls.push(h.clock.now());
    };
    const t0 = h.clock.now();
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 8, quarantined: 0, remaining: 0 });
    // The first two moves end at 2 s: their slots take the next two within a quarter of that, not
    // at the one-minute interval (which the whole drain would take four of).
    expect((posts[2] ?? Infinity) - t0).toBeGreaterThanOrEqual(2_000);
    expect((posts[2] ?? Infinity) - t0).toBeLessThanOrEqual(2_500);
    expect(h.clock.now() - t0).toBeLessThan(20_000);
    // Once three moves taught the model, the looks follow its predictions: the last two moves
    // (posted together once four had ended) are seen with a poll or two, not a look every backoff.
    // Before it, two generations took 15 looks (from 250 ms, a quarter of the age later each).
    const taught = posts[4] ?? Infinity;
    expect(polls.filter((t) => t < taught)).toHaveLength(15);
    expect(polls.filter((t) => t > taught).length).toBeLessThanOrEqual(4);
    expect(h.fake.violations).toEqual([]);
  });
});

describe('largest first', () => {
  const SIZES: [number, number | null][] = [
    [1, 5],
    [2, null],
    [3, 50],
    [4, 20],
    [5, null],
    [6, 20],
    [7, 1],
    [8, 80],
  ];
  const ORDER = [8, 3, 4, 6, 1, 7, 2, 5];

  function sized(h: Harness) {
    h.fake.addItems('projects', 'nfs-1', range(1, 8));
    for (const [id, mb] of SIZES) if (mb !== null) h.fake.setSize('projects', id, mb * MB, truth(mb * MB));
    h.fake.script('projects', 3, 'fail', 'ok');
  }
  const firstAttempts = (h: Harness) => [...new Set(h.fake.moves.map((m) => m.itemId))];

  it('starts the largest repositories first, unknown sizes last by id; a failed move retries after its backoff', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 2 } }), { startDelayMs: 0 });
    sized(h);
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 8, quarantined: 0, remaining: 0 });
    expect(firstAttempts(h)).toEqual(ORDER);
    const [failed, retry] = h.fake.movesOf('projects', 3);
    expect(failed?.state).toBe('failed');
    expect(retry?.createdMs).toBeGreaterThanOrEqual((failed?.createdMs ?? 0) + truth(50 * MB) + 30_000);
    expect(h.fake.violations).toEqual([]);
  });

  it('a run interrupted after three POSTs resumes in the same order', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 2 } }), { startDelayMs: 0 });
    sized(h);
    abortAt(h, 'scheduleMove', 3, 'SIGTERM');
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).rejects.toMatchObject({
      code: 'SHARDMOVE_ABORTED',
    });
    h.fake.onRequest = null;
    const abort = new AbortController();
    const r = await runDrain({ ...h.deps, signal: abort.signal }, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 8, quarantined: 0, remaining: 0 });
    expect(firstAttempts(h)).toEqual(ORDER);
    expect(h.fake.violations).toEqual([]);
  });
});

describe('completion prediction across kinds', () => {
  it("expects the next drain's items by their own kind's model, not the drain's", async () => {
    const h = createHarness(
      testPlan({ move: { concurrency: 2, kinds: ['projects', 'snippets'] }, poll: { intervalMs: 60_000 } }),
      { startDelayMs: 0, durationMs: 1_000 },
    );
    // Projects take an hour here, snippets a second.
    const m = new MoveModel(h.store);
    for (let i = 1; i <= 8; i++) m.observe('projects', i * MB, 3_600_000);
    for (let i = 1; i <= 8; i++) m.observe('snippets', null, 1_000);
    m.save(h.clock.now());
    h.fake.addItems('projects', 'nfs-1', [1]);
    h.fake.setSize('projects', 1, MB, 3_600_000);
    h.fake.addItems('snippets', 'nfs-1', [1, 2, 3]);
    const calls: [string, number][] = [];
    h.fake.onRequest = (name) => calls.push([name, h.clock.now()]);
    const next = { source: 'nfs-1', kind: 'snippets' as const, access: 'listing' as const };
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects', access: 'listing', ahead: next });
    const firstSnippetPost = h.fake.moves.find((mv) => mv.kind === 'snippets')!.createdMs;
    const firstPollAfter = calls.find(([name, at]) => name === 'listMoves' && at > firstSnippetPost)?.[1];
    // The snippet's move is expected after a second, and looked at then: not after the poll interval.
    expect(firstPollAfter).toBe(firstSnippetPost + 1_000);
  });
});
