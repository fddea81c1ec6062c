/**
 * One poll of every move the run has in flight, through the move lists (./track-moves.ts), with
 * the outcomes applied in one transaction.
 */
import { KINDS } from '../plan/types.js';
import type { Kind } from '../plan/types.js';
import type { ItemRow } from '../store/types.js';
import type { DrainCtx } from './drain-context.js';
import { event } from './drain-context.js';
import { applyMove, isTerminal } from './drain-outcome.js';
import { reconcileItem, recordStuckState } from './reconcile.js';
import { pollMoves } from './track-moves.js';

/** Upper bound on in-flight rows read per poll (bulk mode can have a whole storage in flight). */
const MAX_TRACKED = 100_000;

/** Kinds that may have rows in flight: the plan's, and this drain's. */
export function trackedKinds(ctx: DrainCtx): Kind[] {
  return KINDS.filter((k) => k === ctx.kind || ctx.deps.plan.move.kinds.includes(k));
}

/**
 * One poll over every kind with moves in flight (the concurrency cap is run-wide, so moves of
 * another kind left by an earlier interrupted drain are tracked too). Returns rows still in flight
 * for this drain's (kind, source).
 */
export async function pollInFlight(ctx: DrainCtx): Promise<number> {
  let mine = 0;
  for (const kind of trackedKinds(ctx)) {
    const rows = ctx.store.itemsInState(kind, null, 'in_flight', MAX_TRACKED);
    if (rows.length === 0) continue;
    const ids = rows.map((r) => r.moveId).filter((id): id is number => id !== null);
    const { found, missing } = await pollMoves(ctx.deps.api, kind, ids);
    const lost: ItemRow[] = [];
    const stuck: ItemRow[] = [];
    ctx.store.batch(() => {
      for (const row of rows) {
        const k = { ...ctx, kind, source: row.source };
        const move = row.moveId === null ? undefined : found.get(row.moveId);
        if (move) {
          const done = applyMove(k, row, move, row.scheduledAt ?? ctx.deps.clock.now());
          if (done && !isTerminal(move.state)) stuck.push(row);
          if (!done && kind === ctx.kind && row.source === ctx.source) mine++;
        } else if (row.moveId === null || missing.includes(row.moveId)) lost.push(row);
      }
    });
    for (const row of stuck) await recordStuckState({ ...ctx, kind, source: row.source }, [row.id]);
    for (const row of lost) {
      await reconcileItem({ ...ctx, kind, source: row.source }, { ...row, moveId: null }, 'lost-move');
    }
  }
  return mine;
}


/**
 * Items quarantined as stuck are looked at again when a drain starts: once the instance shows
 * their move terminal, the outcome applies as if polled (moved, or back to pending when it
 * failed, the item being writable again). While the move still runs they stay quarantined.
 */
export async function recheckStuck(ctx: DrainCtx): Promise<number> {
  const { deps, store, kind, source } = ctx;
  const rows = store.itemsInState(kind, source, 'quarantined', MAX_TRACKED).filter((r) => r.stuckAt !== null && r.moveId !== null);
  let settled = 0;
  for (const row of rows) {
    const move = await deps.api.getMove(kind, row.moveId as number);
    if (!move || !isTerminal(move.state)) continue;
    event(ctx, 'move.unstuck', { id: row.id, moveId: move.id, moveState: move.state });
    store.batch(() => {
      if (move.state === 'failed') store.markPending(kind, row.id, deps.clock.now(), move.errorMessage ?? 'stuck move failed', true);
      else applyMove(ctx, row, move, row.scheduledAt ?? deps.clock.now());
    });
    settled++;
  }
  return settled;
}
