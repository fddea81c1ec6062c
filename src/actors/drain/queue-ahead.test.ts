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

const MB = 1_000_000;
/** The instance's true duration of a move: 10 s plus 1 s per MB. */
const truth = (size: number) => 10_000 + size / 1_000;
const LIST_MS = 400;
const POST_MS = 300;

const slowed = (h: Harness) => withDelays(h, { listMoves: LIST_MS, scheduleMove: POST_MS });

function setup(concurrency: number, queueAhead: number, n: number): Harness {
  const h = slowed(
    createHarness(testPlan({ move: { concurrency, queueAhead }, poll: { intervalMs: 60_000, minIntervalMs: 250 } }), {
      startDelayMs: 0,
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
