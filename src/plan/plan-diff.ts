/**
 * Which fields of a plan changed since a checkpoint was started: the checkpoint keeps the plan its
 * hash covers (hash.ts: the normalised plan without credentials) and a refused resume names every
 * field that differs, by its YAML path and with both values (`move.concurrency: 4 -> 8`).
 */
import { formatBytes } from './capacity-field.js';
import { formatPlanDuration } from '../time/durations.js';
import { flattenFields } from './field-table.js';
import { PLAN_FIELDS } from './plan-fields.js';

/** One field that differs between two plans. */
export interface PlanChange {
  /** Its YAML path (`move.concurrency`); inside a field with a shape of its own, the plan's keys. */
  path: string;
  from: string;
  to: string;
}

/** Values longer than this are cut: a line per change, however large a rules list is. */
const MAX_VALUE = 60;

/** The hash's key for the running stuck limit (hash.ts keeps the name it had before the split). */
const HASH_ALIASES: Record<string, string> = { 'poll.stuckAfterMs': 'poll.stuckRunningAfterMs' };

interface Named {
  path: string;
  unit: 'duration' | 'bytes' | null;
}

/** Property path (`poll.intervalMs`) to YAML path and whether it holds a duration, from the field table. */
const BY_PROPS: ReadonlyMap<string, Named> = (() => {
  const out = new Map<string, Named>();
  for (const f of flattenFields(PLAN_FIELDS)) {
    if (f.props.length === 0) continue;
    const segments = f.path.split('.');
    for (let i = 1; i < f.props.length; i++)
      out.set(f.props.slice(0, i).join('.'), { path: segments.slice(0, i).join('.'), unit: null });
    out.set(f.props.join('.'), { path: f.path, unit: f.field.type === 'duration' ? 'duration' : null });
  }
  return out;
})();

/**
 * The fields that differ between two plans as the checkpoint records them (canonical JSON of the
 * hash's input); objects are compared key by key, lists and values whole. Sorted by path.
 */
export function diffPlanRecords(before: string, after: string): PlanChange[] {
  const out: PlanChange[] = [];
  walk(JSON.parse(before) as unknown, JSON.parse(after) as unknown, [], out);
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function walk(a: unknown, b: unknown, props: string[], out: PlanChange[]): void {
  if (isObject(a) && isObject(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) walk(a[key], b[key], [...props, key], out);
    return;
  }
  if (JSON.stringify(a) === JSON.stringify(b)) return;
  const { path, unit } = nameOf(props);
  out.push({ path, from: show(a, unit), to: show(b, unit) });
}

/** The YAML path of a property path: the table's names as far as the table goes, then the plan's keys. */
function nameOf(props: string[]): Named {
  const joined = props.join('.');
  const exact = BY_PROPS.get(HASH_ALIASES[joined] ?? joined);
  if (exact) return exact;
  for (let i = props.length - 1; i > 0; i--) {
    const known = BY_PROPS.get(props.slice(0, i).join('.'));
    if (!known) continue;
    const keys = props.slice(i).map(keyOf);
    return { path: [known.path, ...keys.map((k) => k.key)].join('.'), unit: keys.at(-1)!.unit };
  }
  return { path: joined, unit: null };
}

/**
 * A key inside a field with a shape of its own, as the plan writes it: the plan holds durations in
 * ms and sizes in bytes under names that say so (`withinMs`, `keepFreeBytes`, a storage's room as
 * `bytes` or `query`), which the plan writes as `within`, `keep_free` and `free`.
 */
function keyOf(key: string): { key: string; unit: Named['unit'] } {
  if (key === 'bytes') return { key: 'free', unit: 'bytes' };
  if (key === 'query') return { key: 'free', unit: null };
  const m = /^(.+?)(Ms|Bytes)$/.exec(key);
  if (!m) return { key, unit: null };
  return { key: m[1]!.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), unit: m[2] === 'Ms' ? 'duration' : 'bytes' };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A value as a plan would write it, on one line: `8`, `30s`, `[nfs-1, nfs-2]`, `(absent)`. */
function show(v: unknown, unit: Named['unit']): string {
  if (v === undefined) return '(absent)';
  const text = inUnit(v, unit);
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 3)}...` : text;
}

/** A number in its unit (`10m`, `1.0 TiB`), anything else as `flow` writes it. */
function inUnit(v: unknown, unit: Named['unit']): string {
  if (typeof v !== 'number' || unit === null) return flow(v);
  return unit === 'duration' ? formatPlanDuration(v) : formatBytes(v);
}

function flow(v: unknown): string {
  if (typeof v === 'string') return /^[\w./:@*+-]+$/.test(v) ? v : JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(flow).join(', ')}]`;
  if (!isObject(v)) return String(v);
  const entries = Object.entries(v).map(([k, x]) => {
    const { key, unit } = keyOf(k);
    return `${key}: ${inUnit(x, unit)}`;
  });
  return `{${entries.join(', ')}}`;
}

/** The changes as the lines of a refusal, at most `max` of them and a count of the rest. */
export function formatPlanChanges(changes: readonly PlanChange[], max = 12): string[] {
  const lines = changes.slice(0, max).map((c) => `${c.path}: ${c.from} -> ${c.to}`);
  if (changes.length > max) lines.push(`... and ${changes.length - max} more`);
  return lines;
}
