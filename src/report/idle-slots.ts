/**
 * Idle slots, read from the checkpoint's event log alone: the time during which
 * fewer moves were held than the cap in force while some item was due. It depends on nothing but
 * the log, so a test can hold a run to it whatever the machine's speed.
 *
 * A slot is held from an attempt's `move.intent` (the cap counts rows being POSTed) until the log
 * shows that attempt's end: a move end (`MOVE_ENDS`), or an outcome that started no move (a failed
 * or refused POST, no move created, the item found off the source, quarantined).
 *
 * An item is due, as far as the log can tell:
 * - a retry, from its `item.retry`'s `nextAttemptAt` until its next `move.intent` (or a move of it seen);
 * - a first attempt, from the end of its drain's first listing (`enumerate.finished`) until its
 *   first `move.intent`. Items listed before that are not counted as due until then (the log does
 *   not record when each page landed), which can only make the idle time look smaller, never larger,
 *   for items POSTed while their listing ran.
 */
import { isMoveEnd, isMoveStart } from '../events/vocabulary.js';
import type { AuditEvent } from '../events/vocabulary.js';

export interface IdleSlots {
  /** First to last event of the log, ms. */
  runMs: number;
  /** Time with fewer slots held than the cap while an item was due, ms. */
  idleMs: number;
  /** idleMs / runMs (0 for an empty log). */
  share: number;
  /** The idle stretches longer than `longMs`, for a message: [start, end] in ms since epoch. */
  long: [number, number][];
}

/** Outcomes of an attempt that started no move (the slot it held is free again). */
const NO_MOVE = new Set<string>([
  'move.post_failed',
  'move.not_created',
  'item.not_on_source',
  'item.left_selection',
  'move.quarantined',
  'item.gone',
  'item.elsewhere',
  'item.already_on_destination',
]);

type Step = { at: number; held: number; due: number; cap?: number };

/** Reads a run's events one at a time, oldest first (a report reads the log once, as a stream). */
export class IdleSlotsReader {
  private readonly steps: Step[] = [];
  private readonly holding = new Map<string, 'intent' | 'move'>();
  /** Per item: the time from which it is due (retries), waiting for its next intent. */
  private readonly dueFrom = new Map<string, number>();
  private readonly listedAt = new Map<string, number>();
  private readonly firstIntents: { drain: string; at: number }[] = [];
  private readonly intended = new Set<string>();
  private start: number | null = null;
  private end = 0;

  private step(at: number, held: number, due: number): void {
    this.steps.push({ at, held, due });
  }

  /** An item due since its retry's backoff ended is due no more from `at` (its next attempt). */
  private endDue(key: string, at: number): void {
    const from = this.dueFrom.get(key);
    if (from === undefined) return;
    this.dueFrom.delete(key);
    if (from < at) {
      this.step(from, 0, 1);
      this.step(at, 0, -1);
    }
  }

  add(ev: AuditEvent): void {
    this.start ??= ev.at;
    this.end = ev.at;
    if (ev.type === 'cap.changed') {
      this.steps.push({ at: ev.at, held: 0, due: 0, cap: ev.data.cap });
      return;
    }
    if (ev.type === 'enumerate.finished') {
      const drain = `${ev.data.kind}:${ev.data.source}`;
      if (!this.listedAt.has(drain)) this.listedAt.set(drain, ev.at);
      return;
    }
    if (!('id' in ev.data) || !('kind' in ev.data)) return;
    const d = ev.data as { kind: string; source: string; id: number };
    const key = `${d.kind}:${d.id}`;
    if (ev.type === 'move.intent') {
      if (!this.holding.has(key)) this.step(ev.at, 1, 0);
      this.holding.set(key, 'intent');
      this.endDue(key, ev.at);
      if (!this.intended.has(key)) {
        this.intended.add(key);
        this.firstIntents.push({ drain: `${d.kind}:${d.source}`, at: ev.at });
      }
    } else if (isMoveStart(ev)) {
      if (!this.holding.has(key)) this.step(ev.at, 1, 0);
      this.holding.set(key, 'move');
      // A move adopted or seen without our intent ends the wait too.
      this.endDue(key, ev.at);
    } else if (isMoveEnd(ev) || (NO_MOVE.has(ev.type) && this.holding.get(key) === 'intent')) {
      if (this.holding.delete(key)) this.step(ev.at, -1, 0);
    }
    if (ev.type === 'item.retry') this.dueFrom.set(key, ev.data.nextAttemptAt);
  }

  /** The idle time so far; stretches of at least `longMs` are listed. */
  result(longMs = 250): IdleSlots {
    if (this.start === null) return { runMs: 0, idleMs: 0, share: 0, long: [] };
    const { start, end } = this;
    const steps = [...this.steps];
    const push = (at: number, due: number) => steps.push({ at, held: 0, due });
    for (const f of this.firstIntents) {
      const listed = this.listedAt.get(f.drain);
      if (listed !== undefined && listed < f.at) {
        push(listed, 1);
        push(f.at, -1);
      }
    }
    // Retries still waiting when the log ends are due until then.
    for (const from of this.dueFrom.values()) if (from < end) push(from, 1);
    // At one instant, ends and starts before the cap changes apply together: sort by time only.
    steps.sort((a, b) => a.at - b.at);
    let held = 0;
    let due = 0;
    let cap = 0;
    let idleMs = 0;
    const long: [number, number][] = [];
    let idleSince: number | null = null;
    for (let i = 0; i < steps.length; i++) {
      const s = steps[i] as Step;
      if (s.cap !== undefined) cap = s.cap;
      held += s.held;
      due += s.due;
      const next = i + 1 < steps.length ? Math.min(end, (steps[i + 1] as Step).at) : end;
      if (next <= s.at) continue;
      const idle = held < cap && due > 0;
      if (idle) {
        idleMs += next - s.at;
        idleSince ??= s.at;
      } else if (idleSince !== null) {
        if (s.at - idleSince >= longMs) long.push([idleSince, s.at]);
        idleSince = null;
      }
    }
    if (idleSince !== null && end - idleSince >= longMs) long.push([idleSince, end]);
    const runMs = end - start;
    return { runMs, idleMs, share: runMs > 0 ? idleMs / runMs : 0, long };
  }
}

/** Computes the idle-slot time of a run's events (oldest first, as `readEvents` returns them). */
export function idleSlots(events: Iterable<AuditEvent>, longMs = 250): IdleSlots {
  const reader = new IdleSlotsReader();
  for (const ev of events) reader.add(ev);
  return reader.result(longMs);
}
