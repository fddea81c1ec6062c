/**
 * The audit names older releases wrote into a checkpoint's log, and what they are read as now: the
 * one table through which every reader of the log (the store's `readEvents` and `lastEventsOf`, and
 * so `status`, `report`, `twin`, `revert`, `--events`, the metrics file) takes an old checkpoint.
 * Nothing rewrites the log: an old checkpoint stays as it was written, and reads as if written today.
 *
 * A name changed when the audit log took the name `run --events` has for the same concept; a type
 * retired when what it recorded found another home (the plan is kept in the run row, schema 17).
 */
import type { AuditEvent, AuditType } from './vocabulary.js';

/** What an old name is read as: today's type (null: retired, skipped by every reader) and its renamed fields. */
interface LegacyName {
  type: AuditType | null;
  fields?: Readonly<Record<string, string>>;
}

/** Old type name (or a type whose fields were renamed) -> how it reads now. */
export const LEGACY_AUDIT_NAMES: Readonly<Record<string, LegacyName>> = {
  'step.entered': { type: 'step.started' },
  'lock.takeover': { type: 'lock.taken_over' },
  'item.quarantined': { type: 'move.quarantined' },
  'window.closed': { type: 'window.closed', fields: { nextOpenAt: 'nextOpensAt' } },
  'run.finished': { type: 'run.finished', fields: { state: 'outcome' } },
  'plan.recorded': { type: null },
};

/** How an old name reads now, or undefined for a name of today (own keys only: no name is `toString`). */
export function legacyName(type: string): LegacyName | undefined {
  return Object.hasOwn(LEGACY_AUDIT_NAMES, type) ? LEGACY_AUDIT_NAMES[type] : undefined;
}

/** Types that no reader sees: old checkpoints may hold them, nothing writes them any more. */
export const RETIRED_AUDIT_TYPES: readonly string[] = Object.entries(LEGACY_AUDIT_NAMES)
  .filter(([, n]) => n.type === null)
  .map(([old]) => old);

/** Every name the log may hold `types` under: each type and the old names read as it (for a query by type). */
export function storedNamesOf(types: readonly AuditType[]): string[] {
  const old = Object.entries(LEGACY_AUDIT_NAMES)
    .filter(([name, n]) => n.type !== null && types.includes(n.type) && !types.includes(name as AuditType))
    .map(([name]) => name);
  return [...types, ...old];
}

/** A row of the log as stored: the type as written and the data parsed. */
export interface StoredRow {
  seq: number;
  at: number;
  type: string;
  data: unknown;
}

/**
 * A stored row under today's names (a row already written under them comes back as it is). Retired
 * types are never passed here: the queries leave them out, so that a page of events stays full.
 */
export function readAuditRow(row: StoredRow): AuditEvent {
  const legacy = legacyName(row.type);
  if (!legacy?.type) return row as AuditEvent;
  let data = row.data;
  if (legacy.fields && data !== null && typeof data === 'object') {
    const renamed: Record<string, unknown> = { ...(data as Record<string, unknown>) };
    for (const [from, to] of Object.entries(legacy.fields)) {
      if (!(from in renamed) || to in renamed) continue;
      renamed[to] = renamed[from];
      delete renamed[from];
    }
    data = renamed;
  }
  return { ...row, type: legacy.type, data } as AuditEvent;
}
