/**
 * What a checkpoint remembers of the plan it ran under, beyond its hash: the hashed fields themselves
 * (the plan without its credentials, src/plan/hash.ts), as a `plan.recorded` event written once per
 * process whose plan differs from the last one recorded. With them a later command can say which
 * fields changed, and `revert` can name the instance the forward run worked on (its URL as recorded
 * against the URL now) instead of only "the plan changed". The hash input never holds a credential:
 * tokens, token files and the Prometheus token are left out, and the plan refuses URLs with
 * credentials in them.
 */
import { canonicalJson, planHashInput } from '../plan/hash.js';
import type { Plan } from '../plan/types.js';
import type { CheckpointStore } from '../store/types.js';

/** The plan as a checkpoint recorded it. */
export interface RecordedPlan {
  hash: string;
  /** The hashed fields (src/plan/hash.ts `planHashInput`), as canonical JSON parsed back. */
  plan: Record<string, unknown>;
}

/** Every event in the log, however long: the record is written once per process, near its start. */
const WHOLE_LOG = Number.MAX_SAFE_INTEGER;

/** The plan this checkpoint recorded last, or null (a checkpoint written before plans were recorded). */
export function recordedPlan(store: Pick<CheckpointStore, 'lastEventOf'>): RecordedPlan | null {
  const e = store.lastEventOf(['plan.recorded'], WHOLE_LOG);
  return e ? { hash: e.data.hash, plan: e.data.plan } : null;
}

/** Records `plan` unless it is the one recorded last (a resume under the same plan writes nothing). */
export function recordPlan(
  store: Pick<CheckpointStore, 'lastEventOf' | 'appendEvent'>,
  plan: Plan,
  hash: string,
  at: number,
): void {
  if (recordedPlan(store)?.hash === hash) return;
  const fields = JSON.parse(canonicalJson(planHashInput(plan))) as Record<string, unknown>;
  store.appendEvent('plan.recorded', { hash, plan: fields }, at);
}

/** The hashed fields of `plan`, in the form `recordedPlan` returns them. */
export function planFields(plan: Plan): Record<string, unknown> {
  return JSON.parse(canonicalJson(planHashInput(plan))) as Record<string, unknown>;
}

/** One field that differs: its dotted path, and its value before and now (`(absent)` when missing). */
export interface FieldChange {
  path: string;
  before: string;
  now: string;
}

/** Values longer than this are cut (a list of rules, say): the path is what the operator needs. */
const MAX_VALUE = 60;

/** A value as a plan would write it, on one line: `8`, `http://gitlab:8080`, `[nfs-1, nfs-2]`, `(absent)`. */
function show(v: unknown): string {
  if (v === undefined) return '(absent)';
  const s = flow(v);
  return s.length > MAX_VALUE ? `${s.slice(0, MAX_VALUE - 3)}...` : s;
}

function flow(v: unknown): string {
  if (typeof v === 'string') return /^[\w./:@*+-]+$/.test(v) ? v : JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(flow).join(', ')}]`;
  if (!isObject(v)) return String(v);
  return `{${Object.entries(v)
    .map(([k, x]) => `${k}: ${flow(x)}`)
    .join(', ')}}`;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The fields that differ between two recorded plans, deepest differing path first found (pure). */
export function planChanges(before: unknown, now: unknown, path = ''): FieldChange[] {
  if (isObject(before) && isObject(now)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(now)])].sort();
    return keys.flatMap((k) => planChanges(before[k], now[k], path ? `${path}.${k}` : k));
  }
  if (canonicalJson(before ?? null) === canonicalJson(now ?? null)) return [];
  return [{ path: path || '(the whole plan)', before: show(before), now: show(now) }];
}
