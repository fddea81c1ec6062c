import { describe, expect, it } from 'vitest';
import { etaOf, MIN_MOVES_FOR_RATE, PaceMeter, paceOf, releasedAtOf } from './pace.js';
import type { OwnMovesSince } from './pace.js';

const counts = (moved: number, inFlight: number, pending: number) => ({
  counts: [
    { kind: 'projects' as const, source: 'nfs-1', state: 'moved', n: moved },
    { kind: 'projects' as const, source: 'nfs-1', state: 'in_flight', n: inFlight },
    { kind: 'projects' as const, source: 'nfs-1', state: 'pending', n: pending },
  ],
});

/** The checkpoint's own moves of a process, as the times they ended. */
const ended =
  (times: number[]): OwnMovesSince =>
  (from) =>
    times.filter((t) => t >= from).length;

describe('the pace of a run process', () => {
  it("gives no rate and no ETA for a resume until 5 of its own moves ended, then this process's", () => {
    // A resume: the moves it inherited in flight were scheduled before it started, so they are not its own.
    const own: number[] = [];
    const pace = new PaceMeter(0, ended(own));
    expect(pace.read(1_000, counts(93, 0, 27), false)).toEqual({ perMinute: null, etaMs: null, remaining: 27 });
    own.push(...[5, 10, 15, 20].map((s) => s * 1000));
    expect(pace.read(30_000, counts(97, 3, 20), false).perMinute).toBeNull();
    own.push(...[32, 36, 40, 44, 48, 52].map((s) => s * 1000));
    const later = pace.read(60_000, counts(103, 3, 14), false);
    expect(later.perMinute).toBeCloseTo(10);
    expect(later.etaMs).toBeCloseTo((17 / 10) * 60_000);
  });

  it('starts over while nothing is scheduled', () => {
    const own = Array.from({ length: 30 }, (_, i) => i * 2_000);
    const pace = new PaceMeter(0, ended(own));
    expect(pace.read(60_000, counts(30, 0, 70), false).perMinute).toBeCloseTo(30);
    expect(pace.read(120_000, counts(30, 0, 70), true)).toMatchObject({ perMinute: null, etaMs: null });
    own.push(150_000, 170_000);
    expect(pace.read(180_000, counts(32, 0, 68), false).perMinute).toBeNull();
  });

  it('measures over the last 10 minutes', () => {
    const own: number[] = [];
    for (let minute = 1; minute <= 20; minute++)
      for (let i = 0; i < (minute <= 10 ? 100 : 10); i++) own.push((minute - 1) * 60_000 + i * 10);
    expect(new PaceMeter(0, ended(own)).read(20 * 60_000, counts(0, 0, 100), false).perMinute).toBeCloseTo(10, 0);
  });

  it('is the same computation for status, from the recorded caps', () => {
    // Held from 60 s to 120 s (a cap of 0 recorded, then one above 0).
    const caps = [
      { at: 0, cap: 10 },
      { at: 60_000, cap: 0 },
      { at: 120_000, cap: 4 },
      { at: 130_000, cap: 6 },
    ];
    expect(releasedAtOf(caps)).toBe(120_000);
    expect(releasedAtOf(caps.slice(0, 2))).toBe(60_000);
    expect(releasedAtOf([{ at: 0, cap: 10 }])).toBeNull();
    const own = Array.from({ length: 12 }, (_, i) => 120_000 + i * 5_000);
    const input = { now: 180_000, startedAt: 0, held: false, remaining: 24, ownMovesSince: ended(own) };
    const fromStatus = paceOf({ ...input, releasedAt: releasedAtOf(caps) });
    expect(fromStatus.perMinute).toBeCloseTo(12);
    const meter = new PaceMeter(0, ended(own));
    meter.read(119_000, counts(0, 0, 36), true);
    // The process saw the hold end a moment before the cap was recorded: the same rate within that moment.
    expect(meter.read(180_000, counts(12, 0, 24), false).perMinute).toBeCloseTo(fromStatus.perMinute!, 0);
    expect(
      paceOf({ ...input, releasedAt: null, ownMovesSince: ended(own.slice(0, MIN_MOVES_FOR_RATE - 1)) }).etaMs,
    ).toBeNull();
  });

  it('has no ETA while held, and one of 0 once nothing remains', () => {
    expect(etaOf(10, 5, true)).toBeNull();
    expect(etaOf(10, null, false)).toBeNull();
    expect(etaOf(0, null, true)).toBe(0);
    expect(etaOf(10, 5, false)).toBe(120_000);
  });
});
