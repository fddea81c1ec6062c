/**
 * One poll of every move the run has in flight, through the move lists (./track-moves.ts), with
 * the outcomes applied in one transaction.
 */
import { KINDS } from '../../plan/types.js';
import type { Kind } from '../../plan/types.js';
import type { ItemRow } from '../../store/types.js';
import type { DrainCtx } from './context.js';
import { event } from './context.js';
import { applyMove, isTerminal, stuckPhase } from './outcome.js';
import type { PollSample } from './queue-ahead.js';
import { confirmNoSpace } from './no-space.js';
import { expectedEnd } from './move-model.js';
import type { MoveModel } from './move-model.js';
import { reconcileItem, recordStuckState } from './reconcile.js';
import { pollMoves } from './track-moves.js';

/** Upper bound on in-flight rows read per poll (bulk mode can have a whole storage in flight). */
const MAX_TRACKED = 100_000;

/** Kinds that may have rows in flight: the plan's, and this drain's. */
export function trackedKinds(ctx: DrainCtx): Kind[] {
  return KINDS.filter((k) => k === ctx.kind || ctx.deps.plan.move.kinds.includes(k));
}

/**
 * What the throttled loop carries from poll to poll for completion prediction (./move-model.ts).
 * Bulk polling passes none: its moves wait in the instance's queue, which says nothing about how
 * long a move runs.
 */
export interface Forecast {
  model: MoveModel;
  /** When the previous poll of this process started (null: none yet, so nothing is learned). */
  lastPollAt: number | null;
  /** The earliest expected end among moves in flight after the last poll (null: nothing predicted). */
  earliestEnd: number | null;
  /** `poll.min_interval`. */
  minGapMs: number;
  /**
   * Expected end (ms since epoch) of every move in flight with a prediction, as of the last poll
   * plus the moves scheduled since: what queue ahead (./queue-ahead.ts) counts as about to end.
   */
  ends: number[];
  /** What the last poll saw of the moves (`queue_ahead: auto`); null before a second poll. */
  sample?: PollSample | null;
}

/**
 * How long a finished move took, as well as polls can tell: it ended after it was last seen in
 * flight and before this poll. A move seen in flight at the previous poll gives its lower bound:
 * a model learned from lower bounds polls a little early, finds the move still running, and looks
 * again after a quarter of its age (`expectedEnd`), so the next bracket is narrow and the model
 * stays just below the truth instead of drifting late (a late poll idles the slot; an early one
 * costs one request). A move not seen since its POST gives only the middle of [POST, this poll]:
 * that is how the model starts, and how it comes down when it expected moves to take longer. A
 * move that ended before this process's first poll (a restart) teaches nothing.
 */
function learn(forecast: Forecast, kind: Kind, row: ItemRow, now: number): void {
  if (forecast.lastPollAt === null || row.scheduledAt === null) return;
  const seenAlive = forecast.lastPollAt > row.scheduledAt;
  const ms = seenAlive ? forecast.lastPollAt - row.scheduledAt : (now - row.scheduledAt) / 2;
  forecast.model.observe(kind, row.sizeBytes, ms);
}

/**
 * One poll over every kind with moves in flight (the concurrency cap is run-wide, so moves of
 * another kind left by an earlier interrupted drain are tracked too). Returns rows still in flight
 * for this drain's (kind, source). With a forecast, finished moves train the model (saved in the
 * poll's transaction) and `forecast.earliestEnd` becomes the earliest expected end of what is left.
 */
export async function pollInFlight(ctx: DrainCtx, forecast?: Forecast): Promise<number> {
  let mine = 0;
  const now = ctx.deps.clock.now();
  let earliest: number | null = null;
  const ends: number[] = [];
  const seen = { ended: 0, queued: 0, running: 0 };
  const expect = (kind: Kind, row: ItemRow) => {
    if (!forecast) return;
    const end = expectedEnd(forecast.model, kind, row, now, now, forecast.minGapMs);
    if (end !== null) ends.push(end);
    if (end !== null && (earliest === null || end < earliest)) earliest = end;
  };
  for (const kind of trackedKinds(ctx)) {
    if (forecast) for (const row of ctx.store.itemsInState(kind, null, 'scheduling', MAX_TRACKED)) expect(kind, row);
    const rows = ctx.store.itemsInState(kind, null, 'in_flight', MAX_TRACKED);
    if (rows.length === 0) continue;
    const ids = rows.map((r) => r.moveId).filter((id): id is number => id !== null);
    const { found, missing } = await pollMoves(ctx.deps.api, kind, ids);
    const notes = await confirmNoSpace(ctx.deps, kind, rows, found);
    const lost: ItemRow[] = [];
    const stuck: ItemRow[] = [];
    ctx.store.batch(() => {
      for (const row of rows) {
        const k = { ...ctx, kind, source: row.source };
        const move = row.moveId === null ? undefined : found.get(row.moveId);
        if (move) {
          const done = applyMove(k, row, move, row.scheduledAt ?? ctx.deps.clock.now(), notes.get(move.id));
          if (done && !isTerminal(move.state)) stuck.push(row);
          if (done && move.state === 'finished' && forecast) learn(forecast, kind, row, now);
          if (done) seen.ended++;
          else seen[stuckPhase(move.state)]++;
          if (!done) expect(kind, row);
          if (!done && kind === ctx.kind && row.source === ctx.source) mine++;
        } else if (row.moveId === null || missing.includes(row.moveId)) {
          lost.push(row);
          seen.ended++;
        }
      }
      forecast?.model.save(now);
    });
    for (const row of stuck) await recordStuckState({ ...ctx, kind, source: row.source }, [row.id]);
    for (const row of lost) {
      await reconcileItem({ ...ctx, kind, source: row.source }, { ...row, moveId: null }, 'lost-move');
    }
  }
  if (forecast) {
    forecast.sample = forecast.lastPollAt === null ? null : { elapsedMs: now - forecast.lastPollAt, ...seen };
    forecast.lastPollAt = now;
    forecast.earliestEnd = earliest;
    forecast.ends = ends;
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
  const rows = store
    .itemsInState(kind, source, 'quarantined', MAX_TRACKED)
    .filter((r) => r.stuckAt !== null && r.moveId !== null);
  let settled = 0;
  for (const row of rows) {
    const move = await deps.api.getMove(kind, row.moveId as number);
    if (!move || !isTerminal(move.state)) continue;
    event(ctx, 'move.unstuck', { id: row.id, moveId: move.id, moveState: move.state });
    store.batch(() => {
      if (move.state === 'failed')
        store.markPending(kind, row.id, deps.clock.now(), move.errorMessage ?? 'stuck move failed', true);
      else applyMove(ctx, row, move, row.scheduledAt ?? deps.clock.now());
    });
    settled++;
  }
  return settled;
}
