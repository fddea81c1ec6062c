import { describe, expect, it } from 'vitest';
import { etaOf, PaceMeter } from './pace.js';

const counts = (moved: number, inFlight: number, pending: number) => ({
  counts: [
    { kind: 'projects' as const, source: 'nfs-1', state: 'moved', n: moved },
    { kind: 'projects' as const, source: 'nfs-1', state: 'in_flight', n: inFlight },
    { kind: 'projects' as const, source: 'nfs-1', state: 'pending', n: pending },
  ],
});

describe('the pace of a run process', () => {
  it("gives no rate and no ETA for a resume until 5 of its own moves ended, then this process's", () => {
    // A resume: 90 moved by the last process in its last seconds, 3 of its moves still in flight.
    const pace = new PaceMeter(counts(90, 3, 27), 0);
    expect(pace.read(1_000, counts(93, 0, 27), false)).toEqual({ perMinute: null, etaMs: null, remaining: 27 });
    expect(pace.read(30_000, counts(97, 3, 20), false).perMinute).toBeNull();
    const later = pace.read(60_000, counts(103, 3, 14), false);
    expect(later.perMinute).toBeCloseTo(10);
    expect(later.etaMs).toBeCloseTo((17 / 10) * 60_000);
  });

  it('has no ETA while held, and one of 0 once nothing remains', () => {
    expect(etaOf(10, 5, true)).toBeNull();
    expect(etaOf(10, null, false)).toBeNull();
    expect(etaOf(0, null, true)).toBe(0);
    expect(etaOf(10, 5, false)).toBe(120_000);
  });
});
