import { describe, expect, it } from 'vitest';
import type { ItemRecord } from '../api/types.js';
import { openCheckpoint } from './checkpoint.js';
import { STILL_ON_SOURCE } from './items.js';
import { RANK_ORDER_SQL } from './schema.js';

const rec = (id: number): ItemRecord => ({ kind: 'snippets', id, storage: 'nfs-1', name: `s${id}`, sizeBytes: 10 });

function seeded(ids: number[]) {
  const s = openCheckpoint(':memory:');
  s.startRound('snippets', 'nfs-1', 1);
  s.recordPage('snippets', 'nfs-1', 1, ids.map(rec), 0);
  s.finishRound('snippets', 'nfs-1', 1);
  return s;
}

describe('item checkpoint', () => {
  it('keeps when the current move was first seen running: set once per move, cleared by a new move or attempt', () => {
    const s = seeded([1]);
    s.markIntent('snippets', 1, 0);
    s.markInFlight('snippets', 1, 7, 'scheduled', 100);
    expect(s.getItem('snippets', 1)?.runningAt).toBeNull();
    s.markRunning('snippets', 1, 500);
    s.markRunning('snippets', 1, 900);
    s.markInFlight('snippets', 1, 7, 'started', 100);
    expect(s.getItem('snippets', 1)).toMatchObject({ scheduledAt: 100, runningAt: 500 });
    s.markInFlight('snippets', 1, 8, 'scheduled', 1000);
    expect(s.getItem('snippets', 1)).toMatchObject({ moveId: 8, scheduledAt: 1000, runningAt: null });
    s.markRunning('snippets', 1, 1500);
    s.markPending('snippets', 1, 0, 'failed', false);
    s.markIntent('snippets', 1, 2000);
    expect(s.getItem('snippets', 1)?.runningAt).toBeNull();
  });

  it('records pages with the cursor in the same transaction and resumes after the last page', () => {
    const s = openCheckpoint(':memory:');
    s.startRound('snippets', 'nfs-1', 1);
    expect(s.recordPage('snippets', 'nfs-1', 1, [rec(3), rec(7)], 0)).toEqual({ added: 2, back: [] });
    expect(s.getCursor('snippets', 'nfs-1')).toEqual({ round: 1, afterId: 7, done: false });
    // The same page again (a resume that re-read it) adds nothing.
    expect(s.recordPage('snippets', 'nfs-1', 1, [rec(3), rec(7)], 0).added).toBe(0);
    s.finishRound('snippets', 'nfs-1', 1);
    expect(s.getCursor('snippets', 'nfs-1')?.done).toBe(true);
    expect(s.countStates('snippets', 'nfs-1').pending).toBe(2);
  });

  it('sums the known sizes of items in a state without reading them', () => {
    const s = seeded([1, 2, 3]);
    s.recordPage(
      'snippets',
      'nfs-1',
      1,
      [
        { ...rec(4), sizeBytes: null },
        { ...rec(5), sizeBytes: 90 },
      ],
      0,
    );
    s.markIntent('snippets', 1, 0);
    expect(s.sizeStats('snippets', 'nfs-1', 'pending')).toEqual({ bytes: 110, sized: 3, maxBytes: 90 });
    expect(s.sizeStats('snippets', 'nfs-2', 'pending')).toEqual({ bytes: 0, sized: 0, maxBytes: 0 });
  });

  it('claims an item for scheduling only once', () => {
    const s = seeded([1]);
    expect(s.markIntent('snippets', 1, 100)).toBe(true);
    expect(s.markIntent('snippets', 1, 101)).toBe(false);
    expect(s.getItem('snippets', 1)).toMatchObject({ state: 'scheduling', attempts: 1, intentAt: 100 });
    expect(s.countInFlight()).toBe(1);
  });

  it('keeps the stuck timer when the same move is seen again, restarts it for a new move', () => {
    const s = seeded([1]);
    s.markIntent('snippets', 1, 100);
    s.markInFlight('snippets', 1, 9, 'scheduled', 100);
    s.markInFlight('snippets', 1, 9, 'started', 500);
    expect(s.getItem('snippets', 1)).toMatchObject({ moveId: 9, moveState: 'started', scheduledAt: 100 });
  });

  it('sends a moved item listed again back to pending, and leaves unlisted pending items for confirmation', () => {
    const s = seeded([1, 2, 3]);
    s.markIntent('snippets', 1, 100);
    s.markMoved('snippets', 1, 5, 'finished', 200, null);
    s.startRound('snippets', 'nfs-1', 2);
    const { back } = s.recordPage('snippets', 'nfs-1', 2, [rec(1), rec(2)], 300);
    expect(back.map((b) => b.id)).toEqual([1]);
    // Absence proves nothing: item 3 stays pending until a per-item read decides (actors/drain/enumerate.ts).
    expect(s.absentItems('snippets', 'nfs-1', 2, 10).map((r) => r.id)).toEqual([3]);
    s.finishRound('snippets', 'nfs-1', 2);
    expect(s.getItem('snippets', 1)).toMatchObject({
      state: 'pending',
      lastError: STILL_ON_SOURCE,
      attempts: 1,
      movedAt: null,
    });
    expect(s.getItem('snippets', 3)?.state).toBe('pending');
    s.markSeen('snippets', 3, 2, 400);
    expect(s.absentItems('snippets', 'nfs-1', 2, 10)).toEqual([]);
  });

  it('offers only due items (a retry waits out its backoff) and refunds attempts that never reached the instance', () => {
    const s = seeded([1, 2, 3]);
    s.markIntent('snippets', 2, 0);
    s.markPending('snippets', 2, 5000, 'boom', false);
    s.markIntent('snippets', 3, 0);
    s.markPending('snippets', 3, 0, null, true);
    expect(s.dueItems('snippets', 'nfs-1', 1000, 10).map((r) => r.id)).toEqual([1, 3]);
    expect(s.dueItems('snippets', 'nfs-1', 5000, 10).map((r) => r.id)).toEqual([1, 2, 3]);
    expect(s.getItem('snippets', 3)?.attempts).toBe(0);
    expect(s.nextDueAt('snippets', 'nfs-1')).toBe(0);
  });

  it('groups sizes by powers of two: within a class, by id (inserts append; the order is LPT to within 2x)', () => {
    const s = openCheckpoint(':memory:');
    s.startRound('snippets', 'nfs-1', 1);
    const sizes: [number, number | null][] = [
      [1, 1000],
      [2, 1500],
      [3, 2047],
      [4, 2048],
      [5, 1],
      [6, 0],
      [7, null],
    ];
    s.recordPage(
      'snippets',
      'nfs-1',
      1,
      sizes.map(([id, sizeBytes]) => ({ ...rec(id), sizeBytes })),
      0,
    );
    // 2048 is class 11; 1000, 1500 and 2047 are class 9 or 10; 1 is class 0; 0 is below it; unknown last.
    expect(s.dueItems('snippets', 'nfs-1', 0, 10).map((r) => r.id)).toEqual([4, 2, 3, 1, 5, 6, 7]);
  });

  it('offers due items largest first, unknown sizes last, ties and unknowns by id; a retry keeps its backoff then takes its place by size', () => {
    const s = openCheckpoint(':memory:');
    s.startRound('snippets', 'nfs-1', 1);
    const sizes: [number, number | null][] = [
      [1, 10],
      [2, null],
      [3, 500],
      [4, 10],
      [5, null],
      [6, 90],
      [7, 0],
    ];
    s.recordPage(
      'snippets',
      'nfs-1',
      1,
      sizes.map(([id, sizeBytes]) => ({ ...rec(id), sizeBytes })),
      0,
    );
    expect(s.dueItems('snippets', 'nfs-1', 0, 10).map((r) => r.id)).toEqual([3, 6, 1, 4, 7, 2, 5]);
    expect(s.dueItems('snippets', 'nfs-1', 0, 3).map((r) => r.id)).toEqual([3, 6, 1]);
    // The largest failed once: not offered before its backoff ends, then first again.
    s.markIntent('snippets', 3, 0);
    s.markPending('snippets', 3, 30_000, 'boom', false);
    expect(s.dueItems('snippets', 'nfs-1', 29_999, 10).map((r) => r.id)).toEqual([6, 1, 4, 7, 2, 5]);
    expect(s.dueItems('snippets', 'nfs-1', 30_000, 10).map((r) => r.id)).toEqual([3, 6, 1, 4, 7, 2, 5]);
    // The order is read off the index (schema 10, by rank from 15): no sort over every pending item per call.
    const plan = (s as unknown as { db: { prepare(sql: string): { all(...a: unknown[]): { detail: string }[] } } }).db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT * FROM items INDEXED BY items_due_order WHERE kind = ? AND source = ? AND state = 'pending' AND next_attempt_at <= ? ORDER BY ${RANK_ORDER_SQL} LIMIT ?`,
      )
      .all('snippets', 'nfs-1', 0, 10);
    expect(plan.map((r) => r.detail).join(' ')).not.toMatch(/TEMP B-TREE/);
  });

  it('writes an intent and its destination in one statement, keeping a destination pinned before it', () => {
    const s = seeded([1, 2, 3, 4]);
    const db = (s as unknown as { db: { prepare(sql: string): { get(): { n: number } } } }).db;
    // Rows changed, the item_counts triggers' included: an intent without a destination is the measure.
    const changes = (f: () => void) => {
      const before = db.prepare('SELECT total_changes() AS n').get().n;
      f();
      return db.prepare('SELECT total_changes() AS n').get().n - before;
    };
    const alone = changes(() => s.markIntent('snippets', 4, 100));
    s.pinDestination('snippets', 2, 'gitaly-2');
    // No second UPDATE for the destination: a row write less per move.
    expect(changes(() => s.markIntent('snippets', 1, 100, 'gitaly-1'))).toBe(alone);
    expect(s.getItem('snippets', 1)).toMatchObject({ state: 'scheduling', attempts: 1, destination: 'gitaly-1' });
    expect(changes(() => s.markIntent('snippets', 2, 100, 'gitaly-1'))).toBe(alone);
    expect(s.getItem('snippets', 2)).toMatchObject({ state: 'scheduling', destination: 'gitaly-2' });
    // A row no longer pending gets neither an intent nor a destination.
    expect(changes(() => expect(s.markIntent('snippets', 1, 200, 'gitaly-3')).toBe(false))).toBe(0);
    expect(s.getItem('snippets', 1)).toMatchObject({ attempts: 1, destination: 'gitaly-1' });
  });

  it('offers nothing while every pending item waits out a backoff, and each once its backoff ends', () => {
    const s = seeded([1, 2]);
    for (const id of [1, 2]) {
      s.markIntent('snippets', id, 0);
      s.markPending('snippets', id, 1_000 * id, 'boom', false);
    }
    expect(s.dueItems('snippets', 'nfs-1', 999, 10)).toEqual([]);
    expect(s.dueItems('snippets', 'nfs-1', 1_000, 10).map((r) => r.id)).toEqual([1]);
    expect(s.dueItems('snippets', 'nfs-1', 2_000, 10).map((r) => r.id)).toEqual([1, 2]);
    s.markIntent('snippets', 1, 2_000);
    s.markIntent('snippets', 2, 2_000);
    expect(s.dueItems('snippets', 'nfs-1', 5_000, 10)).toEqual([]);
  });

  it('walks the due order without a bound LIMIT, which SQLite would re-prepare at every call', () => {
    const s = seeded([1, 2, 3, 4, 5]);
    // The statement the drain loop runs at every turn: its text must not bind the LIMIT.
    const due = (s as unknown as { s: { due: { source: string } } }).s.due.source;
    expect(due).toMatch(/ORDER BY/);
    expect(due).not.toMatch(/LIMIT\s+\?/i);
    // The limit still holds, in the order, and an item past it is offered by the next call.
    expect(s.dueItems('snippets', 'nfs-1', 0, 2).map((r) => r.id)).toEqual([1, 2]);
    expect(s.dueItems('snippets', 'nfs-1', 0, 0)).toEqual([]);
    s.markIntent('snippets', 1, 0);
    expect(s.dueItems('snippets', 'nfs-1', 0, 2).map((r) => r.id)).toEqual([2, 3]);
    expect(s.dueItems('snippets', 'nfs-1', 0, 100).map((r) => r.id)).toEqual([2, 3, 4, 5]);
  });
});
