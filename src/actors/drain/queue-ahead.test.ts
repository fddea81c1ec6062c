/**
 * Queue ahead of predicted ends on the fake clock: a successor is POSTed beyond the
 * cap only for a move the model expects to end within the measured refill round trip, never more
 * than `move.queue_ahead` beyond it, and one posted early is an ordinary move to resume and reconcile.
 * The fake instance answers at once, so the round trip is made measurable by construction: each move
 * list page and each POST takes a fixed time on the fake clock.
 */
import { describe, expect, it } from 'vitest';
import type { Harness } from '../../../test/support/drain-harness.js';
import { createHarness, range, resumed, testPlan, withDelays } from '../../../test/support/drain-harness.js';
import { runDrain } from './run.js';
import { MoveModel } from './move-model.js';
import { AUTO_START, nextAutoDepth } from './queue-ahead.js';
import type { AutoDepthState, PollSample } from './queue-ahead.js';

const MB = 1_000_000;
/** The instance's true duration of a move: 10 s plus 1 s per MB. */
const truth = (size: number) => 10_000 + size / 1_000;
const LIST_MS = 400;
const POST_MS = 300;

const slowed = (h: Harness) => withDelays(h, { listMoves: LIST_MS, scheduleMove: POST_MS });

function setup(concurrency: number, queueAhead: number | 'auto', n: number, startDelayMs = 0): Harness {
  const h = slowed(
    createHarness(testPlan({ move: { concurrency, queueAhead }, poll: { intervalMs: 60_000, minIntervalMs: 250 } }), {
      startDelayMs,
    }),
  );
  const m = new MoveModel(h.store);
  for (let i = 1; i <= 16; i++) m.observe('projects', i * MB, truth(i * MB));
  m.save(h.clock.now());
  h.fake.addItems('projects', 'nfs-1', range(1, n));
  // Sizes spread so moves end one by one, not in waves.
  for (const id of range(1, n)) h.fake.setSize('projects', id, ((id * 7) % 23) * MB, truth(((id * 7) % 23) * MB));
  return h;
}

/** At each POST: moves over the cap, and how many in flight the model expects to end within `withinMs`. */
function watchPosts(h: Harness, cap: number) {
  const seen: { at: number; beyond: number; endingWithin: (ms: number) => number }[] = [];
  h.fake.onRequest = (name) => {
    if (name !== 'scheduleMove') return;
    const now = h.clock.now();
    const rows = h.store.itemsInState('projects', 'nfs-1', 'in_flight', 1000);
    const ends = rows.map((r) => (r.scheduledAt ?? now) + truth(r.sizeBytes ?? 0));
    seen.push({
      at: now,
      beyond: h.store.countInFlight() - cap,
      endingWithin: (ms) => ends.filter((e) => e <= now + ms).length,
    });
  };
  return seen;
}

const queuedAhead = (h: Harness) => h.store.readEvents(0, 100_000).filter((e) => e.type === 'drain.queued_ahead');

describe('queue ahead of predicted ends', () => {
  it('posts successors early only for moves expected to end within the measured round trip, never more than queue_ahead beyond the cap', async () => {
    const cap = 3;
    const h = setup(cap, 2, 40);
    const posts = watchPosts(h, cap);
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 40, quarantined: 0, remaining: 0 });
    const early = queuedAhead(h);
    expect(early.length).toBeGreaterThan(0);
    // The round trip is measured, not assumed: a poll page plus a POST, at least.
    for (const e of early)
      expect(e.type === 'drain.queued_ahead' && e.data.roundTripMs).toBeGreaterThanOrEqual(LIST_MS + POST_MS);
    const rtt = Math.max(...early.map((e) => (e.type === 'drain.queued_ahead' ? e.data.roundTripMs : 0)));
    // The row being POSTed counts (scheduling): over the cap means posted early.
    const over = posts.filter((p) => p.beyond > 0);
    expect(over.length).toBeGreaterThan(0);
    expect(Math.max(...posts.map((p) => p.beyond))).toBeLessThanOrEqual(2);
    for (const p of over) expect(p.endingWithin(rtt)).toBeGreaterThanOrEqual(p.beyond);
    expect(h.fake.violations).toEqual([]);
  });

  it("a move past its prediction has its successor posted at once, while the poll's next look at it backs off", async () => {
    const cap = 3;
    const h = setup(cap, 2, 40);
    // A model 5% too fast (it learns from lower bounds): each move is seen in flight just past its prediction.
    const m = new MoveModel(h.store);
    for (let i = 1; i <= 64; i++) m.observe('projects', ((i % 16) + 1) * MB, 0.95 * truth(((i % 16) + 1) * MB));
    m.save(h.clock.now());
    const polls: number[] = [];
    h.fake.onRequest = (name) => {
      if (name === 'listMoves' && polls.at(-1) !== h.clock.now()) polls.push(h.clock.now());
    };
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 40, quarantined: 0, remaining: 0 });
    // The slots' idle time: each move's true end to the start of the move that took its slot (the
    // fake starts a move when it is posted), over the moves after the first `cap`.
    const moves = [...h.fake.moves].sort((a, b) => a.createdMs - b.createdMs);
    const ends = moves.map((mv) => mv.createdMs + truth(h.fake.item('projects', mv.itemId)?.sizeBytes ?? 0));
    ends.sort((a, b) => a - b);
    let idle = 0;
    moves.slice(cap).forEach((mv, i) => (idle += Math.max(0, mv.createdMs - (ends[i] as number))));
    // Before, a move seen past its prediction counted as ending only at its next look (a quarter of
    // its age later), so its successor waited for that look: 450 ms of idle slot a move on this
    // construction (the fake clock makes it exact). Now it goes from the poll that found the move
    // past its prediction: 270 ms.
    expect(idle / (moves.length - cap)).toBeLessThan(350);
    // And the polls still back off: far fewer than one per min_interval over the run.
    expect(polls.length).toBeLessThan((h.clock.now() - (moves[0]?.createdMs ?? 0)) / 250 / 4);
    expect(h.fake.violations).toEqual([]);
  });

  it('with queue_ahead 0, never beyond the cap', async () => {
    const cap = 3;
    const h = setup(cap, 0, 20);
    const posts = watchPosts(h, cap);
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(Math.max(...posts.map((p) => p.beyond))).toBeLessThanOrEqual(0);
    expect(queuedAhead(h)).toEqual([]);
  });

  it('nothing early before the round trip was measured, nor without a prediction', async () => {
    const cap = 2;
    const h = slowed(
      createHarness(
        testPlan({ move: { concurrency: cap, queueAhead: 2 }, poll: { intervalMs: 60_000, minIntervalMs: 250 } }),
        { startDelayMs: 0 },
      ),
    );
    // No model: no move is expected to end at any time.
    h.fake.addItems('projects', 'nfs-1', range(1, 6));
    const posts = watchPosts(h, cap);
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    // The run learns the model from its own moves (three observations) and may queue ahead after.
    const firstEarly = queuedAhead(h)[0]?.at ?? Infinity;
    expect(posts.filter((p) => p.beyond > 0 && p.at < firstEarly)).toEqual([]);
    expect(posts.slice(0, cap + 1).every((p) => p.beyond <= 0)).toBe(true);
  });

  it('a run killed right after posting a successor early resumes it as an ordinary move: reconciled, counted once', async () => {
    const cap = 3;
    const h = setup(cap, 2, 30);
    let killed = false;
    h.fake.onRequest = (name) => {
      if (name === 'scheduleMove' && !killed && h.store.countInFlight() > cap) {
        killed = true;
        h.abort.abort(new Error('SIGKILL'));
      }
    };
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'projects' })).rejects.toMatchObject({
      code: 'SHARDMOVE_ABORTED',
    });
    expect(killed).toBe(true);
    h.fake.onRequest = null;
    const again = resumed(h);
    const r = await runDrain(again.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 30, quarantined: 0, remaining: 0 });
    // One successful move per item: the early successor was adopted or followed, never posted twice.
    const finished = h.fake.moves.filter((m) => m.state === 'finished');
    expect(new Set(finished.map((m) => m.itemId)).size).toBe(30);
    expect(finished.length).toBe(30);
    expect(h.fake.violations).toEqual([]);
  });
});

describe('queue_ahead: auto, the depth after each poll', () => {
  const o: { roundTripMs: number | null; cap: number; exposureBudget: number } = {
    roundTripMs: 100,
    cap: 20,
    exposureBudget: 1.1,
  };
  /** A poll 100 ms after the last: `ended` moves ended, `queued` of the moves in flight wait, `running` run. */
  const sample = (ended: number, queued = 0, running = 20): PollSample => ({ elapsedMs: 100, ended, queued, running });
  const at = (depth: number, over: Partial<AutoDepthState> = {}): AutoDepthState => ({
    endRate: 0.1,
    queued: 0,
    running: 20,
    gapMs: 100,
    depth,
    ...over,
  });
  const rows: [
    string,
    AutoDepthState,
    PollSample,
    Partial<{ roundTripMs: number | null; cap: number; exposureBudget: number }>,
    number,
  ][] = [
    ['nothing posted early before the round trip is measured', at(3), sample(10), { roundTripMs: null }, 0],
    ['from nothing, one more per poll', AUTO_START, sample(10), {}, 1],
    ['grows by one per poll towards what a round trip leaves idle', at(4), sample(10), {}, 5],
    // 10 ends per 100 ms, polls 100 ms apart, a 50 ms round trip: 15 ends unseen or unrefilled.
    ['never beyond the moves ending within a poll gap and a round trip', at(15), sample(10), { roundTripMs: 50 }, 15],
    ['a longer round trip wants more', at(15), sample(10), { roundTripMs: 60 }, 16],
    // A move ending between polls is seen at the next: its successor counts until then.
    ['the time between polls counts, not the round trip alone', at(10), sample(10), {}, 11],
    ['never beyond the cap: one successor per slot', at(20), sample(10), { roundTripMs: 1_000 }, 20],
    ['fewer ends: the depth follows down at once', at(10), sample(1, 0, 20), { roundTripMs: 0 }, 8],
    // About 2 of 20 moves waiting, then 3: 11% more read-only time than moving time, over a budget of 1.1.
    ['read-only time over the budget: the depth halves', at(10, { queued: 2 }), sample(10, 3, 20), {}, 5],
    ['within a larger budget it keeps growing', at(10, { queued: 2 }), sample(12, 3, 20), { exposureBudget: 1.5 }, 11],
    ['one poll that saw a queue moves the average only a quarter of the way', at(10), sample(10, 3, 20), {}, 11],
    ['the instance queues by itself: halves down to nothing', at(1, { queued: 10 }), sample(10, 10, 20), {}, 0],
    ['a budget of 1 allows no read-only time: nothing early', at(5), sample(10), { exposureBudget: 1 }, 0],
    ['paused (cap 0): nothing early', at(5), sample(10), { cap: 0 }, 0],
  ];
  it.each(rows)('%s', (_, prev, s, over, depth) => {
    expect(nextAutoDepth(prev, s, { ...o, ...over }).depth).toBe(depth);
  });
});

describe('queue_ahead: auto on the fake clock', () => {
  it('posts successors early, within the cap beyond the cap, once the round trip and the end rate are measured', async () => {
    const cap = 3;
    const h = setup(cap, 'auto', 60);
    const posts = watchPosts(h, cap);
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 60, quarantined: 0, remaining: 0 });
    expect(queuedAhead(h).length).toBeGreaterThan(0);
    expect(Math.max(...posts.map((p) => p.beyond))).toBeLessThanOrEqual(cap);
    expect(h.fake.violations).toEqual([]);
  });

  it('posts nothing early while the instance keeps moves waiting in its queue (read-only over the budget)', async () => {
    const cap = 3;
    // Every move waits 20 s in `scheduled` before it runs: read-only time well over the moves' own.
    const h = setup(cap, 'auto', 30, 20_000);
    const posts = watchPosts(h, cap);
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(Math.max(...posts.map((p) => p.beyond))).toBeLessThanOrEqual(0);
    expect(queuedAhead(h)).toEqual([]);
  });
});

describe('queue ahead into the next drain', () => {
  it("stamps drain.queued_ahead with the pair whose moves went early: the next drain's, once its items fill the tail", async () => {
    const cap = 3;
    const h = setup(cap, 2, 4);
    const m = new MoveModel(h.store);
    for (let i = 1; i <= 16; i++) m.observe('snippets', i * MB, truth(i * MB));
    m.save(h.clock.now());
    h.fake.addItems('snippets', 'nfs-1', range(1, 30));
    for (const id of range(1, 30)) h.fake.setSize('snippets', id, ((id * 5) % 17) * MB, truth(((id * 5) % 17) * MB));
    const next = { source: 'nfs-1', kind: 'snippets' as const, access: 'listing' as const };
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects', access: 'listing', ahead: next });
    const kinds = queuedAhead(h).map((e) => (e.type === 'drain.queued_ahead' ? e.data.kind : null));
    // The projects drain posted its 4 projects first; whatever went beyond the cap after them was snippets'.
    expect(kinds).toContain('snippets');
    expect(h.fake.violations).toEqual([]);
  });
});
