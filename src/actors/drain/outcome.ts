/**
 * What a move's state means for its item: the one place that turns `finished`, `cleanup failed`,
 * `failed` and stuck moves into item states, retries and quarantine. Used by polling, reconciliation
 * and bulk discovery alike.
 */
import { noteAutoMove } from '../auto-cap.js';
import { TERMINAL_MOVE_STATES } from '../../api/types.js';
import type { MoveRecord, MoveState } from '../../api/types.js';
import { formatPlanDuration } from '../../time/durations.js';
import type { Plan } from '../../plan/types.js';
import type { ItemRow } from '../../store/types.js';
import { noteEndedMove, noteFailedMove } from './breaker.js';
import { event } from './context.js';
import type { DrainCtx } from './context.js';

export function isTerminal(state: string): boolean {
  return (TERMINAL_MOVE_STATES as readonly string[]).includes(state as MoveState);
}

/** Counts retries: the item goes back to pending after the backoff, or is quarantined when out of attempts. */
export function recordFailure(ctx: DrainCtx, row: ItemRow, reason: string): void {
  const { store, deps, kind } = ctx;
  const now = deps.clock.now();
  if (row.attempts >= deps.plan.retry.maxAttempts) {
    store.markQuarantined(kind, row.id, reason, null);
    event(ctx, 'move.quarantined', { id: row.id, attempts: row.attempts, reason });
    deps.log.warn({ kind, id: row.id, attempts: row.attempts, reason }, 'move.quarantined');
  } else {
    const at = now + deps.plan.retry.backoffMs;
    store.markPending(kind, row.id, at, reason, false);
    event(ctx, 'item.retry', { id: row.id, attempts: row.attempts, nextAttemptAt: at, reason });
  }
}

const GIB = 1024 ** 3;
/** GitLab's queued states: the move waits for a worker of its throttled Sidekiq queue. */
const QUEUED_STATES: readonly string[] = ['initial', 'scheduled'];

/** Which stuck limit applies to a move in this state: waiting in the queue, or running. */
export function stuckPhase(state: string): 'queued' | 'running' {
  return QUEUED_STATES.includes(state) ? 'queued' : 'running';
}

/**
 * How long a move may stay in this phase before it counts as stuck. Queued: the instance is busy,
 * not broken, so the limit is long and flat. Running: a base plus an allowance per GiB of the
 * repository when its size is known (Gitaly's copy and checksum take time in proportion to size).
 */
export function stuckLimitMs(poll: Plan['poll'], phase: 'queued' | 'running', sizeBytes: number | null): number {
  if (phase === 'queued') return poll.stuckScheduledAfterMs;
  // Whole seconds: the limit is shown to the operator, and a finer one means nothing for a move.
  const extra =
    sizeBytes !== null && sizeBytes > 0 ? Math.round((poll.stuckRunningPerGbMs * sizeBytes) / GIB / 1000) * 1000 : 0;
  return poll.stuckRunningAfterMs + extra;
}

function describeLimit(
  poll: Plan['poll'],
  phase: 'queued' | 'running',
  limitMs: number,
  sizeBytes: number | null,
): string {
  if (phase === 'queued') return `in the queue (poll.stuck_scheduled_after ${formatPlanDuration(limitMs)})`;
  if (limitMs === poll.stuckRunningAfterMs) return `running (poll.stuck_running_after ${formatPlanDuration(limitMs)})`;
  const gib = ((sizeBytes ?? 0) / GIB).toFixed(1);
  return `running (limit ${formatPlanDuration(limitMs)}: poll.stuck_running_after ${formatPlanDuration(poll.stuckRunningAfterMs)} plus ${formatPlanDuration(poll.stuckRunningPerGbMs)} per GiB of ${gib} GiB)`;
}

/**
 * Applies the latest known state of the item's current move. `since` is when the stuck timer starts
 * for a move first seen now. `reason`, for a failed move, is what to record instead of its message
 * (the message with our note, ./no-space.ts). A queued move is timed from when it was first seen in flight against
 * `poll.stuck_scheduled_after`; a running one from when it was first seen running (GitLab's move
 * has only `created_at`, so the checkpoint keeps that moment) against the running limit, so time
 * spent in the queue never counts toward it. Returns true when the item left the in-flight set.
 */
export function applyMove(ctx: DrainCtx, row: ItemRow, move: MoveRecord, since: number, reason?: string): boolean {
  const { store, deps, kind } = ctx;
  const now = deps.clock.now();
  if (!isTerminal(move.state)) {
    const same = row.state === 'in_flight' && row.moveId === move.id;
    if (!same) store.markInFlight(kind, row.id, move.id, move.state, since);
    else if (row.moveState !== move.state) store.markMoveState(kind, row.id, move.state);
    const phase = stuckPhase(move.state);
    let started = same && row.scheduledAt !== null ? row.scheduledAt : since;
    if (phase === 'running') {
      const known = same ? (row.runningAt ?? null) : null;
      if (known === null) store.markRunning(kind, row.id, now);
      started = known ?? now;
    }
    const limitMs = stuckLimitMs(deps.plan.poll, phase, row.sizeBytes);
    if (now - started > limitMs) {
      const reason = `stuck: move ${move.id} still ${move.state} after ${Math.round((now - started) / 1000)}s ${describeLimit(deps.plan.poll, phase, limitMs, row.sizeBytes)}`;
      store.markQuarantined(kind, row.id, reason, { at: now, readOnly: null });
      event(ctx, 'move.stuck', { id: row.id, moveId: move.id, moveState: move.state, since: started, phase, limitMs });
      deps.log.error(
        { kind, id: row.id, moveId: move.id, moveState: move.state, since: started, phase, limitMs },
        'move stuck, item quarantined',
      );
      return true;
    }
    return false;
  }
  // The throttle learns from every ended move: failures, and durations drifting upwards.
  const seenFrom = row.runningAt ?? row.scheduledAt;
  const seenMs = seenFrom !== null && seenFrom !== undefined ? now - seenFrom : null;
  deps.gate?.noteMove(move.state === 'failed', seenMs);
  // `move.concurrency: auto` measures the bytes that arrived: a failed move moved none.
  if (move.state !== 'failed') noteAutoMove(deps, row.sizeBytes, seenMs);
  // The breaker's window holds every ended move: its rate form judges the failed share of them.
  if (move.state !== 'failed') noteEndedMove(deps, false);
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
    noteFailedMove(deps);
    if (row.moveId !== move.id) store.markInFlight(kind, row.id, move.id, move.state, since);
    recordFailure(
      ctx,
      { ...row, moveId: move.id },
      reason ?? move.errorMessage ?? `move ${move.id} failed without an error message`,
    );
  }
  return true;
}
