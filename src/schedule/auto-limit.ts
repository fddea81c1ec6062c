/**
 * `move.concurrency: auto`: the limiter that chooses the operator's cap from what the drain
 * already polls, pure (state and observation in, new state and a decision out), so its decisions
 * are a table a test reads on a fake clock.
 *
 * What it measures, per sample window: the bytes of the moves that finished in it per second of
 * the run's clock (throughput), and their time per byte: the summed durations, less each move's
 * fixed part, over the summed bytes of the window's larger half (the moves at least as large as its
 * median). Small moves are left out of it on purpose: a move of a few kilobytes is all fixed cost
 * (a POST, a poll, a repository's housekeeping), so its time per byte says nothing about the disk,
 * and a handful of them would say that everything got slower. Throughput is the main signal (it is
 * what the drain is for); time per byte confirms that a raise bought only slower moves, and alone
 * tells that the instance got busier at the same cap.
 *
 * The fixed part (the time of a move that does not grow with its bytes) is the common intercept of
 * every window's durations against bytes (each window its own slope, since each has its own
 * contention; a window of equal sizes says nothing of it, and until one does it counts as 0). It
 * matters because the drain goes largest first: the moves get smaller as the run goes on, and with
 * the fixed part left in, their time per byte would rise at any cap (the instance "got busier")
 * and each window's throughput would fall (a raise "gained nothing"), so the limiter would settle
 * on the cap that suited the first, largest moves and keep it while the small ones wait for their
 * fixed parts one or two at a time. So a raise whose throughput stayed flat but whose moves got no
 * slower per byte is kept, not undone: nothing shows that the extra moves queue on anything.
 *
 * How it moves the cap, gradient style (TCP Vegas's expected-versus-actual, with throughput for
 * the expected rate and time per byte for the round trip):
 *
 * - **Slow start**: from `min` (or the knee a resumed run found), doubling while each raise grows
 *   throughput by more than {@link GAIN}. Its first window closes after `minWindowMs` and one
 *   finished move: it has nothing to be compared with and the cap doubles if it binds, so the run
 *   does not wait for a generation of its largest moves at its lowest cap (its throughput, a move
 *   or two over the window, is a low bound for `min`'s: the doubling from `min` is nearly always
 *   judged a gain, so a knee at `min` itself is found one doubling later, at `2 x min`). A window
 *   after a raise is judged as soon as it already gained over the window before the raise (the
 *   moves started under the old cap only hold a gain down), at any poll from `minWindowMs` and one
 *   finished move on until it has lasted as long as that window did (or a full window, if sooner);
 *   without a gain by then it only settles, and a full window judges the raise. So a doubling that
 *   pays costs one short window.
 * - **Busier during the slow start, without comparing two caps**: copies that share a disk take
 *   longer per byte the more of them run, at most in proportion to the cap (every slot copying at
 *   once), so the time per byte a slot (over the cap) has a ceiling set by the disk alone, which
 *   the first windows (the largest moves, the disk nearly always busy) come close to. Every window
 *   of the slow start, a settling one too, is held against the highest seen at any cap (the peak,
 *   raised only by a window at most {@link SLOWER} above it): more than {@link BUSIER} above it is
 *   another load on the disk, though the raise may still have gained (the extra moves overlap
 *   their fixed parts): `x0.75` of the cap in force, no knee kept, and probing goes on from there.
 *   A full window is looked at for it before it closes, at every poll once it has
 *   {@link MIN_MOVES} finished moves and has lasted `minWindowMs`: at a cap just doubled the moves
 *   are long, and a load that arrived just after the raise would otherwise be judged only when a
 *   generation of them had finished, often after it left. The look only cuts; without a busier
 *   disk the window goes on as if nothing had looked.
 * - **Busier, from the bandwidth the copies got** (BBR's bottleneck bandwidth), in any phase: the
 *   copies running at once (the cap, when it binds, times the share of the moves' time spent
 *   copying rather than in their fixed part) over the time per byte is what the disks gave the
 *   moves together. A lower cap cannot lower it while the cap binds (at most it leaves the disks
 *   idle, and then fewer copy at once and each copies faster), so a window's bandwidth more than
 *   {@link BW_BUSIER} below the median of the last {@link BW_KEPT} windows, each copy slower per
 *   byte than in them by more than the cap explains, is another load: `x0.75`, no knee kept (copies no slower each that got less
 *   together are copies limited by their own pace, fewer of them at once). Unlike the time per byte a slot it does not fall when many slots sit in fixed
 *   parts (a high cap, the small moves late in a largest-first run). After any cut the bandwidth
 *   measured there is the reference (a busier disk's bandwidth does not come back with a lower
 *   cap: against the old one every window would cut again). Settling windows measure none (their
 *   moves ran partly at the cap before the change). When the copies get within half that margin
 *   of the bandwidth before the first such cut again, the other load has gone: the cap goes
 *   straight back to where it was, not a quarter at a time (and, without a knee found yet, the slow
 *   start goes on doubling).
 * - **Busier after a raise**: a raise after which fewer bytes and no more moves finish, each slower
 *   per byte, is another load on the instance, not a knee (at a knee throughput stays flat):
 *   likewise `x0.75`, no knee kept.
 * - **After a raise that gained nothing** (throughput within {@link GAIN} of the cap before it):
 *   back to that cap, which is the knee; from then on raises are `+max(1, cap/4)`.
 * - **Busier instance**: at a cap held, time per byte above the reference by more than
 *   {@link SLOWER} with no throughput gained lowers the cap to `x0.75`. The reference is the time
 *   per byte first measured at the cap in force, aged by {@link AGE} a window (the min-RTT of
 *   Vegas, which a busier instance must be able to outgrow), and measured again after each change.
 * - **Probing**: after {@link PROBE_AFTER} windows held (one in the slow start, which only
 *   holds after a raise kept without a gain), or at once when moves get faster per
 *   byte than the reference, one raise; kept if throughput grows, else undone.
 * - **Bounds**: never below `min` nor above `max`; a raise, and a cut for moves slower at a cap
 *   held, only while the cap binds (as many moves in flight as it allows), since a cap nothing
 *   reaches proves nothing.
 *
 * A window closes once it has {@link MIN_MOVES} finished moves and has lasted the median duration
 * of those moves (at least `minWindowMs`): shorter, it would count the moves that happened to
 * finish rather than a generation of them. A window with fewer moves closes at `maxWindowMs`. The
 * window right after a change is not judged (its moves started under the old cap): it only
 * settles, except in the slow start as above (its first window, and a raise that already paid).
 * Time is the run's clock, never the wall's. A cap pinned with `shardmove control --concurrency N`
 * suspends it; released, it goes on from its own cap with a fresh window.
 */

/** The limiter's bounds: the plan's `{auto: {min, max}}`, or the defaults. */
export interface AutoBounds {
  min: number;
  max: number;
}

/** The defaults of `move.concurrency: auto`. */
export const AUTO_DEFAULTS: AutoBounds = { min: 2, max: 64 };

/** Throughput must grow by more than this share for a raise to count as a gain. */
export const GAIN = 0.1;
/** Time per byte this much above the reference means the moves only got slower. */
export const SLOWER = 0.25;
/**
 * In the slow start, time per byte a slot (over the cap) this much above the highest seen at any
 * cap before means another load on the disks: the cap in force cannot explain it.
 */
export const BUSIER = 0.3;
/** How far the reference time per byte ages (rises) each window held. */
export const AGE = 0.05;
/** Windows held at one cap before probing one step higher. */
export const PROBE_AFTER = 3;
/** Finished moves a window needs before it may close early. */
export const MIN_MOVES = 4;
/** The multiplicative decrease. */
export const DECREASE = 0.75;
/**
 * The share of the larger moves' durations that must be left once their fixed part is taken off
 * for their time per byte to be measured at all.
 */
export const MEASURABLE = 0.2;
/** Windows whose delivered bandwidth makes the reference (their median). */
export const BW_KEPT = 8;
/**
 * The bandwidth the copies got this much below the reference means another load on the disks.
 * Tighter than {@link BUSIER}: at a cap that binds the estimate holds within about 6% from window
 * to window on a quiet disk (bench row 8: 4,130 to 4,540 MB/s on 4,194), while a window straddling
 * a tenant's arrival measures only part of the loss (3,088 MB/s against 4,379 with half the disk
 * taken: the large moves that finish in it started before).
 */
export const BW_BUSIER = 0.25;
/** Finished moves kept per window for its medians (enough for stable ones, small in the checkpoint). */
const KEPT = 128;

/** The limiter's timing: from the plan's poll interval, and a minute at most. */
export interface AutoTiming {
  minWindowMs: number;
  maxWindowMs: number;
}

/** One judged window. */
export interface AutoSample {
  cap: number;
  /** Bytes of finished moves per second. */
  bytesPerSec: number;
  /** Finished moves per second (absent in a checkpoint from before it). */
  movesPerSec?: number;
  /** Milliseconds per byte, weighed by bytes (null: no finished move had a known size). */
  msPerByte: number | null;
  moves: number;
  /** How long the window lasted, ms (absent in a checkpoint from before it). */
  ms?: number;
  /**
   * The bandwidth the moves' copies got together, bytes per ms (null: not measured; absent in a
   * checkpoint from before it): see {@link deliveredBandwidth}.
   */
  bandwidth?: number | null;
}

/** The window being filled. */
export interface AutoWindow {
  from: number;
  moves: number;
  /** Bytes of every finished move of known size. */
  bytes: number;
  /** The last finished moves with a known size and duration: [bytes, ms]. */
  timed: Array<[number, number]>;
  /** Most moves seen in flight during the window (null: nobody said). */
  maxInFlight: number | null;
}

/** What the limiter keeps, in the checkpoint too (a resume goes on from it). */
export interface AutoState {
  cap: number;
  phase: 'start' | 'steady';
  window: AutoWindow;
  /** The current window follows a change (or a resume) and is not judged. */
  settling: boolean;
  last: AutoSample | null;
  /** Reference time per byte at this cap (null: not measured yet). */
  ref: number | null;
  /** Windows judged at this cap without a change. */
  held: number;
  /** The last knee found: the cap past which a raise gained nothing. */
  knee: number | null;
  /** Whether the cap is pinned by the operator (the limiter waits). */
  pinned: boolean;
  /**
   * The fit of the fixed part over every window closed so far: sums whose quotient `a / c` is the
   * common intercept (ms) of duration against bytes. Absent in a checkpoint from before it (0).
   */
  fit?: FixedFit;
  /**
   * The highest time per byte a slot (ms per byte over the cap) measured so far, and the cap of its
   * window: the slow start's reference for a busier instance, which does not depend on comparing
   * two caps' windows (null: none measured; absent in a checkpoint from before it).
   */
  peak?: AutoPeak | null;
  /**
   * The bandwidth the copies got in the last windows that measured it, with their time per byte a
   * slot: [bytes per ms, ms per byte over the cap], newest last, at most {@link BW_KEPT} (absent in a checkpoint from
   * before it). Their medians are the reference a busier disk falls below.
   */
  bw?: Array<[number, number]>;
  /**
   * The cap in force before the first cut for a busier instance, and the bandwidth the copies got
   * then (null or absent: no such cut, or none was measured before it): once the copies get about
   * that again, the other load has gone and the cap goes straight back.
   */
  busy?: AutoBusy | null;
}

/** See {@link AutoState.busy}. */
export interface AutoBusy {
  cap: number;
  /** Bytes per ms. */
  bandwidth: number;
}

/** A window's time per byte and its cap, the highest a slot so far (see {@link AutoState.peak}). */
export interface AutoPeak {
  msPerByte: number;
  cap: number;
}

/** Running sums of the fixed part's least-squares fit (see {@link fixedMs}). */
export interface FixedFit {
  a: number;
  c: number;
}

/**
 * What one decision call measured, for the debug log (`LOG_LEVEL=debug`): the window's figures,
 * how it was looked at (closed and judged, only settled, still open after a look at its gain, or a
 * peek for a busier disk), and its time per byte a slot against the peak's (null: either unknown).
 */
export interface AutoSeen extends AutoSample {
  how: 'closed' | 'settled' | 'open' | 'peek';
  slotVsPeak: number | null;
}

/** A decision: the cap, and why it changed (null: it did not). */
export interface AutoDecision {
  cap: number;
  reason: string | null;
}

function emptyWindow(from: number): AutoWindow {
  return { from, moves: 0, bytes: 0, timed: [], maxInFlight: null };
}

function clamp(cap: number, b: AutoBounds): number {
  return Math.max(b.min, Math.min(b.max, Math.round(cap)));
}

/** The state a limiter starts from: `min`, or the knee a checkpoint kept, within the bounds. */
export function startAuto(bounds: AutoBounds, now: number, knee: number | null = null): AutoState {
  return {
    cap: clamp(knee ?? bounds.min, bounds),
    phase: knee === null ? 'start' : 'steady',
    window: emptyWindow(now),
    settling: false,
    last: null,
    ref: null,
    held: 0,
    knee,
    pinned: false,
    fit: { a: 0, c: 0 },
    peak: null,
    bw: [],
    busy: null,
  };
}

/** A move finished: its bytes (null: unknown size) and how long it was seen in flight. */
export function observeMove(s: AutoState, bytes: number | null, durationMs: number | null): AutoState {
  const w = s.window;
  const sized = bytes !== null && bytes > 0;
  const timed: Array<[number, number]> =
    sized && durationMs !== null && durationMs >= 0 ? [...w.timed, [bytes, durationMs]] : w.timed;
  return {
    ...s,
    window: { ...w, moves: w.moves + 1, bytes: w.bytes + (sized ? bytes : 0), timed: timed.slice(-KEPT) },
  };
}

function median(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/**
 * Milliseconds per byte over the moves at least as large as the median one, each duration less
 * the fixed part `fixed` (null: none timed, or what is left of their durations is less than
 * {@link MEASURABLE} of them: moves that are nearly all fixed part, whose time per byte is the
 * noise of the polls that saw them end).
 */
function perByte(timed: ReadonlyArray<[number, number]>, fixed = 0): number | null {
  if (timed.length === 0) return null;
  const cut = median(timed.map((m) => m[0]));
  let bytes = 0;
  let ms = 0;
  let whole = 0;
  for (const [b, d] of timed)
    if (b >= cut) {
      bytes += b;
      ms += Math.max(0, d - fixed);
      whole += d;
    }
  if (!(bytes > 0) || !(ms > 0) || ms < whole * MEASURABLE) return null;
  return ms / bytes;
}

/**
 * Adds a window to the fixed part's fit. With durations d = F + slope_w * bytes in each window w
 * (one F for the run, one slope per window), the least-squares F is the sum over windows of
 * <r1, rd> over the sum of |r1|^2, where r1 and rd are the residuals of ones and of durations after
 * projecting out the window's bytes. A window of equal sizes adds nothing (its r1 is zero), nor
 * does one whose durations fall as bytes grow.
 */
export function addToFit(fit: FixedFit, timed: ReadonlyArray<[number, number]>): FixedFit {
  const n = timed.length;
  if (n < 2) return fit;
  let sb = 0;
  let sbb = 0;
  let sd = 0;
  let sbd = 0;
  for (const [b, d] of timed) {
    sb += b;
    sbb += b * b;
    sd += d;
    sbd += b * d;
  }
  if (!(sbb > 0)) return fit;
  // Durations that fall as bytes grow fit no fixed part plus a time per byte (a few tiny moves
  // that waited on something else): the window says nothing of it.
  if (n * sbd - sb * sd < 0) return fit;
  const c = n - (sb * sb) / sbb;
  // Equal sizes leave only rounding here: no information on the intercept.
  if (!(c > 1e-6 * n)) return fit;
  return { a: fit.a + sd - (sb * sbd) / sbb, c: fit.c + c };
}

/**
 * The fixed part (ms) for a window: the fit's intercept, at least 0 and at most the window's
 * shortest move (a move is never shorter than its fixed part); 0 until a fit has information.
 */
export function fixedMs(fit: FixedFit | undefined, timed: ReadonlyArray<[number, number]>): number {
  if (!fit || !(fit.c > 0) || timed.length === 0) return 0;
  const shortest = Math.min(...timed.map((m) => m[1]));
  return Math.max(0, Math.min(shortest, fit.a / fit.c));
}

/**
 * Whether the window has enough to be judged. The slow start's first window and its settling
 * windows (`quick`) close after `minWindowMs` and one finished move: the first only needs the cap
 * to bind to double it, and a settling one is judged only if it already shows the raise's gain.
 */
function closes(w: AutoWindow, now: number, t: AutoTiming, quick = false): boolean {
  const elapsed = now - w.from;
  if (quick) return w.moves >= 1 && elapsed >= t.minWindowMs;
  if (w.moves >= MIN_MOVES && elapsed >= Math.max(t.minWindowMs, median(w.timed.map((m) => m[1])))) return true;
  return w.moves >= 1 && elapsed >= t.maxWindowMs;
}

/** Bytes per second, for people. */
export function formatRate(bytesPerSec: number): string {
  const mb = bytesPerSec / 1e6;
  return mb >= 10
    ? `${Math.round(mb)} MB/s`
    : mb >= 0.1
      ? `${mb.toFixed(1)} MB/s`
      : `${Math.round(bytesPerSec / 1e3)} kB/s`;
}

function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}

/** What one decision call is told besides the state. */
export interface AutoInput {
  now: number;
  bounds: AutoBounds;
  timing: AutoTiming;
  /** Moves in flight now (undefined: unknown, the cap counts as binding). */
  inFlight?: number;
  /** The operator's cap pinned live (`shardmove control --concurrency N`), or null. */
  pinned: number | null;
}

/**
 * Closes the window when it is due and decides: the new state, and the cap with the reason it
 * changed. At most one change per window; between windows the cap holds.
 */
export function decideAuto(
  state: AutoState,
  input: AutoInput,
): { state: AutoState; decision: AutoDecision; seen?: AutoSeen } {
  const { now, bounds, timing } = input;
  if (input.pinned !== null) {
    // The operator holds the cap: nothing measured meanwhile speaks for the limiter's own cap.
    if (state.pinned) return { state, decision: { cap: input.pinned, reason: null } };
    const s = { ...state, pinned: true, window: emptyWindow(now), settling: false };
    return { state: s, decision: { cap: input.pinned, reason: null } };
  }
  let s = state;
  if (s.pinned) {
    s = { ...s, pinned: false, window: emptyWindow(now), settling: true, last: null, ref: null, held: 0 };
    return { state: s, decision: { cap: s.cap, reason: `auto: the limiter decides again from ${s.cap}` } };
  }
  // Bounds may change between runs (the plan edited before a resume): the cap stays inside them.
  const bounded = clamp(s.cap, bounds);
  if (bounded !== s.cap) {
    s = restart({ ...s, cap: bounded }, now);
    return { state: s, decision: { cap: bounded, reason: `auto: within min ${bounds.min} and max ${bounds.max}` } };
  }
  if (input.inFlight !== undefined) {
    const m = s.window.maxInFlight;
    s = { ...s, window: { ...s.window, maxInFlight: Math.max(m ?? 0, input.inFlight) } };
  }
  const w = s.window;
  // The slow start's first window (nothing to compare yet) closes early; its settling ones may be
  // judged early (below), and otherwise close as a full window does.
  const first = s.phase === 'start' && !s.settling && s.last === null;
  const early = s.phase === 'start' && s.settling && s.last !== null;
  const full = closes(w, now, timing);
  // A full window is looked at before it closes too, for a busier disk only: at a cap just doubled
  // its moves are long, so a load that arrived with it would otherwise be seen only after a whole
  // generation of them (often after the load left).
  const peek = !s.settling && !first && !full && w.moves >= MIN_MOVES && closes(w, now, timing, true);
  if (!full && !peek && !((first || early) && closes(w, now, timing, true)))
    return { state: s, decision: { cap: s.cap, reason: null } };
  // Every window tells of the fixed part, a settling one too: it does not depend on the cap.
  const fit = addToFit(s.fit ?? { a: 0, c: 0 }, w.timed);
  const fixed = fixedMs(fit, w.timed);
  const msPerByte = perByte(w.timed, fixed);
  const binding = w.maxInFlight === null || w.maxInFlight >= s.cap;
  const sample: AutoSample = {
    cap: s.cap,
    bytesPerSec: (w.bytes * 1000) / Math.max(1, now - w.from),
    movesPerSec: (w.moves * 1000) / Math.max(1, now - w.from),
    msPerByte,
    moves: w.moves,
    ms: now - w.from,
    // A settling window ran partly at the cap before the change, so the cap in force is not how
    // many of its moves copied at once: it measures no bandwidth.
    bandwidth: binding && !s.settling ? deliveredBandwidth(w.timed, fixed, s.cap, msPerByte) : null,
  };
  // In the slow start every window, a settling one too, is held against the highest time per byte
  // a slot seen at any cap: a busier disk shows there though each raise still gains.
  const busier = (s.phase === 'start' ? busierThanPeak(s, sample, bounds) : null) ?? busierBandwidth(s, sample, bounds);
  const peakSlot = s.peak ? perSlot(s.peak) : null;
  const nowSlot = perSlot(sample);
  const see = (how: AutoSeen['how']): AutoSeen => ({
    ...sample,
    how,
    slotVsPeak: peakSlot !== null && nowSlot !== null && peakSlot > 0 ? nowSlot / peakSlot : null,
  });
  // A peek only cuts: without a busier disk the window stays open, its moves and fit untouched.
  if (peek && !busier) return { state: s, decision: { cap: s.cap, reason: null }, seen: see('peek') };
  // A settling window of the slow start that already gained over the window before the raise is
  // judged at once: the moves started under the old cap only held the gain down, so the raise
  // paid. It stays open for that gain as long as the window before the raise lasted (or a full
  // window, if sooner); then it only settles, and the next (full) window judges the raise.
  const gained = early && binding && gainedOver(s.last as AutoSample, sample);
  const waited = now - w.from >= Math.max(timing.minWindowMs, s.last?.ms ?? 0);
  if (early && !full && !waited && !gained && !busier)
    return { state: s, decision: { cap: s.cap, reason: null }, seen: see('open') };
  s = { ...s, fit };
  if (busier) {
    // The bandwidth the busier instance gives is the reference from here: a lower cap does not
    // give the disks back, so against the old one every window would cut again, down to min.
    const after: AutoState = {
      ...s,
      cap: busier.cap,
      phase: 'steady',
      last: sample,
      ref: null,
      held: 0,
      window: emptyWindow(now),
      settling: true,
      bw: bwEntry(sample),
      busy: s.busy ?? busyBefore(s),
    };
    return { state: after, decision: { cap: busier.cap, reason: busier.reason }, seen: see(peek ? 'peek' : 'closed') };
  }
  const bwBefore = bandwidthRef(s.bw ?? []);
  s = { ...s, peak: nextPeak(s.peak ?? null, sample), bw: nextBandwidths(s.bw ?? [], sample) };
  if (s.settling && !gained) {
    s = { ...s, settling: false, window: emptyWindow(now) };
    return { state: s, decision: { cap: s.cap, reason: null }, seen: see('settled') };
  }
  const back = binding ? recovered(s, sample, bounds, bwBefore?.bandwidth ?? null) : null;
  if (back && back.cap > s.cap) {
    // Without a knee found the load only interrupted the slow start: it goes on doubling.
    const phase = s.knee === null ? 'start' : s.phase;
    const after: AutoState = {
      ...s,
      cap: back.cap,
      phase,
      last: sample,
      ref: null,
      held: 0,
      settling: true,
      busy: null,
    };
    return { state: { ...after, window: emptyWindow(now) }, decision: back, seen: see('closed') };
  }
  // The cap already came back on its own: the mark goes, and the window is judged as any other.
  if (back) s = { ...s, busy: null };
  const next = judge(s, sample, bounds, binding);
  const ref =
    next.cap !== s.cap
      ? null
      : s.ref === null || sample.msPerByte === null
        ? (sample.msPerByte ?? s.ref)
        : Math.min(s.ref * (1 + AGE), sample.msPerByte);
  const changed = next.cap !== s.cap;
  const after: AutoState = {
    ...s,
    cap: next.cap,
    phase: next.phase,
    knee: next.knee,
    last: sample,
    ref,
    held: changed ? 0 : s.held + 1,
    window: emptyWindow(now),
    settling: changed,
    // After a cut the bandwidth measured here is the reference: whatever lowered the cap (a knee,
    // moves slower at a cap held), the old windows' bandwidth is not what the lower cap will get.
    ...(next.cap < s.cap ? { bw: bwEntry(sample) } : {}),
    // A cut that keeps the knee is a busier instance, not a knee: the cap before it comes back with
    // the bandwidth.
    ...(next.cap < s.cap && next.knee === s.knee ? { busy: s.busy ?? busyBefore(s) } : {}),
  };
  return { state: after, decision: { cap: after.cap, reason: changed ? next.reason : null }, seen: see('closed') };
}

/** Ms per byte a slot: the window's time per byte over its cap (null: none measured). */
function perSlot(x: { msPerByte: number | null; cap: number }): number | null {
  return x.msPerByte === null || !(x.cap > 0) ? null : x.msPerByte / x.cap;
}

/**
 * The peak after a window: the higher of the two a slot, except that a window more than
 * {@link SLOWER} above the peak does not raise it (a load arriving is not the disk's own pace),
 * and a window of fewer than {@link MIN_MOVES} finished moves does not set it.
 */
function nextPeak(peak: AutoPeak | null, x: AutoSample): AutoPeak | null {
  const now = perSlot(x);
  // A window of fewer than MIN_MOVES moves (the slow start's quick ones: one move, often measured
  // before any fixed part was fitted) would set a peak no later window reaches: bench row 8's
  // first window, one move at 2, stood at 2 to 4 times what the disk gave a slot at any cap.
  if (now === null || x.moves < MIN_MOVES) return peak;
  const before = peak === null ? null : perSlot(peak);
  if (before === null) return { msPerByte: x.msPerByte as number, cap: x.cap };
  if (now <= before || now > before * (1 + SLOWER)) return peak;
  return { msPerByte: x.msPerByte as number, cap: x.cap };
}

/**
 * The slow start's busier instance, seen without comparing two caps' windows: moves that share a
 * disk take longer per byte the more of them run (at most in proportion to the cap, when every
 * slot copies at once), so a time per byte a slot more than {@link BUSIER} above the highest seen
 * at any cap is another load on the disk. A quarter off the cap in force, no knee kept; null when
 * nothing says so or the cap is at `min` already.
 */
function busierThanPeak(s: AutoState, x: AutoSample, bounds: AutoBounds): { cap: number; reason: string } | null {
  const p = s.peak ?? null;
  const now = perSlot(x);
  const ref = p === null ? null : perSlot(p);
  if (p === null || now === null || ref === null || !(ref > 0) || now <= ref * (1 + BUSIER)) return null;
  const cap = clamp(Math.floor(s.cap * DECREASE), bounds);
  if (cap >= s.cap) return null;
  const slower = (x.msPerByte as number) / p.msPerByte;
  const byCap = x.cap / p.cap;
  const explains = x.cap === p.cap ? 'the same cap' : `the cap explains ${+byCap.toFixed(2)}x`;
  return {
    cap,
    reason: `auto: moves ${slower.toFixed(1)}x slower per byte at ${x.cap} than at ${p.cap} (${explains}): the instance got busier; lowered to ${cap}`,
  };
}

/**
 * The bandwidth the copies of a window got together (bytes per ms), BBR's bottleneck bandwidth as
 * the moves show it: each copy runs at its share of what the disks give, about the time per byte
 * of the larger moves (`msPerByte`, fixed part left out) over the copies running at once, and the
 * copies running at once are the cap (it binds) times the share of the moves' time spent copying
 * rather than in their fixed part. Unlike the time per byte a slot, it does not fall when many
 * slots sit in fixed parts (a high cap, small moves): on the sandbox's disk model it stays near the
 * busier disk's bandwidth at any cap that keeps the disk busy (row 8: 3,600 to 4,400 MB/s at cap 32
 * on a 4,194 MB/s disk, 2,000 to 2,600 while another tenant took half). Null with fewer than
 * {@link MIN_MOVES} timed moves or no time per byte.
 */
export function deliveredBandwidth(
  timed: ReadonlyArray<[number, number]>,
  fixed: number,
  cap: number,
  msPerByte: number | null,
): number | null {
  if (timed.length < MIN_MOVES || msPerByte === null || !(msPerByte > 0) || !(cap > 0)) return null;
  let copying = 0;
  let whole = 0;
  for (const [, d] of timed) {
    copying += Math.max(0, d - fixed);
    whole += d;
  }
  if (!(whole > 0) || !(copying > 0)) return null;
  return (cap * (copying / whole)) / msPerByte;
}

/** A window's entry in {@link AutoState.bw}: none, or its bandwidth and time per byte a slot. */
function bwEntry(x: AutoSample): Array<[number, number]> {
  const slot = perSlot(x);
  return x.bandwidth == null || slot === null ? [] : [[x.bandwidth, slot]];
}

/**
 * The medians of the kept bandwidths and their times per byte (null before a window measured one).
 * One window is enough: the slow start judges most of its windows early, as they settle, and those
 * measure none, so a second would often come only after the ramp.
 */
function bandwidthRef(bw: ReadonlyArray<[number, number]>): { bandwidth: number; perSlot: number } | null {
  if (bw.length === 0) return null;
  return { bandwidth: median(bw.map((e) => e[0])), perSlot: median(bw.map((e) => e[1])) };
}

/**
 * Whether a window's copies got more than {@link BW_BUSIER} less bandwidth than the reference,
 * each slower per byte than the cap explains (its time per byte a slot more than {@link GAIN}
 * above theirs: a higher cap makes each copy slower by as much as it adds copies, no more).
 */
function lessBandwidth(x: AutoSample, ref: { bandwidth: number; perSlot: number } | null): boolean {
  const b = x.bandwidth ?? null;
  const slot = perSlot(x);
  if (b === null || slot === null || ref === null || !(ref.bandwidth > 0)) return false;
  return b < ref.bandwidth * (1 - BW_BUSIER) && slot > ref.perSlot * (1 + GAIN);
}

/** The kept bandwidths after a window: its own added unless it showed a busier disk. */
function nextBandwidths(bw: ReadonlyArray<[number, number]>, x: AutoSample): Array<[number, number]> {
  if (lessBandwidth(x, bandwidthRef(bw))) return [...bw];
  return [...bw, ...bwEntry(x)].slice(-BW_KEPT);
}

/**
 * A busier disk in any phase: the copies together got more than {@link BW_BUSIER} less bandwidth than
 * the median of the last windows at a cap that binds, and each copy was slower per byte than the cap
 * explains (see {@link lessBandwidth}). The cap in force cannot explain it: with fewer copies at once (a lower cap, smaller moves spending more of
 * their time in fixed parts) the disks give each the more, and a copy limited by something of its
 * own (a single stream's pace) is no slower per byte for it; only another load on the disks makes
 * every copy slower and all of them together get less. A quarter off the cap, no knee kept. Null
 * when nothing says so or the cap is at `min` already.
 */
function busierBandwidth(s: AutoState, x: AutoSample, bounds: AutoBounds): { cap: number; reason: string } | null {
  const ref = bandwidthRef(s.bw ?? []);
  if (ref === null || !lessBandwidth(x, ref)) return null;
  const b = x.bandwidth as number;
  const cap = clamp(Math.floor(s.cap * DECREASE), bounds);
  if (cap >= s.cap) return null;
  return {
    cap,
    reason: `auto: the copies got ${pct(1 - b / ref.bandwidth)} less bandwidth at ${s.cap} (${formatRate(b * 1000)} against ${formatRate(ref.bandwidth * 1000)}), each slower per byte than the cap explains: the instance got busier; lowered to ${cap}`,
  };
}

/** What a cut for a busier instance keeps of before it: the cap and the reference bandwidth (null: none). */
function busyBefore(s: AutoState): AutoBusy | null {
  const ref = bandwidthRef(s.bw ?? []);
  return ref === null ? null : { cap: s.cap, bandwidth: ref.bandwidth };
}

/**
 * After a cut for a busier instance: a window whose copies got within half of {@link BW_BUSIER}
 * of the bandwidth before it, and more than {@link BW_BUSIER} above what they got since (`since`:
 * the reference of the windows after the cut), says the other load has gone, and the cap goes
 * back to where it was at once rather than a quarter at a time. The second condition matters when
 * the bandwidth before came from low caps that did not keep the disks busy: the busier disk at a
 * higher cap can give as much. Returns that cap and why (the caller drops the mark when the cap is
 * already there), or null.
 */
function recovered(
  s: AutoState,
  x: AutoSample,
  bounds: AutoBounds,
  since: number | null,
): { cap: number; reason: string } | null {
  const busy = s.busy ?? null;
  const b = x.bandwidth ?? null;
  if (busy === null || b === null || b < busy.bandwidth * (1 - BW_BUSIER / 2)) return null;
  if (since !== null && b <= since * (1 + BW_BUSIER)) return null;
  const cap = clamp(busy.cap, bounds);
  return {
    cap,
    reason: `auto: the copies get ${formatRate(b * 1000)} again (${formatRate(busy.bandwidth * 1000)} before the other load): back to ${cap}`,
  };
}

function restart(s: AutoState, now: number): AutoState {
  return { ...s, window: emptyWindow(now), settling: true, last: null, ref: null, held: 0 };
}

interface Judged {
  cap: number;
  phase: AutoState['phase'];
  knee: number | null;
  reason: string;
}

/** Whether a window finished more bytes or more moves a second than the one before, by {@link GAIN}. */
function gainedOver(l: AutoSample, x: AutoSample): boolean {
  if (x.bytesPerSec > l.bytesPerSec * (1 + GAIN)) return true;
  return x.movesPerSec !== undefined && l.movesPerSec !== undefined && x.movesPerSec > l.movesPerSec * (1 + GAIN);
}

/** One judged window against the one before it. */
function judge(s: AutoState, x: AutoSample, bounds: AutoBounds, binding: boolean): Judged {
  const l = s.last;
  const keep: Judged = { cap: s.cap, phase: s.phase, knee: s.knee, reason: '' };
  const step = (cap: number) => (s.phase === 'start' ? cap * 2 : cap + Math.max(1, Math.floor(cap / 4)));
  const raise = (why: string): Judged => {
    if (!binding || s.cap >= bounds.max) return keep;
    const cap = clamp(step(s.cap), bounds);
    return { ...keep, cap, reason: `auto: ${why}; trying ${cap}` };
  };
  // The first window of a slow start raises at once; one from a knee only measures the reference.
  if (l === null) return s.phase === 'start' ? raise(`${formatRate(x.bytesPerSec)} at ${s.cap}`) : keep;
  const bytesUp = x.bytesPerSec > l.bytesPerSec * (1 + GAIN);
  // Largest first, the bytes of each finished move fall as the run goes on: more moves finishing
  // a second is a gain too, though their bytes per second stayed flat.
  const movesUp =
    x.movesPerSec !== undefined && l.movesPerSec !== undefined && x.movesPerSec > l.movesPerSec * (1 + GAIN);
  const gained = bytesUp || movesUp;
  if (x.cap > l.cap) {
    if (bytesUp)
      return raise(
        `throughput up ${pct(x.bytesPerSec / l.bytesPerSec - 1)} at ${x.cap} (${formatRate(x.bytesPerSec)})`,
      );
    if (movesUp)
      return raise(
        `moves finishing up ${pct((x.movesPerSec as number) / (l.movesPerSec as number) - 1)} at ${x.cap} (${(x.movesPerSec as number).toFixed(1)}/s)`,
      );
    const timed = x.msPerByte !== null && l.msPerByte !== null;
    const slower = timed && (x.msPerByte as number) > (l.msPerByte as number) * (1 + GAIN);
    // Flat, but no slower per byte: the moves got smaller (largest first), not the instance busier.
    if (timed && !slower) return keep;
    // In the slow start, a raise after which fewer bytes and no more moves finish, each slower per
    // byte, is not a knee (at a knee throughput stays flat): the instance got busier. A quarter
    // off the cap in force, no knee kept; the time per byte measured there is the reference whose
    // fall (the other load gone) raises the cap again.
    const fell =
      x.bytesPerSec < l.bytesPerSec * (1 - GAIN) &&
      !(x.movesPerSec !== undefined && l.movesPerSec !== undefined && x.movesPerSec > l.movesPerSec);
    if (s.phase === 'start' && slower && fell) {
      const cap = clamp(Math.floor(x.cap * DECREASE), bounds);
      const ratio = (x.msPerByte as number) / (l.msPerByte as number);
      return {
        cap,
        phase: 'steady',
        knee: s.knee,
        reason: `auto: throughput down ${pct(1 - x.bytesPerSec / l.bytesPerSec)} at ${x.cap} (${formatRate(x.bytesPerSec)}), moves ${ratio.toFixed(1)}x slower per byte: the instance got busier; lowered to ${cap}`,
      };
    }
    const cap = clamp(l.cap, bounds);
    return {
      cap,
      phase: 'steady',
      knee: cap,
      reason: `auto: throughput flat at ${l.cap}, ${x.cap} ${slower ? 'moved slower' : 'gained nothing'}`,
    };
  }
  if (s.ref !== null && s.ref > 0 && x.msPerByte !== null) {
    const ratio = x.msPerByte / s.ref;
    // Only while the cap binds: at the run's tail fewer moves run than it allows, a lower cap
    // changes nothing, and their time per byte is the last, smallest moves', not a busier disk.
    if (ratio > 1 + SLOWER && !gained && binding) {
      const cap = clamp(Math.floor(s.cap * DECREASE), bounds);
      if (cap === s.cap) return keep;
      return {
        ...keep,
        cap,
        phase: 'steady',
        reason: `auto: moves ${ratio.toFixed(1)}x slower per byte at ${s.cap} with no throughput gained (${formatRate(x.bytesPerSec)}); lowered to ${cap}`,
      };
    }
    if (ratio < 1 - SLOWER) return raise(`moves ${pct(1 - ratio)} faster per byte at ${s.cap}`);
  }
  // In the slow start, a raise kept without a gain (the moves got smaller) is followed by the next
  // one a window later: nothing has shown a knee yet.
  const after = s.phase === 'start' ? 1 : PROBE_AFTER;
  if (s.held + 1 >= after) {
    const n = s.held + 1;
    return raise(`probing after ${n} window${n === 1 ? '' : 's'} held at ${s.cap} (${formatRate(x.bytesPerSec)})`);
  }
  return keep;
}
