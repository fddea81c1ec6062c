/**
 * Reconciliation: what to do with an item whose POST may or may not have reached the instance
 * (ambiguous error, or a kill between "intent recorded" and "move id recorded"), or that answered
 * "is read-only". Never re-POST blindly: read the item's moves, then its storage, then decide.
 */
import type { MoveRecord } from '../../api/types.js';
import type { ItemRow } from '../../store/types.js';
import { arrivedOn, event, throwIfAborted } from './context.js';
import type { DrainCtx } from './context.js';
import { applyMove, isTerminal, recordFailure } from './outcome.js';
import { arrivalOf, locate } from './locate.js';
import { markUnreachable } from './unreachable.js';

/** Tolerated clock difference between this host and the instance when comparing creation times. */
const SKEW_MS = 5 * 60 * 1000;

export type ReconcileCause = 'ambiguous' | 'read-only' | 'resume' | 'lost-move';

/** Start of the stuck timer for an adopted move: its creation time when readable, else now. */
function adoptedSince(move: MoveRecord, now: number): number {
  const t = Date.parse(move.createdAt);
  return Number.isFinite(t) ? Math.min(t, now) : now;
}

/** True when `move` can only have come from the current attempt (or from someone else since). */
function isNewSinceIntent(move: MoveRecord, row: ItemRow): boolean {
  if (row.moveId !== null && move.id <= row.moveId) return false;
  const created = Date.parse(move.createdAt);
  return !Number.isFinite(created) || row.intentAt === null || created >= row.intentAt - SKEW_MS;
}

/**
 * Settles one item in `scheduling` (or a lost in-flight move). Outcomes: a running move is adopted
 * (whoever started it: never fight it); a move created since the intent is applied as if polled;
 * otherwise the item's storage decides: on the destination -> moved, gone -> left, still on the
 * source -> pending again (the attempt is refunded when the POST provably did nothing).
 */
export async function reconcileItem(ctx: DrainCtx, row: ItemRow, cause: ReconcileCause): Promise<void> {
  const { deps, store, kind } = ctx;
  const moves = await deps.api.listItemMoves(kind, row.id);
  const now = deps.clock.now();
  const running = moves.find((m) => !isTerminal(m.state));
  if (running && cause === 'read-only' && deps.itemsGiven) {
    // Given items (a revert): our POST was refused because this move runs, so it is someone else's.
    // Followed as ours, its end would be reported as the item moved back; it is left to that move.
    const reason = `being moved by someone else (move ${running.id}, ${running.state}, ${running.sourceStorage} -> ${running.destinationStorage}): left to that move`;
    store.markLeft(kind, row.id, now, reason);
    event(ctx, 'revert.skipped', { id: row.id, storage: null, reason });
    return;
  }
  const fresh = running ?? moves.find((m) => isNewSinceIntent(m, row));
  if (fresh) {
    event(ctx, 'move.adopted', { id: row.id, moveId: fresh.id, moveState: fresh.state, cause });
    const since = fresh.id === row.moveId && row.scheduledAt !== null ? row.scheduledAt : adoptedSince(fresh, now);
    const left = store.batch(() => applyMove(ctx, row, fresh, since));
    if (left && !isTerminal(fresh.state)) await recordStuckState(ctx, [row.id]);
    return;
  }
  // A 404 on the item itself is not proof (hidden projects, project snippets an admin cannot read):
  // locate() asks the move list before calling it gone.
  const where = await locate(ctx, row.id);
  if (where.at === 'unreachable') {
    markUnreachable(ctx, row);
    return;
  }
  if (where.at === 'gone') {
    store.markLeft(kind, row.id, deps.clock.now(), 'deleted from the instance');
    event(ctx, 'item.gone', { id: row.id, cause });
    return;
  }
  if (where.at === 'elsewhere' && arrivedOn(ctx, row, where.storage)) {
    const a = await arrivalOf(ctx, row, where.storage);
    store.markMoved(kind, row.id, a.moveId, a.moveState, deps.clock.now(), a.note);
    event(ctx, 'item.already_on_destination', { id: row.id, cause });
    return;
  }
  if (where.at === 'elsewhere') {
    store.markLeft(kind, row.id, deps.clock.now(), `now on ${where.storage}`);
    event(ctx, 'item.elsewhere', { id: row.id, storage: where.storage, cause });
    return;
  }
  if (cause === 'read-only') {
    // Read-only with no move running: a flag left behind (e.g. by a scheduled move that failed). Retrying
    // may clear it once GitLab resets the flag; otherwise the item ends quarantined with this reason.
    recordFailure(ctx, row, 'repository is read-only but no move is running for it');
    return;
  }
  store.batch(() => {
    store.markPending(kind, row.id, deps.clock.now(), `${cause}: no move was created; scheduling again`, true);
    if (where.at === 'source') store.touchListed(kind, ctx.source, [row.id], deps.clock.now());
  });
  event(ctx, 'move.not_created', { id: row.id, cause });
}

/**
 * Completes the report of items just quarantined as stuck with whether their repository is
 * read-only now (an operator deciding whether to wait or to intervene needs to know whether users
 * are locked out). GitLab exposes no read-only field (docs/gitlab-behaviour.md §1.4); it shows only
 * the moves: a move that is not terminal (scheduled, started) holds the repository read-only. No such
 * move leaves the state unknown (a flag can outlive a failed move). Best effort: a failed read too.
 */
export async function recordStuckState(ctx: DrainCtx, ids: readonly number[]): Promise<void> {
  const { deps, store, kind } = ctx;
  for (const id of ids) {
    const row = store.getItem(kind, id);
    if (!row || row.state !== 'quarantined' || row.stuckAt === null) continue;
    let readOnly: boolean | null = null;
    try {
      const moves = await deps.api.listItemMoves(kind, id);
      // replicated: the container is writable again while the old copy is deleted.
      if (moves.some((m) => m.state === 'scheduled' || m.state === 'started' || m.state === 'initial')) readOnly = true;
    } catch (err) {
      deps.log.warn({ kind, id, err }, "could not read the stuck item's moves");
    }
    if (readOnly !== null) store.markQuarantined(kind, id, row.lastError ?? 'stuck', { at: row.stuckAt, readOnly });
    event(ctx, 'item.stuck_state', { id, moveId: row.moveId, moveState: row.moveState, readOnly });
    deps.log.error(
      { kind, id, moveId: row.moveId, moveState: row.moveState, readOnly },
      readOnly === null ? 'stuck item: read-only state unknown' : 'stuck item: repository read-only',
    );
  }
}

/** Reconciles every item left in `scheduling` (by a kill or an ambiguous error) for the drain's kind. */
export async function reconcileScheduling(ctx: DrainCtx): Promise<number> {
  let n = 0;
  for (;;) {
    const rows = ctx.store.itemsInState(ctx.kind, null, 'scheduling', 100);
    if (rows.length === 0) return n;
    for (const row of rows) {
      throwIfAborted(ctx);
      // Items of another source of the same kind are reconciled against their own source.
      await reconcileItem({ ...ctx, source: row.source }, row, 'resume');
      n++;
    }
  }
}
