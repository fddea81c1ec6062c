/**
 * A listing of one (kind, source) running beside the drain loop, so that moves start with the first
 * page instead of after the last, and a verification re-list does not idle the slots.
 */
import type { DrainCtx } from './context.js';
import { enumerateRound } from './enumerate.js';

/** An enumeration round running in the background. */
export interface Listing {
  readonly done: boolean;
  /** Resolves when the next page is committed or the listing ends. */
  nextPage(): Promise<void>;
  /** Throws the listing's error, if it failed. */
  check(): void;
  /** Stops the listing at its next page and waits for it. */
  stop(): Promise<void>;
}

/** Lists (kind, source) in the background: the open round, or round `next` when given. */
export function startListing(ctx: DrainCtx, next?: number): Listing {
  let done = false;
  let error: { err: unknown } | null = null;
  let stopping = false;
  let wake: (() => void) | null = null;
  const poke = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const run = enumerateRound(ctx, next, { onPage: poke, stop: () => stopping }).then(
    () => undefined,
    (err: unknown) => {
      error = { err };
    },
  );
  void run.finally(() => {
    done = true;
    poke();
  });
  return {
    get done() {
      return done;
    },
    nextPage: () => (done ? Promise.resolve() : new Promise<void>((r) => (wake = r))),
    check() {
      if (error) throw error.err;
    },
    async stop() {
      stopping = true;
      await run;
    },
  };
}
