/** What a drain step returns, and how many times it may go round before it gives up on the rest. */
import type { DrainOutput } from '../../machine/types.js';
import type { DrainCtx } from './context.js';
import { boundReached } from './until.js';

/** Enumeration rounds (or sweeps, or rechecks) after the first: each one re-checks the source after moves ended. */
export const MAX_EXTRA_ROUNDS = 5;

/** The drain's counts from the checkpoint. */
export function drainResult(ctx: DrainCtx): DrainOutput {
  const c = ctx.store.countStates(ctx.kind, ctx.source);
  const out: DrainOutput = {
    moved: c.moved + c.left,
    quarantined: c.quarantined,
    remaining: c.pending + c.scheduling + c.in_flight,
  };
  if (!boundReached(ctx)) return out;
  // A reached `move.until` bound: what was never placed stays on the source, as the plan asked.
  const kept = ctx.store.countUnplaced(ctx.kind, ctx.source);
  return { ...out, remaining: out.remaining - kept, kept };
}
