/**
 * Moves as the checkpoint's event log tells them: when each of our moves was first seen (the POST's
 * answer, a bulk move's discovery, or an adoption after an unanswered POST) and when a poll saw it
 * end. The HTML report draws its timeline and duration histogram from these spans, the metrics file
 * its counters and histogram. Durations are as shardmove saw them: from the POST's answer to the
 * poll that saw the end, so they are accurate to about one poll interval.
 */
import { isMoveEnd, isMoveEvent, isMoveStart, MOVE_ENDS } from '../events/vocabulary.js';
import type { AuditEvent, MoveEnd, MoveEvent } from '../events/vocabulary.js';
import type { Kind } from '../plan/types.js';
import { classifyFailure } from '../events/failure-class.js';
import type { FailureClass } from '../events/failure-class.js';

export type { MoveEnd } from '../events/vocabulary.js';
export { isMoveEvent } from '../events/vocabulary.js';

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
  /** For a move given up as stuck: which limit it passed (the class of a stuck move). */
  stuckPhase?: 'queued' | 'running';
}

/**
 * The failure class of an ended span that did not end on the destination (./failure-class.ts), on
 * the instance's release `version` (unknown: the newest).
 */
export function spanFailureClass(span: MoveSpan, version: string | null = null): FailureClass {
  if (span.end === 'stuck') return span.stuckPhase === 'queued' ? 'stuck-queued' : 'stuck-running';
  return classifyFailure(span.error, version);
}

/**
 * Folds move events, oldest first, into spans. `add` returns the span an end event closed, so a
 * caller can count and time moves as they end; `spans` holds every move seen, open ones included.
 */
export class MoveLedger {
  private readonly byMove = new Map<string, MoveSpan>();

  /** Reads a move event (any other event is ignored). */
  add(ev: AuditEvent): MoveSpan | null {
    if (!isMoveEvent(ev)) return null;
    const d = ev.data;
    const key = `${d.kind}:${d.moveId}`;
    let span = this.byMove.get(key);
    if (isMoveStart(ev)) {
      if (!span) this.byMove.set(key, newSpan(ev, ev.at));
      return null;
    }
    if (!isMoveEnd(ev)) return null;
    if (!span) {
      span = newSpan(ev, null);
      this.byMove.set(key, span);
    }
    // A stuck move may still end later (move.unstuck, then its end): the last end wins.
    span.endAt = ev.at;
    span.end = MOVE_ENDS[ev.type];
    span.error = 'error' in ev.data ? ev.data.error : null;
    if ('phase' in ev.data) span.stuckPhase = ev.data.phase;
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

function newSpan(e: MoveEvent, startAt: number | null): MoveSpan {
  return {
    kind: e.data.kind,
    source: e.data.source,
    itemId: e.data.id,
    moveId: e.data.moveId,
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
