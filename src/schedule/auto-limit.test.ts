import { describe, expect, it } from 'vitest';
import { addToFit, decideAuto, deliveredBandwidth, fixedMs, observeMove, startAuto } from './auto-limit.js';
import type { AutoBounds, AutoDecision, AutoState } from './auto-limit.js';

const T0 = 1_700_000_000_000;
const MB = 1e6;
/** Every window in these tables lasts 20 s of the fake clock and its moves are 10 MB each. */
const WINDOW_MS = 20_000;
const MOVE = 10 * MB;
const timing = { minWindowMs: 10_000, maxWindowMs: 60_000 };
const bounds: AutoBounds = { min: 2, max: 64 };

/** One window: throughput in MB/s and seconds per MB (each move's duration over its size). */
interface Row {
  mbps: number;
  sPerMb: number;
  inFlight?: number;
  pinned?: number | null;
}

/** Runs the windows one after another on a fake clock; returns each window's decision. */
function run(rows: Row[], b: AutoBounds = bounds, start?: AutoState): { state: AutoState; out: AutoDecision[] } {
  let s = start ?? startAuto(b, T0);
  let now = s.window.from;
  const out: AutoDecision[] = [];
  for (const r of rows) {
    const moves = Math.round((r.mbps * WINDOW_MS) / 1000 / (MOVE / MB));
    for (let i = 0; i < moves; i++) s = observeMove(s, MOVE, r.sPerMb * (MOVE / MB) * 1000);
    now += WINDOW_MS;
    const d = decideAuto(s, {
      now,
      bounds: b,
      timing,
      pinned: r.pinned ?? null,
      ...(r.inFlight === undefined ? {} : { inFlight: r.inFlight }),
    });
    s = d.state;
    out.push(d.decision);
  }
  return { state: s, out };
}

const caps = (out: AutoDecision[]) => out.map((d) => d.cap);

/** A settling window after each change: what it measures is not judged. */
const SETTLE: Row = { mbps: 10, sPerMb: 0.1 };

describe('move.concurrency: auto, decisions on a fake clock', () => {
  it('raises while throughput grows (doubling from min), then goes back to the knee when a raise gains nothing', () => {
    const { state, out } = run([
      { mbps: 10, sPerMb: 0.2 }, // at 2
      SETTLE,
      { mbps: 20, sPerMb: 0.2 }, // at 4: +100%
      SETTLE,
      { mbps: 40, sPerMb: 0.2 }, // at 8: +100%
      SETTLE,
      { mbps: 41, sPerMb: 0.39 }, // at 16: flat, each move slower
    ]);
    expect(caps(out)).toEqual([4, 4, 8, 8, 16, 16, 8]);
    expect(out[0]?.reason).toBe('auto: 10 MB/s at 2; trying 4');
    expect(out[2]?.reason).toBe('auto: throughput up 100% at 4 (20 MB/s); trying 8');
    expect(out[6]?.reason).toBe('auto: throughput flat at 8, 16 moved slower');
    expect(out[1]?.reason).toBeNull();
    expect(state.knee).toBe(8);
    expect(state.phase).toBe('steady');
  });

  it('after the knee, raises by a quarter, not by doubling', () => {
    const knee = startAuto(bounds, T0, 8);
    const { out } = run(
      [
        { mbps: 40, sPerMb: 0.2 },
        { mbps: 40, sPerMb: 0.2 },
        { mbps: 40, sPerMb: 0.2 },
      ],
      bounds,
      knee,
    );
    expect(caps(out)).toEqual([8, 8, 10]);
    expect(out[2]?.reason).toBe('auto: probing after 3 windows held at 8 (40 MB/s); trying 10');
  });

  const atKnee = () =>
    run([
      { mbps: 10, sPerMb: 0.2 },
      SETTLE,
      { mbps: 20, sPerMb: 0.2 },
      SETTLE,
      { mbps: 21, sPerMb: 0.38 }, // at 8: flat: back to 4
      SETTLE,
      { mbps: 20, sPerMb: 0.2 }, // held at 4: the reference
    ]);

  it('flat throughput with rising time per byte at a cap held lowers it (x0.75)', () => {
    const { state } = atKnee();
    expect(state.cap).toBe(4);
    const { out } = run([{ mbps: 20, sPerMb: 0.3 }], bounds, state);
    expect(caps(out)).toEqual([3]);
    // The bandwidth the copies got together speaks first where both signals see the window.
    expect(out[0]?.reason).toBe(
      'auto: the copies got 35% less bandwidth at 4 (13 MB/s against 21 MB/s), each slower per byte than the cap explains: the instance got busier; lowered to 3',
    );
    // A window too thin for a bandwidth (three moves, closed at maxWindowMs): the rule of a cap held.
    let thin = state;
    for (let i = 0; i < 3; i++) thin = observeMove(thin, MOVE, 0.3 * (MOVE / MB) * 1000);
    const d = decideAuto(thin, { now: thin.window.from + timing.maxWindowMs, bounds, timing, pinned: null });
    expect(d.seen?.bandwidth).toBeNull();
    expect(d.decision).toEqual({
      cap: 3,
      reason: 'auto: moves 1.5x slower per byte at 4 with no throughput gained (0.5 MB/s); lowered to 3',
    });
  });

  it('an instance that gets busier lowers the cap within one window, and a recovery raises it again', () => {
    const { state } = run(
      [{ mbps: 40, sPerMb: 0.2 }], // the reference at 16
      bounds,
      startAuto(bounds, T0, 16),
    );
    const busy = run(
      [
        { mbps: 20, sPerMb: 0.4 }, // another tenant takes half the disk: slower, no more throughput
        SETTLE,
        { mbps: 20, sPerMb: 0.3 }, // at 12: the reference for the busy instance
        { mbps: 40, sPerMb: 0.15 }, // the tenant left: twice as fast per byte
        SETTLE,
        { mbps: 48, sPerMb: 0.16 }, // at 15: +20%
      ],
      bounds,
      state,
    );
    // The tenant gone, the copies get their bandwidth again: back to 16 at once, then probing.
    expect(caps(busy.out)).toEqual([12, 12, 12, 16, 16, 20]);
    // The bandwidth the copies got together speaks first where both signals see the window.
    expect(busy.out[0]?.reason).toBe(
      'auto: the copies got 50% less bandwidth at 16 (40 MB/s against 80 MB/s), each slower per byte than the cap explains: the instance got busier; lowered to 12',
    );
    expect(busy.out[3]?.reason).toMatch(
      /^auto: the copies get [0-9.]+ [kM]B\/s again \([0-9.]+ [kM]B\/s before the other load\): back to 16$/,
    );
  });

  it('stays within min and max', () => {
    const tight = { min: 3, max: 5 };
    const up = run(
      [
        { mbps: 10, sPerMb: 0.2 },
        SETTLE,
        { mbps: 20, sPerMb: 0.2 },
        { mbps: 40, sPerMb: 0.2 },
        { mbps: 40, sPerMb: 0.2 },
        { mbps: 40, sPerMb: 0.2 },
      ],
      tight,
    );
    expect(caps(up.out)).toEqual([5, 5, 5, 5, 5, 5]);
    const down = run(
      [
        { mbps: 10, sPerMb: 0.2 },
        { mbps: 10, sPerMb: 1 },
        { mbps: 10, sPerMb: 1.5 },
      ],
      tight,
      { ...startAuto(tight, T0, 3), phase: 'steady' },
    );
    expect(caps(down.out)).toEqual([3, 3, 3]);
    expect(down.out.every((d) => d.reason === null)).toBe(true);
    // A plan edited before a resume: the kept cap is brought inside the new bounds at once.
    const edited = run([{ mbps: 10, sPerMb: 0.2 }], { min: 2, max: 4 }, startAuto(bounds, T0, 16));
    expect(edited.out[0]).toEqual({ cap: 4, reason: 'auto: within min 2 and max 4' });
  });

  it("the run's tail, with fewer moves in flight than the cap, slower per byte (the last, smallest moves) does not lower it", () => {
    const { state } = atKnee();
    expect(state.cap).toBe(4);
    // The same window as the row above lowers the cap to 3 when it binds; here the work ran out.
    const { out } = run([{ mbps: 20, sPerMb: 0.3, inFlight: 3 }], bounds, state);
    expect(out[0]).toEqual({ cap: 4, reason: null });
  });

  it('a cap nothing reaches is not raised', () => {
    const { out } = run([{ mbps: 10, sPerMb: 0.2, inFlight: 1 }]);
    expect(out[0]).toEqual({ cap: 2, reason: null });
  });

  it('a cap pinned with shardmove control holds until released, then the limiter goes on from its own cap', () => {
    const { out, state } = run([
      { mbps: 10, sPerMb: 0.2 }, // 2 -> 4
      { mbps: 10, sPerMb: 0.2, pinned: 30 },
      { mbps: 90, sPerMb: 0.2, pinned: 30 },
      { mbps: 10, sPerMb: 0.2 }, // released
      SETTLE,
    ]);
    expect(caps(out)).toEqual([4, 30, 30, 4, 4]);
    expect(out[3]?.reason).toBe('auto: the limiter decides again from 4');
    expect(state.last).toBeNull();
  });

  it('decides at most once per window: too few moves or too little time keeps the window open', () => {
    // A full window's rule, on a limiter past its slow start (a knee kept): the slow start's first
    // window closes early (the next describe).
    const closedAt = (st: AutoState, now: number) =>
      decideAuto(st, { now, bounds, timing, pinned: null }).state.window.from === now;
    let s = startAuto(bounds, T0, 2);
    for (let i = 0; i < 3; i++) s = observeMove(s, MOVE, 1000);
    // Three moves after 30 s: not enough to close early.
    expect(closedAt(s, T0 + 30_000)).toBe(false);
    s = observeMove(s, MOVE, 1000);
    // Four moves, but the window has not lasted minWindowMs.
    expect(closedAt(s, T0 + 5_000)).toBe(false);
    expect(closedAt(s, T0 + timing.minWindowMs)).toBe(true);
    // A window of few moves still closes at maxWindowMs.
    const few = observeMove(startAuto(bounds, T0, 2), MOVE, 1000);
    expect(closedAt(few, T0 + 59_999)).toBe(false);
    expect(closedAt(few, T0 + 60_000)).toBe(true);
    // The window lasts at least the median duration of its moves: a generation, not a few early finishers.
    let slow = startAuto(bounds, T0, 2);
    for (let i = 0; i < 4; i++) slow = observeMove(slow, MOVE, 40_000);
    expect(closedAt(slow, T0 + 20_000)).toBe(false);
    expect(closedAt(slow, T0 + 40_000)).toBe(true);
  });

  it('weighs time per byte by bytes: a few tiny moves do not say the instance got slower', () => {
    const { state } = atKnee();
    let s = state;
    // 20 MB/s in 10 MB moves at the reference pace, plus ten 1 kB moves that took 5 s each.
    for (let i = 0; i < 40; i++) s = observeMove(s, MOVE, 2000);
    for (let i = 0; i < 10; i++) s = observeMove(s, 1000, 5000);
    const d = decideAuto(s, { now: s.window.from + WINDOW_MS, bounds, timing, pinned: null });
    expect(d.decision).toEqual({ cap: 4, reason: null });
  });
});

describe('move.concurrency: auto, the slow start (cheap raises, and a busier instance inside it)', () => {
  it('a short settling window that already gained over the cap before the raise is judged at once', () => {
    let s = run([{ mbps: 10, sPerMb: 0.2 }]).state; // 2 -> 4, settling
    expect(s.cap).toBe(4);
    expect(s.settling).toBe(true);
    const from = s.window.from;
    // One move after minWindowMs: it gained nothing yet (0.5 MB/s against 10), so the settling
    // window stays open for a gain (before this change it settled here and a full window followed).
    s = observeMove(s, MOVE, 2000);
    let d = decideAuto(s, { now: from + timing.minWindowMs, bounds, timing, pinned: null });
    expect(d.decision).toEqual({ cap: 4, reason: null });
    expect(d.state.settling).toBe(true);
    expect(d.state.window.from).toBe(from);
    // Four moves and their median duration with no gain: a full window; it only settles.
    let flat = d.state;
    for (let i = 0; i < 3; i++) flat = observeMove(flat, MOVE, 2000);
    d = decideAuto(flat, { now: from + 15_000, bounds, timing, pinned: null });
    expect(d.decision).toEqual({ cap: 4, reason: null });
    expect(d.state.settling).toBe(false);
    expect(d.state.window.from).toBe(from + 15_000);
    // The same raise, but 20 MB/s finish in the settling window: judged, and 4 doubles at once.
    s = run([{ mbps: 10, sPerMb: 0.2 }]).state;
    for (let i = 0; i < 20; i++) s = observeMove(s, MOVE, 2000);
    d = decideAuto(s, { now: from + timing.minWindowMs, bounds, timing, pinned: null });
    expect(d.decision).toEqual({ cap: 8, reason: 'auto: throughput up 100% at 4 (20 MB/s); trying 8' });
    expect(d.state.settling).toBe(true);
  });

  it('a settling window of the slow start that shows no gain at minWindowMs stays open as long as the window before the raise lasted, and is judged when the gain shows in that time', () => {
    let s = run([{ mbps: 10, sPerMb: 0.2 }]).state; // 2 -> 4, settling
    const from = s.window.from;
    s = observeMove(s, MOVE, 2000);
    const open = decideAuto(s, { now: from + timing.minWindowMs, bounds, timing, pinned: null });
    expect(open.decision).toEqual({ cap: 4, reason: null });
    // Before this change the settling window closed at minWindowMs; now 24 moves by 12 s: 20 MB/s.
    s = open.state;
    for (let i = 0; i < 23; i++) s = observeMove(s, MOVE, 2000);
    const d = decideAuto(s, { now: from + 12_000, bounds, timing, pinned: null });
    expect(d.decision).toEqual({ cap: 8, reason: 'auto: throughput up 100% at 4 (20 MB/s); trying 8' });
    // No gain by the time the window before the raise had lasted (20 s): it only settles.
    const waited = decideAuto(open.state, { now: from + WINDOW_MS, bounds, timing, pinned: null });
    expect(waited.decision).toEqual({ cap: 4, reason: null });
    expect(waited.state.settling).toBe(false);
    expect(waited.state.window.from).toBe(from + WINDOW_MS);
  });

  it('a raise after which throughput falls and the moves get slower per byte is a busier instance: x0.75, no knee, and up again when it ends', () => {
    const { state, out } = run([
      { mbps: 10, sPerMb: 0.2 }, // at 2
      SETTLE,
      { mbps: 20, sPerMb: 0.2 }, // at 4: +100%
      SETTLE,
      { mbps: 14, sPerMb: 0.6 }, // at 8: another tenant arrives: 30% fewer bytes, 3x slower per byte
      SETTLE,
      { mbps: 14, sPerMb: 0.45 }, // at 6: the reference for the busy instance
      { mbps: 14, sPerMb: 0.45 },
      { mbps: 24, sPerMb: 0.2 }, // the tenant left: more than twice as fast per byte
    ]);
    // The busy instance at 6 gives the copies as much as the ramp's low caps did, but no more than
    // the window that cut: not yet a recovery. The tenant gone, back to 8 and on doubling.
    expect(caps(out)).toEqual([4, 4, 8, 8, 6, 6, 6, 6, 8]);
    expect(out[4]?.reason).toBe(
      'auto: throughput down 30% at 8 (14 MB/s), moves 3.0x slower per byte: the instance got busier; lowered to 6',
    );
    expect(out[8]?.reason).toMatch(
      /^auto: the copies get [0-9.]+ [kM]B\/s again \([0-9.]+ [kM]B\/s before the other load\): back to 8$/,
    );
    expect(state.knee).toBeNull();
    expect(state.phase).toBe('start');
  });

  it('at a cap held in the slow start (as before this change), time per byte jumping while throughput falls lowers the cap (x0.75), and its fall raises it', () => {
    // A raise kept without a gain (the moves got smaller, no slower): the slow start holds 4.
    const { state, out } = run([
      { mbps: 10, sPerMb: 0.2 }, // at 2
      SETTLE,
      { mbps: 10, sPerMb: 0.2 }, // at 4: flat, no slower per byte: kept, the reference
      { mbps: 6, sPerMb: 0.5 }, // at 4: another tenant: 2.5x slower per byte, fewer bytes
      SETTLE,
      { mbps: 6, sPerMb: 0.5 }, // at 3: the reference for the busy instance
      { mbps: 12, sPerMb: 0.2 }, // the tenant left
    ]);
    expect(caps(out)).toEqual([4, 4, 4, 3, 3, 3, 4]);
    expect(out[3]?.reason).toBe(
      'auto: the copies got 47% less bandwidth at 4 (8.0 MB/s against 15 MB/s), each slower per byte than the cap explains: the instance got busier; lowered to 3',
    );
    expect(out[6]?.reason).toMatch(
      /^auto: the copies get [0-9.]+ [kM]B\/s again \([0-9.]+ [kM]B\/s before the other load\): back to 4$/,
    );
    expect(state.knee).toBeNull();
  });
});

describe('move.concurrency: auto, the first window and a busier disk during the ramp', () => {
  it("the slow start's first window closes after minWindowMs and one finished move, and doubles the cap if it binds", () => {
    const at = (st: AutoState, now: number, inFlight?: number) =>
      decideAuto(st, { now, bounds, timing, pinned: null, ...(inFlight === undefined ? {} : { inFlight }) });
    // Nothing finished yet: open, however long it has lasted (up to maxWindowMs).
    expect(at(startAuto(bounds, T0), T0 + 30_000).state.window.from).toBe(T0);
    const one = observeMove(startAuto(bounds, T0), MOVE, 8000);
    expect(at(one, T0 + timing.minWindowMs - 1).decision).toEqual({ cap: 2, reason: null });
    // One move, minWindowMs: nothing to compare it with, so the cap doubles at once (before: four
    // moves and their median duration, the largest moves of the run at its lowest cap).
    const d = at(one, T0 + timing.minWindowMs);
    expect(d.decision).toEqual({ cap: 4, reason: 'auto: 1.0 MB/s at 2; trying 4' });
    expect(d.state.last).toMatchObject({ cap: 2, moves: 1 });
    expect(d.state.settling).toBe(true);
    // One move sets no peak for a busier disk: it would stand above every window after it.
    expect(d.state.peak).toBeNull();
    // A cap nothing reaches is measured but not raised.
    expect(at(one, T0 + timing.minWindowMs, 1).decision).toEqual({ cap: 2, reason: null });
    // From a knee (a resumed run) the first window measures the reference: a full window.
    const knee = observeMove(startAuto(bounds, T0, 8), MOVE, 8000);
    expect(at(knee, T0 + timing.minWindowMs).state.window.from).toBe(T0);
  });

  it('another tenant arriving mid-ramp lowers the cap though each raise still gains: time per byte a slot against the highest seen at any cap', () => {
    const { state, out } = run([
      { mbps: 10, sPerMb: 0.1 }, // at 2: 0.05 s a MB a slot, the peak
      SETTLE,
      { mbps: 20, sPerMb: 0.2 }, // at 4: +100%, twice as slow per byte as twice the moves explain: the same a slot
      SETTLE,
      { mbps: 40, sPerMb: 0.4 }, // at 8: +100%, the same a slot
      SETTLE,
      { mbps: 46, sPerMb: 1.6 }, // at 16: another tenant takes half the disk; +15% still, but twice as slow a slot
      SETTLE,
      { mbps: 36, sPerMb: 1.2 }, // at 12: the reference for the busy instance
      { mbps: 48, sPerMb: 0.6 }, // the tenant left: twice as fast per byte
    ]);
    expect(caps(out)).toEqual([4, 4, 8, 8, 16, 16, 12, 12, 12, 16]);
    expect(out[2]?.reason).toBe('auto: throughput up 100% at 4 (20 MB/s); trying 8');
    expect(out[6]?.reason).toBe(
      'auto: moves 16.0x slower per byte at 16 than at 2 (the cap explains 8x): the instance got busier; lowered to 12',
    );
    expect(out[9]?.reason).toMatch(
      /^auto: the copies get [0-9.]+ [kM]B\/s again \([0-9.]+ [kM]B\/s before the other load\): back to 16$/,
    );
    expect(state.knee).toBeNull();
  });

  it('a settling window of the slow start shows a busier disk too; one only as slow a slot as the peak does not', () => {
    const busy = run([
      { mbps: 10, sPerMb: 0.2 }, // at 2: the peak, 0.1 s a MB a slot
      { mbps: 10, sPerMb: 0.8 }, // settling at 4: 0.2 a slot, twice the peak
    ]);
    expect(caps(busy.out)).toEqual([4, 3]);
    expect(busy.out[1]?.reason).toBe(
      'auto: moves 4.0x slower per byte at 4 than at 2 (the cap explains 2x): the instance got busier; lowered to 3',
    );
    expect(busy.state.phase).toBe('steady');
    const quiet = run([
      { mbps: 10, sPerMb: 0.2 },
      { mbps: 10, sPerMb: 0.51 }, // settling at 4: 0.1275 a slot, less than 30% above the peak
    ]);
    expect(caps(quiet.out)).toEqual([4, 4]);
    expect(quiet.state.phase).toBe('start');
    // A window more than a quarter above the peak leaves it; one less above raises it.
    expect(quiet.state.peak?.cap).toBe(2);
    expect(quiet.state.peak?.msPerByte).toBeCloseTo((0.2 * 1000) / MB, 12);
    const raised = run([
      { mbps: 10, sPerMb: 0.2 },
      { mbps: 10, sPerMb: 0.45 }, // settling at 4: 0.1125 a slot
    ]);
    expect(raised.state.peak?.cap).toBe(4);
    expect(raised.state.peak?.msPerByte).toBeCloseTo((0.45 * 1000) / MB, 12);
    // Three moves, however slow a slot, leave the peak where it was; four set it.
    const fewer = run([
      { mbps: 1.5, sPerMb: 2 }, // at 2: three moves, 1 s a MB a slot
      { mbps: 10, sPerMb: 0.2 }, // settling at 4: the first peak, 0.05 a slot
    ]);
    expect(fewer.state.peak).toEqual({ msPerByte: (0.2 * 1000) / MB, cap: 4 });
  });
});

describe('move.concurrency: auto, a busier disk seen before a long window closes', () => {
  /** The ramp to 16 of the tables above, its settling window at 16 without a gain. */
  const ramp: Row[] = [
    { mbps: 10, sPerMb: 0.1 }, // at 2: 0.05 s a MB a slot, the peak
    SETTLE,
    { mbps: 20, sPerMb: 0.2 }, // at 4
    SETTLE,
    { mbps: 40, sPerMb: 0.4 }, // at 8
    SETTLE, // at 16: no gain in the time the window at 8 lasted, so it only settles
  ];

  it('another tenant arriving just after a raise lowers the cap while the long window at the new cap is still open', () => {
    // At 16 the tenant takes most of the disk: 32 s a move, longer than the 20 s the window has
    // lasted, so the window is not due; its first moves are already 4x as slow a slot as the peak.
    const { state, out } = run([...ramp, { mbps: 20, sPerMb: 3.2 }]);
    expect(caps(out)).toEqual([4, 4, 8, 8, 16, 16, 12]);
    expect(out[6]?.reason).toBe(
      'auto: moves 32.0x slower per byte at 16 than at 2 (the cap explains 8x): the instance got busier; lowered to 12',
    );
    expect(state.phase).toBe('steady');
    expect(state.knee).toBeNull();
  });

  it('a long window whose moves are only as slow a slot as the peak stays open, its moves kept for when it closes', () => {
    let s = run(ramp).state;
    expect(s.cap).toBe(16);
    const from = s.window.from;
    // Four moves of 100 MB at 0.8 s a MB (0.05 a slot at 16: the peak), 80 s each: not due at 20 s.
    for (let i = 0; i < 4; i++) s = observeMove(s, 100 * MB, 80_000);
    const d = decideAuto(s, { now: from + WINDOW_MS, bounds, timing, pinned: null });
    expect(d.decision).toEqual({ cap: 16, reason: null });
    expect(d.state.window.from).toBe(from);
    expect(d.state.window.moves).toBe(4);
    expect(d.state.fit).toEqual(s.fit);
    // Fewer than four finished moves are not looked at, however slow.
    let few = run(ramp).state;
    for (let i = 0; i < 3; i++) few = observeMove(few, 100 * MB, 320_000);
    expect(decideAuto(few, { now: few.window.from + WINDOW_MS, bounds, timing, pinned: null }).decision.cap).toBe(16);
  });
});

describe('move.concurrency: auto, the fixed part of a move (largest first: the moves get smaller)', () => {
  const FIXED = 3000;
  /** `count` moves from `fromMb` down to `toMb` (evenly), each FIXED plus `msPerMb` a MB. */
  const moves = (count: number, fromMb: number, toMb: number, msPerMb: number): Array<[number, number]> =>
    Array.from({ length: count }, (_, i) => {
      const mb = fromMb + ((toMb - fromMb) * i) / Math.max(1, count - 1);
      return [mb * MB, FIXED + mb * msPerMb];
    });
  /** Feeds each window's moves and closes it WINDOW_MS later; each window's decision. */
  function windows(rows: Array<Array<[number, number]>>, start: AutoState): { state: AutoState; out: AutoDecision[] } {
    let s = start;
    let now = s.window.from;
    const out: AutoDecision[] = [];
    for (const row of rows) {
      for (const [b, d] of row) s = observeMove(s, b, d);
      now += WINDOW_MS;
      const d = decideAuto(s, { now, bounds, timing, pinned: null });
      s = d.state;
      out.push(d.decision);
    }
    return { state: s, out };
  }

  it('fits the fixed part across windows of different contention, and only from windows that say something', () => {
    let fit = addToFit({ a: 0, c: 0 }, moves(10, 100, 10, 20));
    fit = addToFit(fit, moves(10, 10, 1, 80));
    expect(fixedMs(fit, moves(10, 10, 1, 80))).toBeCloseTo(FIXED, 6);
    // Equal sizes, or durations falling as bytes grow, add nothing.
    const same: Array<[number, number]> = Array.from({ length: 5 }, () => [10 * MB, 4000]);
    expect(addToFit({ a: 0, c: 0 }, same)).toEqual({ a: 0, c: 0 });
    const backwards: Array<[number, number]> = [
      [10 * MB, 2000],
      [1000, 5000],
    ];
    expect(addToFit({ a: 0, c: 0 }, backwards)).toEqual({ a: 0, c: 0 });
    // Never more than the window's shortest move, never below 0.
    expect(fixedMs({ a: 10_000, c: 1 }, moves(4, 10, 1, 80))).toBe(FIXED + 80);
    expect(fixedMs({ a: -5, c: 1 }, moves(4, 10, 1, 80))).toBe(0);
    expect(fixedMs(undefined, moves(4, 10, 1, 80))).toBe(0);
  });

  it('a raise that finishes more moves a second is a gain, though the moves got smaller and their bytes a second did not grow', () => {
    // At 2: 40 moves of 100 to 60 MB; settling at 4; at 4: 60 moves of 40 to 10 MB.
    const { out } = windows(
      [moves(40, 100, 60, 20), moves(40, 60, 40, 20), moves(60, 40, 10, 20)],
      startAuto(bounds, T0),
    );
    expect(caps(out)).toEqual([4, 4, 8]);
    expect(out[2]?.reason).toBe('auto: moves finishing up 50% at 4 (3.0/s); trying 8');
  });

  it('a raise whose throughput stays flat because the moves got smaller, no slower per byte, is kept', () => {
    // As many moves at 4 as at 2, smaller, each the same 100 ms a MB beside its fixed part.
    const { state, out } = windows(
      [moves(40, 100, 60, 100), moves(40, 60, 60, 100), moves(40, 60, 30, 100), moves(40, 30, 30, 100)],
      startAuto(bounds, T0),
    );
    expect(caps(out)).toEqual([4, 4, 4, 8]);
    expect(out[2]?.reason).toBeNull();
    // Still the slow start: the next doubling one window later, not after three.
    expect(out[3]?.reason).toBe('auto: probing after 2 windows held at 4 (60 MB/s); trying 8');
    expect(state.knee).toBeNull();
  });

  it('smaller moves at a cap held are not "slower per byte": their fixed part is left out', () => {
    const knee = startAuto(bounds, T0, 8);
    const { out } = windows([moves(40, 100, 60, 20), moves(40, 60, 30, 20), moves(40, 30, 10, 20)], {
      ...knee,
      fit: addToFit({ a: 0, c: 0 }, moves(20, 100, 10, 40)),
    });
    expect(caps(out)).toEqual([8, 8, 10]);
    expect(out[2]?.reason).toMatch(/^auto: probing after 3 windows held at 8/);
  });

  it('the bandwidth the copies got together: the cap times the share of time spent copying, over the time per byte', () => {
    const timed: Array<[number, number]> = [
      [400 * MB, 3000 + 400 * 40],
      [400 * MB, 3000 + 400 * 40],
      [400 * MB, 3000 + 400 * 40],
      [400 * MB, 3000 + 400 * 40],
    ];
    // 32 slots, 84% of their time copying: 27 copies at once, each at 25 MB/s (40 ms a MB).
    expect(deliveredBandwidth(timed, 3000, 32, 40 / MB)).toBeCloseTo((32 * (16000 / 19000)) / (40 / MB), 6);
    expect(deliveredBandwidth(timed.slice(0, 3), 3000, 32, 40 / MB)).toBeNull();
    expect(deliveredBandwidth(timed, 3000, 32, null)).toBeNull();
    expect(
      deliveredBandwidth(
        timed.map(([b]) => [b, 2000]),
        3000,
        32,
        40 / MB,
      ),
    ).toBeNull();
  });

  it('copies getting far less bandwidth at a cap held lower it once; the lower cap is judged against what the busier disk gives, and the load leaving raises it', () => {
    const knee = startAuto(bounds, T0, 32);
    const fit = addToFit({ a: 0, c: 0 }, moves(20, 100, 10, 40));
    const { state, out } = windows(
      [
        moves(40, 300, 100, 40), // at 32: 582 MB/s, the reference
        moves(40, 300, 100, 40),
        moves(40, 300, 100, 80), // another tenant: 337 MB/s, 42% less
        moves(40, 300, 100, 60), // settling at 24
        moves(40, 300, 100, 60), // at 24: 320 MB/s, the busy disk's: no second cut
        moves(40, 300, 100, 60),
        moves(40, 300, 100, 30), // the tenant left
      ],
      { ...knee, fit },
    );
    expect(caps(out)).toEqual([32, 32, 24, 24, 24, 24, 32]);
    expect(out[2]?.reason).toBe(
      'auto: the copies got 42% less bandwidth at 32 (337 MB/s against 582 MB/s), each slower per byte than the cap explains: the instance got busier; lowered to 24',
    );
    expect(out[6]?.reason).toBe('auto: the copies get 533 MB/s again (582 MB/s before the other load): back to 32');
    expect(state.knee).toBe(32);
  });

  it('smaller moves (largest first) only a quarter slower per byte are a busier disk when the copies together got far less: fewer copy at once, so each should have got faster', () => {
    const knee = startAuto(bounds, T0, 32);
    const fit = addToFit({ a: 0, c: 0 }, moves(20, 100, 10, 40));
    const { out } = windows(
      [
        moves(40, 300, 100, 40), // at 32: 582 MB/s
        moves(40, 300, 100, 40),
        moves(40, 150, 50, 50), // half the size, 25% slower per byte (not above the 25% of a cap held): 400 MB/s
      ],
      { ...knee, fit },
    );
    expect(caps(out)).toEqual([32, 32, 24]);
    expect(out[2]?.reason).toBe(
      'auto: the copies got 31% less bandwidth at 32 (400 MB/s against 582 MB/s), each slower per byte than the cap explains: the instance got busier; lowered to 24',
    );
    // The same smaller moves as fast per byte (21% less bandwidth, fewer copying at once): nothing
    // is cut, and the third window held probes a step higher as usual.
    const quiet = windows([moves(40, 300, 100, 40), moves(40, 300, 100, 40), moves(40, 150, 50, 40)], { ...knee, fit });
    expect(caps(quiet.out)).toEqual([32, 32, 40]);
    expect(quiet.out[2]?.reason).toMatch(/^auto: probing after 3 windows held at 32/);
  });

  it('a busy mark whose cap the limiter already passed again is dropped, and the window judged as any other', () => {
    const knee = startAuto(bounds, T0, 32);
    const fit = addToFit({ a: 0, c: 0 }, moves(20, 100, 10, 40));
    // At 32 already, marked busy from 24: the copies get their bandwidth; nothing to go back to.
    const { state, out } = windows([moves(40, 300, 100, 40), moves(40, 300, 100, 40)], {
      ...knee,
      fit,
      busy: { cap: 24, bandwidth: 580_000 },
    });
    expect(caps(out)).toEqual([32, 32]);
    expect(out.every((d) => d.reason === null)).toBe(true);
    expect(state.busy).toBeNull();
    expect(state.held).toBe(2);
  });

  it('a settling window measures no bandwidth: its moves ran partly at the cap before the change', () => {
    const knee = startAuto(bounds, T0, 32);
    let s: AutoState = { ...knee, fit: addToFit({ a: 0, c: 0 }, moves(20, 100, 10, 40)), settling: true };
    for (const [b, d] of moves(40, 600, 200, 40)) s = observeMove(s, b, d);
    const d = decideAuto(s, { now: s.window.from + WINDOW_MS, bounds, timing, pinned: null });
    expect(d.seen?.how).toBe('settled');
    expect(d.seen?.bandwidth).toBeNull();
    expect(d.state.bw).toEqual([]);
  });

  it('another tenant doubling the time per byte lowers the cap though the moves have a fixed part, and its end raises it', () => {
    const knee = startAuto(bounds, T0, 16);
    const fit = addToFit({ a: 0, c: 0 }, moves(20, 100, 10, 40));
    const { out } = windows(
      [
        moves(40, 60, 20, 40), // the reference at 16
        moves(40, 60, 20, 80), // another tenant takes half the disk
        moves(40, 60, 20, 60), // settling at 12
        moves(40, 60, 20, 80), // the reference at 12
        moves(40, 60, 20, 40), // the tenant left
      ],
      { ...knee, fit },
    );
    expect(caps(out)).toEqual([16, 12, 12, 12, 15]);
    expect(out[1]?.reason).toMatch(/^auto: the copies got 26% less bandwidth at 16 .*, each slower per byte/);
    expect(out[4]?.reason).toBe('auto: moves 50% faster per byte at 12; trying 15');
  });
});
