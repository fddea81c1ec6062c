/**
 * How a run resumes: restore the saved snapshot, start the machine over from pre-flight, or refuse.
 * Restores are not transitions: XState re-invokes the step that was in flight and re-runs no entry
 * actions, and every step is safe to repeat because it picks up from the item rows.
 *
 * A checkpoint's plan is fixed by the first thing the run did under it: a write to the instance
 * (the weights step, or any mutating request) or an item recorded. Until then a changed plan is
 * simply the plan of the next attempt: a pre-flight that refused (room, health, a rule's query)
 * wrote nothing, and the fixed plan must not be refused as "changed".
 */
import type { Snapshot } from 'xstate';
import { MACHINE_VERSION } from '../machine/machine.js';
import type { RunContext } from '../machine/types.js';
import type { CheckpointStore, RunMode, SavedRun, StatusSummary } from '../store/types.js';
import { PLAN_CHANGED, RuntimeError } from './errors.js';

export interface Start {
  kind: 'fresh' | 'restore';
  snapshot: Snapshot<unknown> | undefined;
  previousWeights: Record<string, number> | null;
  reason?: string;
  /** Said to the operator before the run goes on (a plan taken over from an attempt that did nothing). */
  note?: string;
  /**
   * The run goes on from an earlier process's work in this checkpoint (a restore, or a machine started
   * again over its items: after a failure, released items, an accepted plan change), which hooks and
   * notifications hear as a resume. False for a new checkpoint, an attempt that did nothing, a repeated rehearsal.
   */
  resumes?: boolean;
}

export interface StartOptions {
  acceptPlanChange: boolean;
  dryRun: boolean;
  released?: number;
  /** Whether the saved run fixed its plan (planFixed); a plan change before that is no change of a run. */
  fixed: () => boolean;
  /** The changed fields as `path: from -> to` lines; null when the checkpoint does not record its plan. */
  planChanges: () => string[] | null;
}

type SavedSnapshot = { status?: string; value?: unknown; context?: Partial<RunContext> } | null;

/** Steps at and after the first write of a real run: the weights step writes before anything else does. */
const WRITING_STEPS = new Set(['weights', 'drain', 'verify', 'geo', 'done']);

/**
 * Whether the saved run did what fixes its plan: a real run that reached its weights step (which
 * writes, and is saved as entered before it does), any item row, or any mutating request in the
 * audit trail. A dry run writes nothing: only its items fix its plan.
 */
export function planFixed(
  store: Pick<CheckpointStore, 'summary' | 'lastEventOf'>,
  saved: SavedRun,
  opts: { dryRun: boolean; now: number },
): boolean {
  const c = (saved.snapshot as SavedSnapshot)?.context;
  if (!opts.dryRun && (c?.weightsWritten === true || WRITING_STEPS.has(String(c?.step)))) return true;
  if (store.summary(opts.now).counts.some((x) => x.n > 0)) return true;
  return store.lastEventOf(['http.mutating']) !== null;
}

/**
 * Restore, start over, or refuse. A changed plan or machine version is refused unless accepted (or
 * the saved run had not fixed its plan yet); an accepted change, a failed run, a run that ended
 * with quarantined items and a finished rehearsal start the machine again from pre-flight (every
 * step is idempotent and the item rows keep the progress), carrying the previous weights.
 */
export function chooseStart(saved: SavedRun | null, hash: string, opts: StartOptions): Start {
  if (!saved) return { kind: 'fresh', snapshot: undefined, previousWeights: null };
  const snap = saved.snapshot as SavedSnapshot;
  const previousWeights = snap?.context?.previousWeights ?? null;
  const reasons: string[] = [];
  let details: string[] = [];
  if (saved.machineVersion !== MACHINE_VERSION)
    reasons.push(`the checkpoint was written by machine version ${saved.machineVersion}, this is ${MACHINE_VERSION}`);
  if (saved.planHash !== hash) {
    const changes = opts.planChanges();
    reasons.push(
      changes === null
        ? 'the plan changed since the checkpoint was written (which fields, this checkpoint cannot tell: an older shardmove wrote it)'
        : 'the plan changed since the checkpoint was written',
    );
    details = changes ?? [];
  }
  if (reasons.length > 0) {
    if (!opts.fixed()) {
      const what = details.length > 0 ? ` (${details.join('; ')})` : '';
      const note = `${reasons.join('; ')}${what}, but the last attempt wrote nothing to the instance and recorded no item: this run starts with this plan`;
      return { kind: 'fresh', snapshot: undefined, previousWeights, reason: note, note, resumes: false };
    }
    if (!opts.acceptPlanChange) {
      const listed = details.length > 0 ? `:\n${details.map((d) => `  ${d}`).join('\n')}\n` : '. ';
      throw new RuntimeError(
        PLAN_CHANGED,
        `refusing to resume: ${reasons.join('; ')}${listed}Run again with --accept-plan-change to resume with this plan, or use a new --state file`,
      );
    }
    const what = details.length > 0 ? ` (${details.join('; ')})` : '';
    return {
      kind: 'fresh',
      snapshot: undefined,
      previousWeights,
      reason: `accepted: ${reasons.join('; ')}${what}`,
      resumes: true,
    };
  }
  // Released items may belong to a (kind, source) whose drain already ended: every drain runs again.
  if (opts.released)
    return {
      kind: 'fresh',
      snapshot: undefined,
      previousWeights,
      reason: `retrying ${opts.released} quarantined item(s)`,
      resumes: true,
    };
  if (snap?.status === 'done' && snap.value === 'failed')
    return { kind: 'fresh', snapshot: undefined, previousWeights, reason: 'resuming a failed run', resumes: true };
  // Quarantined items may be released later (a stuck move ended): look again rather than replay the end.
  if (snap?.status === 'done' && snap.value === 'doneWithQuarantine' && !opts.dryRun) {
    return {
      kind: 'fresh',
      snapshot: undefined,
      previousWeights,
      reason: 'looking again at a run that ended with quarantined items',
      resumes: true,
    };
  }
  if (snap?.status === 'done' && opts.dryRun)
    return {
      kind: 'fresh',
      snapshot: undefined,
      previousWeights: null,
      reason: 'repeating a finished rehearsal',
      resumes: false,
    };
  return { kind: 'restore', snapshot: saved.snapshot as Snapshot<unknown>, previousWeights, resumes: true };
}

/**
 * A restore turned into a start from pre-flight when `reason` is given (a revert that took new
 * items drains them rather than replay its end); any other start as it is.
 */
export function startedOver(start: Start, reason: string | undefined): Start {
  if (!reason || start.kind !== 'restore') return start;
  return { ...start, kind: 'fresh', snapshot: undefined, reason, resumes: true };
}

const WHAT: Record<RunMode, string> = { run: 'run', 'dry-run': 'dry run', revert: 'revert' };

/**
 * The one line a resume prints before it goes on: which run (started when), how far it got, and
 * the checkpoint it was found in. Undefined for a start that carries nothing on (no saved run, or
 * one that never listed an item and is not restored).
 */
export function describeResume(a: {
  saved: SavedRun | null;
  start: Start;
  summary: Pick<StatusSummary, 'counts'>;
  mode: RunMode;
  file: string;
  now: number;
  /** The checkpoint's first `run.started` (the migration's start), before the saved context's own. */
  firstStartedAt?: number | null;
}): string | undefined {
  if (!a.saved) return undefined;
  const n = (states: string[]) =>
    a.summary.counts.filter((c) => states.includes(c.state)).reduce((sum, c) => sum + c.n, 0);
  const total = n(['pending', 'scheduling', 'in_flight', 'moved', 'left', 'quarantined']);
  if (a.start.kind === 'fresh' && total === 0) return undefined;
  const startedAt = a.firstStartedAt ?? (a.saved.snapshot as SavedSnapshot)?.context?.startedAt ?? null;
  const when =
    typeof startedAt === 'number'
      ? ` started ${new Date(startedAt).toISOString().replace(/\.\d+Z$/, 'Z')} (${ago(a.now - startedAt)} ago)`
      : '';
  const parts: string[] = [];
  if (total === 0) parts.push('no item listed yet');
  else if (a.mode === 'dry-run') parts.push(`${total} item(s) listed`);
  else parts.push(`${n(['moved'])} of ${total} item(s) ${a.mode === 'revert' ? 'moved back' : 'moved'}`);
  const inFlight = n(['scheduling', 'in_flight']);
  if (inFlight > 0) parts.push(`${inFlight} in flight`);
  const quarantined = n(['quarantined']);
  if (quarantined > 0) parts.push(`${quarantined} quarantined`);
  const ended = (a.saved.snapshot as SavedSnapshot)?.status === 'done';
  // A finished run run again replays its end; a finished dry run is repeated; anything else goes on.
  const head =
    ended && a.start.kind === 'restore'
      ? `the ${WHAT[a.mode]}${when} has ended`
      : ended && a.mode === 'dry-run'
        ? `repeating the dry run${when}`
        : `resuming the ${WHAT[a.mode]}${when}`;
  return `${head}: ${parts.join(', ')} (checkpoint ${a.file})`;
}

/** A short elapsed time: 45s, 12m, 3h05m, 2d04h. */
function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}
