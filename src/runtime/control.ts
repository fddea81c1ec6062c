/**
 * `shardmove control`: the operator's live overrides of a run, written into its checkpoint, where
 * the running process reads them at every turn of its scheduling loop (no restart, no plan change).
 * The run lock is not taken: the control is meant for a checkpoint that a live run holds.
 */
import { existsSync } from 'node:fs';
import { openCheckpoint } from '../store/checkpoint.js';
import type { RunControl } from '../store/types.js';
import { NO_CHECKPOINT, RuntimeError } from './errors.js';
import { isAlive, thisHost } from './process.js';

export interface ControlChange {
  /** A cap other than the plan's; null goes back to the plan's `move.concurrency`. */
  concurrency?: number | null;
  paused?: boolean;
}

export interface ControlResult {
  control: RunControl;
  /** The live process that will apply the change, if one holds the checkpoint. */
  runner: { pid: number; host: string; alive: boolean | null } | null;
}

/**
 * Reads (no change given) or changes the overrides in the checkpoint at `file`. Throws
 * SHARDMOVE_NO_CHECKPOINT when the file does not exist: a plan that never ran has nothing to steer,
 * and creating a checkpoint here would make `run` start from it.
 */
export function applyControl(file: string, change: ControlChange, now: number): ControlResult {
  if (!existsSync(file)) {
    throw new RuntimeError(NO_CHECKPOINT, `no checkpoint at ${file}: the plan has not run yet (or pass --state FILE)`);
  }
  const changing = change.concurrency !== undefined || change.paused !== undefined;
  const store = openCheckpoint(file, { readOnly: !changing, busyTimeoutMs: 10_000 });
  try {
    const control = changing ? store.writeControl(change, now) : store.readControl();
    const holder = store.readLock();
    const runner = holder ? { pid: holder.pid, host: holder.host, alive: holder.host === thisHost() ? isAlive(holder.pid) : null } : null;
    return { control, runner };
  } finally {
    store.close();
  }
}
