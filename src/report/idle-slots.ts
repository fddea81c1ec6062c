/**
 * Idle slots, read from the checkpoint's event log alone (issue 25 item 2): the time during which
 * fewer moves were held than the cap in force while some item was due. It depends on nothing but
 * the log, so a test can hold a run to it whatever the machine's speed.
 *
 * A slot is held from an attempt's `move.intent` (the cap counts rows being POSTed) until the log
 * shows that attempt's end: a move end (`MOVE_ENDS`), or an outcome that started no move (a failed
 * or refused POST, no move created, the item found off the source, quarantined).
 *
 * An item is due, as far as the log can tell:
 * - a retry, from its `item.retry`'s `nextAttemptAt` until its next `move.intent`;
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
const NO_MOVE = new Set<string>(['move.post_failed', 'move.not_created', 'item.not_on_source', 'item.quarantined', 'item.gone', 'item.elsewhere', 'item.already_on_destination']);

type Step = { at: number; held: number; due: number; cap?: number };

/** Computes the idle-slot time of a run's events (oldest first, as `readEvents` returns them). */
export function idleSlots(events: readonly AuditEvent[], longMs = 250): IdleSlots {
  if (events.length === 0) return { runMs: 0, idleMs: 0, share: 0, long: [] };
  const steps: Step[] = [];
  const step = (at: number, held: number, due: number) => steps.push({ at, held, due });
  const holding = new Map<string, 'intent' | 'move'>();
  /** Per item: the time from which it is due (retries), waiting for its next intent. */
  const dueFrom = new Map<string, number>();
  const listedAt = new Map<string, number>();
  const firstIntents: { key: string; drain: string; at: number }[] = [];
  const intended = new Set<string>();
  for (const ev of events) {
    if (ev.type === 'cap.changed') {
      steps.push({ at: ev.at, held: 0, due: 0, cap: ev.data.cap });
      continue;
    }
    if (ev.type === 'enumerate.finished') {
      const drain = `${ev.data.kind}:${ev.data.source}`;
      if (!listedAt.has(drain)) listedAt.set(drain, ev.at);
      continue;
    }
    if (!('id' in ev.data) || !('kind' in ev.data)) continue;
    const d = ev.data as { kind: string; source: string; id: number };
    const key = `${d.kind}:${d.id}`;
    if (ev.type === 'move.intent') {
      if (!holding.has(key)) step(ev.at, 1, 0);
      holding.set(key, 'intent');
      const from = dueFrom.get(key);
      if (from !== undefined) {
        dueFrom.delete(key);
        if (from < ev.at) {
          step(from, 0, 1);
          step(ev.at, 0, -1);
        }
      }
      if (!intended.has(key)) {
        intended.add(key);
        firstIntents.push({ key, drain: `${d.kind}:${d.source}`, at: ev.at });
      }
    } else if (isMoveStart(ev)) {
      if (!holding.has(key)) step(ev.at, 1, 0);
      holding.set(key, 'move');
    } else if (isMoveEnd(ev) || (NO_MOVE.has(ev.type) && holding.get(key) === 'intent')) {
      if (holding.delete(key)) step(ev.at, -1, 0);
    }
    if (ev.type === 'item.retry') dueFrom.set(key, ev.data.nextAttemptAt);
  }
  for (const f of firstIntents) {
    const listed = listedAt.get(f.drain);
    if (listed !== undefined && listed < f.at) {
      step(listed, 0, 1);
      step(f.at, 0, -1);
    }
  }
  const start = (events[0] as AuditEvent).at;
  const end = (events[events.length - 1] as AuditEvent).at;
  // Retries still waiting when the log ends are due until then.
  for (const from of dueFrom.values()) if (from < end) step(from, 0, 1);
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
