/**
 * A dry run's drain: read-only on the instance. It enumerates, records what would be scheduled and
 * where each item would go, and estimates the requests; a `records` kind only says what would be done.
 */
import { concurrencyCeiling } from '../../plan/concurrency-field.js';
import type { DrainOutput } from '../../machine/types.js';
import { runCensus } from './census.js';
import { event } from './context.js';
import type { DrainCtx } from './context.js';
import { enumerateRound } from './enumerate.js';
import { drainResult } from './result.js';
import { dryRunUnreachable } from './unreachable.js';
import { planPlacement, planPlacementTogether } from './until.js';

/** Dry run: enumerate (read-only on the instance), record what would be scheduled, estimate. */
export async function dryRun(ctx: DrainCtx): Promise<DrainOutput> {
  const cur = ctx.store.getCursor(ctx.kind, ctx.source);
  await enumerateRound(ctx, cur?.done ? cur.round + 1 : undefined);
  // Which projects are hidden or pending deletion: the listing above cannot tell (`shardmove twin`).
  await runCensus(ctx);
  // Where each item would go, and where a partial drain (`move.until`) would stop: recorded in the
  // dry run's own checkpoint, which no real run can resume, for its report and `status`.
  planPlacement(ctx);
  return dryRunResult(ctx);
}

/**
 * The one schedule's dry run (`move.order: together`): every pair listed and counted as above, then
 * placed in the one order the run would take them (./until.ts, planPlacementTogether).
 */
export async function dryRunTogether(ctxs: readonly DrainCtx[]): Promise<DrainOutput[]> {
  for (const ctx of ctxs) {
    const cur = ctx.store.getCursor(ctx.kind, ctx.source);
    await enumerateRound(ctx, cur?.done ? cur.round + 1 : undefined);
    await runCensus(ctx);
  }
  planPlacementTogether(ctxs);
  return ctxs.map(dryRunResult);
}

/** What a dry run of one pair says, as an event, in the log and as its result. */
function dryRunResult(ctx: DrainCtx): DrainOutput {
  const res = dryRunUnreachable(ctx, drainResult(ctx));
  const concurrency = ctx.deps.dryRunCap ?? concurrencyCeiling(ctx.deps.plan.move.concurrency);
  event(ctx, 'drain.dry_run', {
    wouldSchedule: res.remaining,
    concurrency,
    // One POST per item plus about one move-list page per poll and one listing page per 100 items.
    estimatedRequests: Math.ceil(res.remaining * 1.1 + res.remaining / 50),
  });
  ctx.deps.log.info(
    { kind: ctx.kind, source: ctx.source, wouldSchedule: res.remaining },
    'dry run: items that would be moved',
  );
  return res;
}

/** Dry run of a `records` kind: nothing can be listed, so say what would be done and why. */
export function dryRunByRecords(ctx: DrainCtx): DrainOutput {
  event(ctx, 'drain.dry_run', { wouldSchedule: null, by: 'records', bulkPosts: 1 });
  ctx.deps.log.info(
    { kind: ctx.kind, source: ctx.source },
    'dry run: the instance does not expose the storage of this kind; one bulk move per source would move them, their number is unknown',
  );
  return { moved: 0, quarantined: 0, remaining: 0, byRecords: true };
}
