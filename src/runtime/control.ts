/**
 * `shardmove control`: the operator's live overrides of a run, written into its checkpoint, where
 * the running process reads them at every turn of its scheduling loop (no restart, no plan change).
 * The run lock is not taken: the control is meant for a checkpoint that a live run holds.
 */
import type { LockView } from '../report/status.js';
import type { RunControl } from '../store/types.js';
import { lockHolder, openExistingCheckpoint, planCapOf } from './status.js';
import type { PlanGiven } from './status.js';

export interface ControlChange {
  /** A cap other than the plan's; null goes back to the plan's `move.concurrency`. */
  concurrency?: number | null;
  paused?: boolean;
}

export interface ControlResult {
  /** The overrides before the change, and after it. */
  before: RunControl;
  control: RunControl;
  /** The plan's `move.concurrency`: the plan's given, else the one the run recorded (null: unknown). */
  planConcurrency: number | null;
  /** The live process that will apply the change, if one holds the checkpoint. */
  runner: LockView | null;
}

/**
 * Reads (no change given) or changes the overrides in the checkpoint at `file`. Throws
 * SHARDMOVE_NO_CHECKPOINT when the file does not exist: a plan that never ran has nothing to steer,
 * and creating a checkpoint here would make `run` start from it.
 */
export function applyControl(
  file: string,
  change: ControlChange,
  now: number,
  plan: PlanGiven | null = null,
): ControlResult {
  const changing = change.concurrency !== undefined || change.paused !== undefined;
  const store = openExistingCheckpoint(file, { readOnly: !changing });
  try {
    const before = store.readControl();
    const control = changing ? store.writeControl(change, now) : before;
    return { before, control, planConcurrency: planCapOf(store, plan), runner: lockHolder(store) };
  } finally {
    store.close();
  }
}
