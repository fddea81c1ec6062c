/**
 * Moves as the checkpoint's event log tells them: when each of our moves was first seen (the POST's
 * answer, a bulk move's discovery, or an adoption after an unanswered POST) and when a poll saw it
 * end. The HTML report draws its timeline and duration histogram from these spans, the metrics file
 * its counters and histogram. Durations are as shardmove saw them: from the POST's answer to the
 * poll that saw the end, so they are accurate to about one poll interval.
 */
import type { Kind } from '../plan/types.js';
import type { StoredEvent } from '../store/types.js';

/** How a move ended for us: `finished` and `cleanup_failed` leave the repository on the destination. */
export type MoveEnd = 'finished' | 'cleanup_failed' | 'failed' | 'stuck';

export interface MoveSpan {
  kind: Kind;
  source: string;
  itemId: number;
  moveId: number;
  /** ms since epoch when the move was first seen; null when its start is not in the events read. */
  startAt: number | null;
  endAt: number | null;
  end: MoveEnd | null;
  /** GitLab's `error_message` of a failed move, when it had one. */
  error: string | null;
}

const STARTS = new Set(['move.scheduled', 'bulk.move_seen', 'move.adopted']);
const ENDS: Readonly<Record<string, MoveEnd>> = {
  'move.finished': 'finished',
  'move.cleanup_failed': 'cleanup_failed',
  'move.failed': 'failed',
  'move.stuck': 'stuck',
};

/** True for the event types a MoveLedger reads (callers may skip the rest). */
export function isMoveEvent(type: string): boolean {
  return STARTS.has(type) || type in ENDS;
}

/**
 * Folds move events, oldest first, into spans. `add` returns the span an end event closed, so a
 * caller can count and time moves as they end; `spans` holds every move seen, open ones included.
 */
export class MoveLedger {
  private readonly byMove = new Map<string, MoveSpan>();

  add(e: Pick<StoredEvent, 'at' | 'type' | 'data'>): MoveSpan | null {
    const d = e.data;
    if (typeof d.moveId !== 'number' || typeof d.kind !== 'string') return null;
    const key = `${d.kind}:${d.moveId}`;
    let span = this.byMove.get(key);
    if (STARTS.has(e.type)) {
      if (!span) this.byMove.set(key, newSpan(d, e.at));
      return null;
    }
    const end = ENDS[e.type];
    if (!end) return null;
    if (!span) {
      span = newSpan(d, null);
      this.byMove.set(key, span);
    }
    // A stuck move may still end later (move.unstuck, then its end): the last end wins.
    span.endAt = e.at;
    span.end = end;
    span.error = typeof d.error === 'string' ? d.error : null;
    return span;
  }

  spans(): MoveSpan[] {
    return [...this.byMove.values()];
  }

  /** Forgets ended spans (a long-lived reader keeps only the open ones in memory). */
  dropEnded(): void {
    for (const [k, s] of this.byMove) if (s.end !== null && s.end !== 'stuck') this.byMove.delete(k);
  }
}

function newSpan(d: Record<string, unknown>, startAt: number | null): MoveSpan {
  return {
    kind: d.kind as Kind,
    source: typeof d.source === 'string' ? d.source : '',
    itemId: typeof d.id === 'number' ? d.id : 0,
    moveId: d.moveId as number,
    startAt,
    endAt: null,
    end: null,
    error: null,
  };
}

/** Seconds a span took, or null when its start or end is unknown. */
export function spanSeconds(s: Pick<MoveSpan, 'startAt' | 'endAt'>): number | null {
  return s.startAt === null || s.endAt === null ? null : Math.max(0, (s.endAt - s.startAt) / 1000);
}
