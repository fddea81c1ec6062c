/**
 * The drain step for one (source, kind), or for every pair at once (./together.ts): enumerate into the checkpoint, move every item with at
 * most `plan.move.concurrency` moves in flight across the run (or the operator's live override,
 * none while paused), re-enumerate the source to verify independently, and repeat (bounded) until
 * only quarantined items remain. Bulk mode starts with one bulk POST (./bulk.ts) and then finishes
 * the same way; a kind whose storage is not exposed goes by move records (./records.ts), a revert's
 * given items one by one (./given.ts), a dry run only reads (./dry-run.ts). The moving itself is the
 * loop of ./loop.ts. Every step is safe to repeat after a kill: all progress lives in the checkpoint.
 */
import type { DrainInput, DrainOutput } from '../../machine/types.js';
import type { ActorDeps } from '../types.js';
import { runBulkPhase } from './bulk.js';
import { createDrainCtx, event, waitWhilePaused } from './context.js';
import { dryRun, dryRunByRecords } from './dry-run.js';
import { enumerateRound } from './enumerate.js';
import { drainGiven } from './given.js';
import { moveItems } from './loop.js';
import { preparePlacement } from './placement.js';
import { recheckStuck, trackedKinds } from './poll.js';
import { reconcileScheduling } from './reconcile.js';
import { runTogether } from './together.js';
import { drainByRecords } from './records.js';
import { withUnreachable } from './unreachable.js';
import { moveUnreachableByBulk } from './unreachable-bulk.js';
import { MAX_EXTRA_ROUNDS, drainResult } from './result.js';
import { boundReached, nextDueAt } from './until.js';
import type { DrainStore } from '../../store/views.js';

/**
 * Drains one kind off one source storage (throttled or bulk per the plan). Resumable: call again
 * with the same checkpoint after a crash or an abort. Throws DrainError SHARDMOVE_ABORTED when
 * `deps.signal` aborts.
 */
export async function runDrain(deps: ActorDeps<DrainStore>, input: DrainInput): Promise<DrainOutput> {
  // The one schedule (move.order: together): every pair at once, each one's own paths kept there.
  if (input.pairs) return runTogether(deps, input.pairs, runDrain);
  const ctx = createDrainCtx(deps, input.source, input.kind);
  const byRecords = input.access === 'records';
  if (deps.itemsGiven && (deps.dryRun || deps.plan.move.mode !== 'throttled')) {
    // A listing or a bulk job would take in every item of the source: given items are moved one by one.
    throw new Error('given items are drained in throttled mode by a real run only');
  }
  // The source's free space (move.until: {free}) is read now, as this drain starts.
  await preparePlacement(deps, input.source);
  if (deps.dryRun) return byRecords ? dryRunByRecords(ctx) : dryRun(ctx);
  event(ctx, 'drain.started', { mode: byRecords ? 'records' : deps.plan.move.mode });
  for (const kind of trackedKinds(ctx)) await reconcileScheduling({ ...ctx, kind });
  await recheckStuck(ctx);
  if (deps.itemsGiven) return drainGiven(ctx);
  if (byRecords) return drainByRecords(ctx);
  const cursor = ctx.store.getCursor(ctx.kind, ctx.source);
  // A partial drain (move.until) lists its source first: its budget goes to the largest items of
  // the whole source, not of the pages listed so far. So does a drain onto many destinations: a
  // fork network is placed as one unit, weighed with every member.
  const pipelined =
    deps.plan.move.mode === 'throttled' && !cursor?.done && !deps.plan.move.until && deps.plan.move.to.length === 1;
  // Bulk attributes the job's moves to enumerated items, so it needs the whole listing first.
  if (!pipelined) await enumerateRound(ctx);
  if (deps.plan.move.mode === 'bulk') {
    await waitWhilePaused(ctx);
    await runBulkPhase(ctx);
    // The listing is as old as the bulk job: list again before any per-item POST, so an item that
    // left the source meanwhile (moved by someone else) is not moved onto its own storage.
    const cur = ctx.store.getCursor(ctx.kind, ctx.source);
    await enumerateRound(ctx, cur?.done ? cur.round + 1 : undefined);
  }
  for (let extra = 0; ; extra++) {
    // The next drain's items fill this one's tail only in throttled mode, into a listed kind.
    const next =
      input.ahead && deps.plan.move.mode === 'throttled' && input.ahead.access !== 'records'
        ? createDrainCtx(deps, input.ahead.source, input.ahead.kind)
        : null;
    // The first round's moves start with the listing's first page.
    await moveItems(ctx, { mode: extra === 0 && pipelined ? 'listing' : 'moving', next });
    const round = ctx.store.getCursor(ctx.kind, ctx.source)?.round ?? 1;
    if (extra >= MAX_EXTRA_ROUNDS) break;
    // Independent verification: a finished move whose item is still listed goes back to pending.
    // With a next drain, the re-list runs alongside that drain's moves, so its slots do not idle.
    if (next) await moveItems(ctx, { mode: 'verifying', round: round + 1, next });
    else await enumerateRound(ctx, round + 1);
    const c = ctx.store.countStates(ctx.kind, ctx.source);
    if (c.pending + c.scheduling + c.in_flight === 0) break;
    // A reached bound leaves unplaced items pending on purpose: done once nothing placed is open.
    if (boundReached(ctx) && c.scheduling + c.in_flight === 0 && nextDueAt(ctx) === null) break;
  }
  const viaBulk = await moveUnreachableByBulk(ctx);
  // What the bulk job moved is verified by a listing as every other move; what it left is pending again.
  if (viaBulk > 0) await enumerateRound(ctx, (ctx.store.getCursor(ctx.kind, ctx.source)?.round ?? 1) + 1);
  const res = withUnreachable(ctx, drainResult(ctx), viaBulk);
  event(ctx, 'drain.finished', { ...res });
  deps.log.info({ kind: ctx.kind, source: ctx.source, ...res }, 'drain finished');
  return res;
}
