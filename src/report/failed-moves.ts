/**
 * The recent failed moves, as `status` shows them (text and `--json`): each move GitLab ended
 * `failed`, newest first, with its item, which attempt it was, what happened next (a retry, or
 * quarantine), GitLab's own `error_message`, and that message's failure class and remedy. These
 * are the moves the failure breaker counts, so its pause points here. Pure: built from the
 * checkpoint's `move.failed` events and the `item.retry` / `move.quarantined` event that followed
 * each.
 */
import type { AuditEventOf } from '../events/vocabulary.js';
import type { Kind } from '../plan/types.js';
import { describeFailure } from '../events/failure-class.js';
import type { FailureClass } from '../events/failure-class.js';

/** How many failed moves `status` lists. */
export const FAILED_MOVES_SHOWN = 10;

export interface FailedMove {
  /** When the poll saw it failed (ms since epoch). */
  at: number;
  kind: Kind;
  id: number;
  /** The item's name (path), when the checkpoint has the item. */
  name: string | null;
  source: string;
  moveId: number;
  /** Which attempt of the item this move was (null: not recorded). */
  attempt: number | null;
  /** What came of it: another try at `nextAttemptAt`, or quarantine (null: not recorded yet). */
  then: 'retry' | 'quarantined' | null;
  nextAttemptAt: number | null;
  /** GitLab's `error_message` of the move, as it gave it (null: none). */
  error: string | null;
  class: FailureClass;
  remedy: string;
  doc: string;
}

type Seen = AuditEventOf<'move.failed'> | AuditEventOf<'item.retry'> | AuditEventOf<'move.quarantined'>;

/**
 * The failed moves among `events` (newest first, as the store gives them), each with the attempt
 * and the outcome recorded right after it for the same item.
 */
export function failedMoves(
  events: readonly Seen[],
  nameOf: (kind: Kind, id: number) => string | null,
  limit = FAILED_MOVES_SHOWN,
  /** The instance's GitLab version (pre-flight's): before 16.7 a failed move carries no reason. */
  version: string | null = null,
): FailedMove[] {
  const out: FailedMove[] = [];
  events.forEach((e, i) => {
    if (e.type !== 'move.failed' || out.length >= limit) return;
    // The newest-first list: what followed the failure for this item is the nearest one before it.
    let next: Exclude<Seen, AuditEventOf<'move.failed'>> | null = null;
    for (let j = i - 1; j >= 0; j--) {
      const f = events[j]!;
      if (f.type !== 'move.failed' && f.data.kind === e.data.kind && f.data.id === e.data.id) {
        next = f;
        break;
      }
    }
    out.push({
      at: e.at,
      kind: e.data.kind,
      id: e.data.id,
      name: nameOf(e.data.kind, e.data.id),
      source: e.data.source,
      moveId: e.data.moveId,
      attempt: next ? next.data.attempts : null,
      then: next ? (next.type === 'item.retry' ? 'retry' : 'quarantined') : null,
      nextAttemptAt: next?.type === 'item.retry' ? next.data.nextAttemptAt : null,
      error: e.data.error,
      ...describeFailure(e.data.error, version),
    });
  });
  return out;
}

/** The failed moves as lines for people (nothing when there are none). */
export function failedMoveLines(moves: readonly FailedMove[]): string[] {
  if (moves.length === 0) return [];
  const lines = [
    '',
    `Failed moves (${moves.length === FAILED_MOVES_SHOWN ? `the ${moves.length} newest first` : `${moves.length}, newest first`}; the failure breaker counts these):`,
  ];
  for (const m of moves) {
    const then =
      m.then === 'retry'
        ? `, retried${m.nextAttemptAt !== null ? ` from ${new Date(m.nextAttemptAt).toISOString()}` : ''}`
        : m.then === 'quarantined'
          ? ', quarantined'
          : '';
    lines.push(
      `  ${new Date(m.at).toISOString()} ${m.kind} ${m.id}${m.name ? ` ${m.name}` : ''} on ${m.source}: move ${m.moveId}${m.attempt !== null ? `, attempt ${m.attempt}` : ''}${then}`,
      `    GitLab: ${m.error ?? '(no error message)'}`,
      `    ${m.class}: ${m.remedy} (${m.doc})`,
    );
  }
  return lines;
}
