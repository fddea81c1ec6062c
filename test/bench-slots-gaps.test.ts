// bench/slots-gaps.ts: the workers' idle time over a span, split into refill, queued and tail.
import { describe, expect, it } from 'vitest';
import { endToStart, gapsOf, listScheduleMs } from '../bench/slots-gaps.js';

describe('slots gaps', () => {
  it('splits idle worker time by what the instance had waiting', () => {
    // Two workers. Move 1 runs 0-100. Move 2 is created at 0 and starts at 10 (a worker idle with
    // a move waiting: queued 10), runs to 100. Move 3 is created at 130 (refill 30 on both
    // workers), starts at once, runs to 200 while the other worker idles (tail 70).
    const g = gapsOf(
      [
        { id: 1, created: 0, start: 0, end: 100 },
        { id: 2, created: 0, start: 10, end: 100 },
        { id: 3, created: 130, start: 130, end: 200 },
      ],
      2,
    );
    expect(g).toMatchObject({ spanMs: 200, workMs: 260, queuedMs: 10, refillMs: 60, tailMs: 70, limitMs: 130 });
    expect(g.queuedMs + g.refillMs + g.tailMs).toBe(2 * g.spanMs - g.workMs);
  });

  it('list schedules in the order given: a long move last leaves a tail, largest first does not', () => {
    expect(listScheduleMs([1, 1, 1, 1, 4], 2)).toBe(6);
    expect(listScheduleMs([4, 1, 1, 1, 1], 2)).toBe(4);
  });

  it('pairs each start after the first ones with the earliest end not yet taken: many short waits or a few long ones', () => {
    // One worker: moves end at 100, 200 and 400; the next ones start 0, 150 and 100 ms later.
    const e = endToStart(
      [
        { id: 1, created: 0, start: 0, end: 100 },
        { id: 2, created: 0, start: 100, end: 200 },
        { id: 3, created: 0, start: 350, end: 400 },
        { id: 4, created: 0, start: 500, end: 600 },
      ],
      1,
    );
    expect(e).toMatchObject({ n: 3, long: 2, longMs: 250, p90Ms: 100, p99Ms: 100 });
    expect(e.meanMs).toBeCloseTo(250 / 3, 9);
    // No second move: nothing to pair.
    expect(endToStart([{ id: 1, created: 0, start: 0, end: 100 }], 1)).toMatchObject({ n: 0, meanMs: 0, long: 0 });
  });
});
