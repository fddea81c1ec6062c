/**
 * What a move's state means for its item: the one place that turns `finished`, `cleanup failed`,
 * `failed` and stuck moves into item states, retries and quarantine. Used by polling, reconciliation
 * and bulk discovery alike.
 */
import { TERMINAL_MOVE_STATES } from '../api/types.js';
import type { MoveRecord, MoveState } from '../api/types.js';
import type { ItemRow } from '../store/types.js';
import { event } from './drain-context.js';
import type { DrainCtx } from './drain-context.js';

export function isTerminal(state: string): boolean {
  return (TERMINAL_MOVE_STATES as readonly string[]).includes(state as MoveState);
}

/** Counts retries: the item goes back to pending after the backoff, or is quarantined when out of attempts. */
export function recordFailure(ctx: DrainCtx, row: ItemRow, reason: string): void {
  const { store, deps, kind } = ctx;
  const now = deps.clock.now();
  if (row.attempts >= deps.plan.retry.maxAttempts) {
    store.markQuarantined(kind, row.id, reason, null);
    event(ctx, 'item.quarantined', { id: row.id, attempts: row.attempts, reason });
    deps.log.warn({ kind, id: row.id, attempts: row.attempts, reason }, 'item quarantined');
  } else {
    const at = now + deps.plan.retry.backoffMs;
    store.markPending(kind, row.id, at, reason, false);
    event(ctx, 'item.retry', { id: row.id, attempts: row.attempts, nextAttemptAt: at, reason });
  }
}

/**
 * Applies the latest known state of the item's current move. `since` is when the stuck timer starts
 * for a move first seen now. Returns true when the item left the in-flight set.
 */
export function applyMove(ctx: DrainCtx, row: ItemRow, move: MoveRecord, since: number): boolean {
  const { store, deps, kind } = ctx;
  const now = deps.clock.now();
  if (!isTerminal(move.state)) {
    if (row.state !== 'in_flight' || row.moveId !== move.id) store.markInFlight(kind, row.id, move.id, move.state, since);
    else if (row.moveState !== move.state) store.markMoveState(kind, row.id, move.state);
    const started = row.state === 'in_flight' && row.moveId === move.id && row.scheduledAt !== null ? row.scheduledAt : since;
    if (now - started > deps.plan.poll.stuckAfterMs) {
      const reason = `stuck: move ${move.id} still ${move.state} after ${Math.round((now - started) / 1000)}s`;
      store.markQuarantined(kind, row.id, reason, { at: now, readOnly: null });
      event(ctx, 'move.stuck', { id: row.id, moveId: move.id, moveState: move.state, since: started });
      deps.log.error({ kind, id: row.id, moveId: move.id, moveState: move.state, since: started }, 'move stuck, item quarantined');
      return true;
    }
    return false;
  }
  if (move.state === 'finished') {
    store.markMoved(kind, row.id, move.id, move.state, now, null);
    event(ctx, 'move.finished', { id: row.id, moveId: move.id });
  } else if (move.state === 'cleanup failed') {
    // The item already points at the destination; only the source copy is left behind.
    const note = `cleanup failed, source copy left behind: ${move.errorMessage ?? 'no error message'}`;
    store.markMoved(kind, row.id, move.id, move.state, now, note);
    event(ctx, 'move.cleanup_failed', { id: row.id, moveId: move.id, error: move.errorMessage });
    deps.log.warn({ kind, id: row.id, moveId: move.id, error: move.errorMessage }, 'move cleanup failed');
  } else {
    event(ctx, 'move.failed', { id: row.id, moveId: move.id, error: move.errorMessage });
    if (row.moveId !== move.id) store.markInFlight(kind, row.id, move.id, move.state, since);
    recordFailure(ctx, { ...row, moveId: move.id }, move.errorMessage ?? `move ${move.id} failed without an error message`);
  }
  return true;
}
