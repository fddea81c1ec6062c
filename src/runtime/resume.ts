/**
 * How a run resumes: restore the saved snapshot, start the machine over from pre-flight, or refuse.
 * Restores are not transitions: XState re-invokes the step that was in flight and re-runs no entry
 * actions, and every step is safe to repeat because it picks up from the item rows.
 */
import type { Snapshot } from 'xstate';
import { MACHINE_VERSION } from '../machine/machine.js';
import type { RunContext } from '../machine/types.js';
import type { SavedRun } from '../store/types.js';
import { PLAN_CHANGED, RuntimeError } from './errors.js';

export interface Start {
  kind: 'fresh' | 'restore';
  snapshot: Snapshot<unknown> | undefined;
  previousWeights: Record<string, number> | null;
  reason?: string;
}

/**
 * Restore, start over, or refuse. A changed plan or machine version is refused unless accepted; an
 * accepted change, a failed run, a run that ended with quarantined items and a finished rehearsal start the machine again from pre-flight
 * (every step is idempotent and the item rows keep the progress), carrying the previous weights.
 */
export function chooseStart(
  saved: SavedRun | null,
  hash: string,
  opts: { acceptPlanChange: boolean; dryRun: boolean; released?: number },
): Start {
  if (!saved) return { kind: 'fresh', snapshot: undefined, previousWeights: null };
  const snap = saved.snapshot as { status?: string; value?: unknown; context?: Partial<RunContext> } | null;
  const previousWeights = snap?.context?.previousWeights ?? null;
  const changes: string[] = [];
  if (saved.planHash !== hash) changes.push('the plan changed since the checkpoint was written');
  if (saved.machineVersion !== MACHINE_VERSION)
    changes.push(`the checkpoint was written by machine version ${saved.machineVersion}, this is ${MACHINE_VERSION}`);
  if (changes.length > 0) {
    if (!opts.acceptPlanChange) {
      throw new RuntimeError(
        PLAN_CHANGED,
        `refusing to resume: ${changes.join('; ')}. Run again with --accept-plan-change to resume with this plan, or use a new --state file`,
      );
    }
    return { kind: 'fresh', snapshot: undefined, previousWeights, reason: `accepted: ${changes.join('; ')}` };
  }
  // Released items may belong to a (kind, source) whose drain already ended: every drain runs again.
  if (opts.released)
    return {
      kind: 'fresh',
      snapshot: undefined,
      previousWeights,
      reason: `retrying ${opts.released} quarantined item(s)`,
    };
  if (snap?.status === 'done' && snap.value === 'failed')
    return { kind: 'fresh', snapshot: undefined, previousWeights, reason: 'resuming a failed run' };
  // Quarantined items may be released later (a stuck move ended): look again rather than replay the end.
  if (snap?.status === 'done' && snap.value === 'doneWithQuarantine' && !opts.dryRun) {
    return {
      kind: 'fresh',
      snapshot: undefined,
      previousWeights,
      reason: 'looking again at a run that ended with quarantined items',
    };
  }
  if (snap?.status === 'done' && opts.dryRun)
    return { kind: 'fresh', snapshot: undefined, previousWeights: null, reason: 'repeating a finished rehearsal' };
  return { kind: 'restore', snapshot: saved.snapshot as Snapshot<unknown>, previousWeights };
}
