/**
 * The tests' clock (xstate's SimulatedClock, Temporal's time skipping): wall time, sleeps and every
 * timer on one simulated time line that moves only when the test, or a sleep, moves it.
 *
 * - Timers fire in time order; timers due at the same instant fire in the order they were made
 *   (an interval keeps its place: it is the timer made when it was set).
 * - `advance(ms)` fires every timer due by then at once, each with `now()` at its due time;
 *   `advanceAsync(ms)` / `advanceTo(t)` let the promise continuations of one fire run before the next.
 * - `sleep` is a timer like any other. With `autoAdvance` (the default, for the drain's unit tests)
 *   a sleep also moves time to its own end once the work already queued has run, so the code
 *   under test never waits: it happens at the instant it was started, as against a fast instance.
 *   Without it, only the test moves time (`{ autoAdvance: false }`).
 */
import { sleepOn, systemClock } from '../../src/shared/clock.js';
import type { Clock, Timer } from '../../src/shared/clock.js';

/** Lets the work already queued run: promise continuations and what they start within a turn. */
const turn = () => new Promise<void>((r) => setImmediate(r));

class FakeTimer implements Timer {
  private referenced = true;
  constructor(
    readonly seq: number,
    public due: number,
    readonly fn: () => void,
    readonly every: number | null,
  ) {}
  unref(): Timer {
    this.referenced = false;
    return this;
  }
  ref(): Timer {
    this.referenced = true;
    return this;
  }
  hasRef(): boolean {
    return this.referenced;
  }
}

export interface FakeClockOptions {
  /** A sleep moves time to its own end by itself (default true). */
  autoAdvance?: boolean;
}

export class FakeClock implements Clock {
  private readonly pending: FakeTimer[] = [];
  private seq = 0;
  /**
   * Whether a sleep moves time to its end by itself. A test may turn it off for a while to look at
   * the code under test while it waits (a sleep begun meanwhile waits for `advance`).
   */
  autoAdvance: boolean;

  constructor(
    public t = 1_700_000_000_000,
    options: FakeClockOptions = {},
  ) {
    this.autoAdvance = options.autoAdvance ?? true;
  }

  now(): number {
    return this.t;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    const made = this.seq;
    const done = sleepOn(this, ms, signal);
    // The sleep's own timer, unless the signal was aborted already and none was made.
    const timer = this.seq > made ? this.pending.at(-1) : undefined;
    if (!this.autoAdvance || !timer) return done;
    // Aborted during the turn below, `done` rejects before it is returned: the caller handles it.
    done.catch(() => undefined);
    await turn();
    if (this.pending.includes(timer)) this.fireUntil(timer.due);
    return done;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    return this.add(fn, Math.max(0, ms), null);
  }

  setInterval(fn: () => void, ms: number): Timer {
    const every = Math.max(1, ms);
    return this.add(fn, every, every);
  }

  clearTimeout(timer: Timer | null | undefined): void {
    const i = this.pending.indexOf(timer as FakeTimer);
    if (i >= 0) this.pending.splice(i, 1);
  }

  clearInterval(timer: Timer | null | undefined): void {
    this.clearTimeout(timer);
  }

  /** How many timers (sleeps included) are pending. */
  get timerCount(): number {
    return this.pending.length;
  }

  /** When the next timer is due, or null when none is pending. */
  nextDue(): number | null {
    return this.next()?.due ?? null;
  }

  /**
   * Moves time `ms` forward at once, firing every timer due by then in order (sinon's `tick`): the
   * callbacks run now, their promise continuations after this returns.
   */
  advance(ms: number): void {
    this.fireUntil(this.t + Math.max(0, ms));
  }

  /**
   * Moves time `ms` forward, firing every timer due by then in order and letting the work each one
   * starts run before the next fires (sinon's `tickAsync`).
   */
  advanceAsync(ms: number): Promise<void> {
    return this.advanceTo(this.t + Math.max(0, ms));
  }

  /** Moves time to `target` (never back) as `advanceAsync` does. */
  async advanceTo(target: number): Promise<void> {
    await turn();
    for (let timer = this.next(); timer && timer.due <= target; timer = this.next()) {
      this.fire(timer);
      await turn();
    }
    this.t = Math.max(this.t, target);
  }

  /** Fires timers in order, as `advanceAsync`, until none is pending or `limit` fired (an interval never runs out). */
  async runAll(limit = 10_000): Promise<void> {
    await turn();
    for (let n = 0, timer = this.next(); timer && n < limit; n++, timer = this.next()) {
      this.fire(timer);
      await turn();
    }
  }

  private fireUntil(target: number): void {
    for (let timer = this.next(); timer && timer.due <= target; timer = this.next()) this.fire(timer);
    this.t = Math.max(this.t, target);
  }

  private add(fn: () => void, ms: number, every: number | null): FakeTimer {
    const timer = new FakeTimer(this.seq++, this.t + ms, fn, every);
    this.pending.push(timer);
    return timer;
  }

  private next(): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const timer of this.pending)
      if (!best || timer.due < best.due || (timer.due === best.due && timer.seq < best.seq)) best = timer;
    return best;
  }

  private fire(timer: FakeTimer): void {
    this.t = Math.max(this.t, timer.due);
    if (timer.every === null) this.clearTimeout(timer);
    else timer.due += timer.every;
    timer.fn();
  }
}

/**
 * A clock whose wall time is `now` and whose timers are real: for tests that move the wall time by
 * hand (or shift it) and wake the code themselves, as the sandbox's tests that call `engine.kick()`.
 */
export const realTimersAt = (now: () => number): Clock => ({ ...systemClock, now });
