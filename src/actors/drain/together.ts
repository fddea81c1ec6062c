/**
 * The drain step as one schedule (`move.order: together`): every (kind, source) pair the machine
 * gives in one invocation, their items moved in one largest-first order (./loop.ts), each
 * pair verified independently once its last item ended, and each pair's result returned for the
 * machine to record as a drain per pair would have. What keeps its own path: a kind moved by move
 * records (after the schedule, pair by pair), a bulk plan and a given-items run (pair by pair, as
 * `by-kind`). A partial drain (`move.until`) lists every pair before it moves anything: a source's
 * budget goes to the largest items of all its kinds. So does a drain onto many destinations: a fork
 * network is placed as one unit (./placement.ts), which needs every member listed. A dry run lists every pair and places their
 * items in the same order the run would (./dry-run.ts).
 */
import type { DrainInput, DrainOutput, DrainPair, PairOutput } from '../../machine/types.js';
import type { ActorDeps } from '../types.js';
import { createDrainCtx, event } from './context.js';
import { dryRunByRecords, dryRunTogether } from './dry-run.js';
import { enumerateRound } from './enumerate.js';
import { preparePlacement } from './placement.js';
import { recheckStuck, trackedKinds } from './poll.js';
import { reconcileScheduling } from './reconcile.js';
import { moveTogether } from './loop.js';
import { drainResult } from './result.js';
import { withUnreachable } from './unreachable.js';
import { moveUnreachableByBulk } from './unreachable-bulk.js';
import type { DrainStore } from '../../store/views.js';

/** The drain of one pair, as ./run.ts does it (passed in: run.ts is the one that calls this). */
export type DrainOne = (deps: ActorDeps<DrainStore>, input: DrainInput) => Promise<DrainOutput>;

/** Drains every pair of `pairs` (in the run's order) in one schedule; the result holds each pair's. */
export async function runTogether(
  deps: ActorDeps<DrainStore>,
  pairs: readonly DrainPair[],
  one: DrainOne,
): Promise<DrainOutput> {
  const results = new Map<string, PairOutput>();
  const key = (p: { source: string; kind: string }) => `${p.source}/${p.kind}`;
  const alone = async (p: DrainPair) =>
    results.set(key(p), { source: p.source, kind: p.kind, ...(await one(deps, { ...p, ahead: null })) });
  if (deps.itemsGiven || deps.plan.move.mode !== 'throttled') {
    for (const p of pairs) await alone(p);
    return summed(pairs, results);
  }
  const listed = pairs.filter((p) => p.access !== 'records');
  const ctxs = listed.map((p) => createDrainCtx(deps, p.source, p.kind));
  // Each source's free space (move.until: {free}) is read now, as its drains start.
  for (const source of new Set(pairs.map((p) => p.source))) await preparePlacement(deps, source);
  if (deps.dryRun) {
    const outs = await dryRunTogether(ctxs);
    ctxs.forEach((ctx, i) =>
      results.set(key(ctx), { source: ctx.source, kind: ctx.kind, ...(outs[i] as DrainOutput) }),
    );
    for (const p of pairs.filter((x) => x.access === 'records'))
      results.set(key(p), {
        source: p.source,
        kind: p.kind,
        ...dryRunByRecords(createDrainCtx(deps, p.source, p.kind)),
      });
    return summed(pairs, results);
  }
  if (ctxs.length > 0) {
    for (const ctx of ctxs) event(ctx, 'drain.started', { mode: 'throttled' });
    // Moves left in `scheduling` by a kill, of every kind the run tracks (across its sources).
    for (const kind of trackedKinds(ctxs[0]!)) await reconcileScheduling({ ...ctxs[0]!, kind });
    for (const ctx of ctxs) await recheckStuck(ctx);
    // A partial drain lists first: its budget goes to the largest items of the whole source. So
    // does a drain onto many destinations: a fork network is weighed whole, every member known.
    if (deps.plan.move.until || deps.plan.move.to.length > 1)
      for (const ctx of ctxs) if (!ctx.store.getCursor(ctx.kind, ctx.source)?.done) await enumerateRound(ctx);
    for (const r of await moveTogether(ctxs)) results.set(key(r), r);
    // Projects no per-item route reaches (hidden or pending deletion, before 16.7): one bulk move per source.
    for (const ctx of ctxs) {
      const viaBulk = await moveUnreachableByBulk(ctx);
      if (viaBulk > 0) await enumerateRound(ctx, (ctx.store.getCursor(ctx.kind, ctx.source)?.round ?? 1) + 1);
      const r = results.get(key(ctx));
      if (r) results.set(key(ctx), { ...r, ...withUnreachable(ctx, viaBulk > 0 ? drainResult(ctx) : r, viaBulk) });
    }
  }
  for (const p of pairs) if (p.access === 'records') await alone(p);
  return summed(pairs, results);
}

/** The results in the pairs' order, and their sums as the step's own counts. */
function summed(pairs: readonly DrainPair[], results: ReadonlyMap<string, PairOutput>): DrainOutput {
  const perPair = pairs.flatMap((p) => {
    const r = results.get(`${p.source}/${p.kind}`);
    return r ? [r] : [];
  });
  const sum = (f: (r: PairOutput) => number | undefined) => perPair.reduce((n, r) => n + (f(r) ?? 0), 0);
  const kept = sum((r) => r.kept);
  return {
    moved: sum((r) => r.moved),
    quarantined: sum((r) => r.quarantined),
    remaining: sum((r) => r.remaining),
    ...(kept > 0 ? { kept } : {}),
    perPair,
  };
}
