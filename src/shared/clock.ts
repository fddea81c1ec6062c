/**
 * Injected time, on the floor under both sides: the orchestrator (its retry backoff, leases,
 * tickers, the run's clock) and the sandbox (move durations, token expiry, fault latency) share one
 * definition, so a test can run both on one simulated clock. Decisions never read Date.now()
 * directly and effects never start a real timer themselves: the runtime injects `systemClock`,
 * tests inject a clock they move by hand (test/support/fake-clock.ts), and every wait of the
 * process (sleeps, timeouts, intervals) follows it.
 */

/**
 * A pending timer. On the real clock it is Node's own handle; `unref()` lets the process exit while
 * the timer is still pending, as Node's does (a fake clock keeps no process alive and ignores it).
 */
export interface Timer {
  unref(): Timer;
  ref(): Timer;
  hasRef(): boolean;
}

/** Wall time, an abortable sleep and the timers, all on one time line. */
export interface Clock {
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when aborted. Built on `setTimeout`. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fn` once, `ms` from now (at once for a negative or zero `ms`). */
  setTimeout(fn: () => void, ms: number): Timer;
  /** Cancels a pending timeout; a fired, cleared or absent one is ignored. */
  clearTimeout(timer: Timer | null | undefined): void;
  /** Calls `fn` every `ms` (at least 1 ms) until cleared. */
  setInterval(fn: () => void, ms: number): Timer;
  clearInterval(timer: Timer | null | undefined): void;
}

/**
 * An abortable sleep on a clock's own `setTimeout`, the one sleep of every clock: a sleep and a
 * timer set for the same instant fire in the order they were made, on any clock.
 */
export function sleepOn(
  timers: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      timers.clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = timers.setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The real clock: wall time and Node's timers. The one place in src/ that starts them. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleepOn(systemClock, ms, signal),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, Math.max(0, ms)),
  clearTimeout: (timer) => globalThis.clearTimeout((timer ?? undefined) as NodeJS.Timeout | undefined),
  setInterval: (fn, ms) => globalThis.setInterval(fn, Math.max(1, ms)),
  clearInterval: (timer) => globalThis.clearInterval((timer ?? undefined) as NodeJS.Timeout | undefined),
};
