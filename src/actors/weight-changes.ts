/**
 * Storage weights as a restore sees them, pure: what to PUT so the instance has the weights of
 * before a run again, and whether the instance's weights changed since the run left them (another
 * run, an operator), which a restore refuses to undo without `--overwrite-weights`. Used by the
 * revert's weights step (./revert.ts) and `shardmove weights restore` (runtime/weights-restore.ts).
 */
import type { InstanceApi } from '../api/types.js';
import type { RunContext } from '../machine/types.js';
import { checkMergedWeights } from '../plan/rules.js';
import type { Plan } from '../plan/types.js';
import { StepError, WEIGHTS_CHANGED, WEIGHTS_MISMATCH } from './errors.js';

/** One storage whose weight changes. */
export interface WeightChange {
  storage: string;
  from: number;
  to: number;
}

/**
 * What to PUT so the instance has `previous` again (pure). A PUT replaces the whole hash, so the
 * storages the instance has now but `previous` did not name are sent as 0, which is what an absent
 * storage weighed before (GitLab counts only the storages in the hash).
 */
export function restoreTarget(
  previous: Record<string, number>,
  current: Record<string, number>,
): { target: Record<string, number>; changes: WeightChange[] } {
  const target: Record<string, number> = {};
  for (const k of Object.keys(current)) target[k] = 0;
  Object.assign(target, previous);
  const changes = Object.keys(target)
    .sort()
    .map((storage) => ({ storage, from: current[storage] ?? 0, to: target[storage] ?? 0 }))
    .filter((c) => c.from !== c.to);
  return { target, changes };
}

/** Two weight hashes as GitLab weighs them: a storage absent from one weighs 0 there. */
export function sameWeights(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean {
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) if ((a[k] ?? 0) !== (b[k] ?? 0)) return false;
  return true;
}

/**
 * The weights a run may have left on the instance, as far as its checkpoint tells: what its weights
 * step reported (`newWeights`), and what it writes from the plan's weights over those it found (a
 * run killed between its PUT and the checkpoint write recorded only the first read).
 */
export function weightsLeftBy(
  context: Pick<Partial<RunContext>, 'previousWeights' | 'newWeights'> | undefined,
  plan: Pick<Plan, 'weights' | 'move'>,
): Record<string, number>[] {
  const out: Record<string, number>[] = [];
  if (context?.newWeights) out.push(context.newWeights);
  if (context?.previousWeights) out.push(checkMergedWeights(context.previousWeights, plan.weights, plan).merged);
  return out;
}

/** One storage of a later change: what the run left, what the instance has now, what a restore would write. */
export interface LaterWeight {
  storage: string;
  left: number;
  now: number;
  write: number;
}

/**
 * The instance's weights changed since the run left them (another run, or an operator, set them):
 * the storages that differ, or null when the weights are still those the run left, or already those
 * a restore writes. Pure. A restore over a later change is refused without `--overwrite-weights`.
 */
export function laterWeightChange(
  previous: Readonly<Record<string, number>>,
  left: readonly Readonly<Record<string, number>>[],
  current: Readonly<Record<string, number>>,
): LaterWeight[] | null {
  const { target } = restoreTarget(previous, current);
  if (sameWeights(current, target) || left.length === 0 || left.some((l) => sameWeights(l, current))) return null;
  const shown = left[0] as Readonly<Record<string, number>>;
  const keys = [...new Set([...Object.keys(shown), ...Object.keys(current), ...Object.keys(target)])].sort();
  return keys
    .map((storage) => ({
      storage,
      left: shown[storage] ?? 0,
      now: current[storage] ?? 0,
      write: target[storage] ?? 0,
    }))
    .filter((w) => w.left !== w.now || w.now !== w.write);
}

/** Refuses (SHARDMOVE_WEIGHTS_CHANGED, exit 4) to write the weights back over a later change. */
export function weightsChangedError(change: readonly LaterWeight[], by: string, flag: string): StepError {
  const rows = change.map((w) => `${w.storage}: ${by} left ${w.left}, now ${w.now}, would write ${w.write}`);
  return new StepError(
    WEIGHTS_CHANGED,
    `refusing: the instance's weights changed since ${by} ended (${rows.join('; ')}); writing the weights of before it would undo that later change. ` +
      `Nothing was written. If the change is to be undone too, run again with ${flag}`,
  );
}

/**
 * Writes the weights a restore chose and reads them back: SHARDMOVE_WEIGHTS_MISMATCH when the
 * instance reports others (a write it took only in part, or another writer at the same moment).
 * Returns the weights read back.
 */
export async function writeRestoredWeights(
  api: Pick<InstanceApi, 'setWeights' | 'getWeights'>,
  target: Readonly<Record<string, number>>,
): Promise<Record<string, number>> {
  await api.setWeights(target);
  const readBack = await api.getWeights();
  if (restoreTarget(target, readBack).changes.length > 0) {
    throw new StepError(
      WEIGHTS_MISMATCH,
      `the instance reports weights ${JSON.stringify(readBack)} after writing ${JSON.stringify(target)}`,
    );
  }
  return readBack;
}
