/**
 * Injected time, at the bottom of the import graph so the HTTP client (its retry backoff) and the
 * runtime (the run's clock) share one definition. Decisions never read Date.now() directly: the
 * runtime injects `systemClock`, tests inject a clock they move by hand.
 */

/** Wall time and an abortable sleep. */
export interface Clock {
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock: wall time and a timer-based sleep. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};
