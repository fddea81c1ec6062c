import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../events/vocabulary.js';
import { idleSlots } from './idle-slots.js';

let seq = 0;
const ev = (at: number, type: string, data: Record<string, unknown>): AuditEvent =>
  ({ seq: ++seq, at, type, data }) as unknown as AuditEvent;
const d = { kind: 'projects', source: 'nfs-1' };
const cap = (at: number, n: number) =>
  ev(at, 'cap.changed', { cap: n, ceiling: n, paused: false, limit: 'plan', reason: 'plan', previous: null });
const listed = (at: number) => ev(at, 'enumerate.finished', { ...d, round: 1, added: 3, back: 0, left: 0 });
const intent = (at: number, id: number, attempt = 1) =>
  ev(at, 'move.intent', { ...d, id, attempt, destination: 'cluster' });
const started = (at: number, id: number) =>
  ev(at, 'move.scheduled', { ...d, id, moveId: id + 100, moveState: 'scheduled' });
const finished = (at: number, id: number) => ev(at, 'move.finished', { ...d, id, moveId: id + 100 });
const failed = (at: number, id: number) => ev(at, 'move.failed', { ...d, id, moveId: id + 100, error: 'x' });
const retry = (at: number, id: number, next: number) =>
  ev(at, 'item.retry', { ...d, id, attempts: 1, nextAttemptAt: next, reason: 'x' });

describe('idleSlots: fewer slots held than the cap while an item was due, from the log alone', () => {
  it("a slot freed while the next item is due idles until that item's intent", () => {
    const r = idleSlots([
      cap(0, 1),
      listed(0),
      intent(0, 1),
      started(5, 1),
      finished(100, 1),
      intent(130, 2),
      started(135, 2),
      finished(200, 2),
    ]);
    expect(r.runMs).toBe(200);
    expect(r.idleMs).toBe(30);
    expect(r.share).toBeCloseTo(0.15);
  });

  it('nothing due: a free slot is not idle (the last retry waits out its backoff)', () => {
    const r = idleSlots([
      cap(0, 2),
      listed(0),
      intent(0, 1),
      started(1, 1),
      failed(50, 1),
      retry(50, 1, 1000),
      intent(1000, 1, 2),
      started(1001, 1),
      finished(1100, 1),
    ]);
    // One slot is always free (cap 2, one item), but only due from listing to its first intent (0 ms)
    // and from 1000 to its second intent (0 ms).
    expect(r.idleMs).toBe(0);
  });

  it('a retry that is due while a slot stays free counts, and long stretches are named', () => {
    const r = idleSlots(
      [
        cap(0, 1),
        listed(0),
        intent(0, 1),
        started(1, 1),
        failed(50, 1),
        retry(50, 1, 100),
        intent(700, 1, 2),
        started(701, 1),
        finished(800, 1),
      ],
      250,
    );
    expect(r.idleMs).toBe(600);
    expect(r.long).toEqual([[100, 700]]);
  });
});
