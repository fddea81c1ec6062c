/**
 * `shardmove control`: the operator's live overrides of a run, written into its checkpoint, where
 * the running process reads them at every turn of its scheduling loop (no restart, no plan change).
 * The run lock is not taken: the control is meant for a checkpoint that a live run holds.
 *
 * A stop (`--stop`) is written only while a run holds the checkpoint: it stops that run (or the one
 * that takes its lock over), which consumes it when it ends. Written with no run going, it would only
 * stop the next `run` at once. A revert holds its forward run's checkpoint too: a stop given for the
 * forward checkpoint while a revert holds it is written into the revert's, which that process reads.
 */
import { existsSync } from 'node:fs';
import type { StopRequest } from '../../events/vocabulary.js';
import type { LockView } from '../../report/status.js';
import { CONSOLE_PAUSE } from '../../events/hold.js';
import { busyRefusal } from '../../store/busy.js';
import type { Checkpoint } from '../../store/checkpoint.js';
import type { RunControl } from '../../store/types.js';
import type { ThresholdBy, ThresholdOverride } from '../../store/thresholds.js';
import { revertCheckpointPath } from '../paths.js';
import { applyThresholds } from './thresholds-control.js';
import type { ThresholdChange, ThresholdDone } from './thresholds-control.js';
import { lockHolder, openExistingCheckpoint, planAutoOf, planCapOf } from '../status.js';
import type { PlanGiven } from '../status.js';

export interface ControlChange {
  /** A cap other than the plan's; null goes back to the plan's `move.concurrency`. */
  concurrency?: number | null;
  paused?: boolean;
  /** Ask the run holding the checkpoint to stop (`--stop`). */
  stop?: true;
  /** Thresholds to change live (`--breaker`, `--rule`, `--latency-p90`), and who changes them. */
  thresholds?: { changes: ThresholdChange[]; by: ThresholdBy };
  /** The change comes from the web console (`shardmove serve`): its pause and stop say so, and so does its event. */
  via?: 'console';
}

/** What became of a `--stop`. */
export type StopAnswer =
  /** Written now: the run stops once nothing is in flight. */
  | { kind: 'asked'; stop: StopRequest }
  /** A stop was already asked for and waits: nothing written. */
  | { kind: 'already'; stop: StopRequest }
  /** No run holds the checkpoint (none, or its holder is gone; `ended`: its final state): nothing written. */
  | { kind: 'no run'; ended: string | null };

export interface ControlResult {
  /** The checkpoint changed or read: the one given, or a revert's holding it (`--stop`). */
  file: string;
  /** The overrides before the change, and after it. */
  before: RunControl;
  control: RunControl;
  /** The plan's `move.concurrency`: the plan's given, else the one the run recorded (null: unknown). */
  planConcurrency: number | null;
  /** The plan's `move.concurrency` is `auto` (../status.ts planAutoOf). */
  planAuto: boolean;
  /** The live process that will apply the change, if one holds the checkpoint. */
  runner: LockView | null;
  /** With `--stop`: whether it was asked for. */
  stop?: StopAnswer;
  /** The thresholds changed now, each before and after; empty when none was asked for. */
  thresholds: ThresholdDone[];
  /** Why the thresholds asked for were refused (nothing was written then); empty otherwise. */
  refused: string[];
  /** The thresholds set live in force after the change, with who set them and when. */
  inForce: ThresholdOverride[];
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
  if (change.stop) return applyStop(stopTarget(file), now, plan, change.via);
  const changing = change.concurrency !== undefined || change.paused !== undefined;
  const asked = change.thresholds && change.thresholds.changes.length > 0 ? change.thresholds : null;
  const store = openExistingCheckpoint(file, { readOnly: !changing && !asked });
  try {
    const before = store.readControl();
    const base = {
      file,
      before,
      planConcurrency: planCapOf(store, plan),
      planAuto: planAutoOf(store, plan),
      runner: lockHolder(store),
    };
    const apply = (): ControlResult => {
      // The thresholds are checked first: one refused writes nothing, the cap and the pause included.
      const t = asked ? applyThresholds(store, asked.changes, now, asked.by) : { ok: true as const, done: [] };
      if (!t.ok)
        return {
          ...base,
          control: before,
          thresholds: [],
          refused: t.refusals,
          inForce: store.readThresholds().overrides,
        };
      const control = changing
        ? store.writeControl(
            {
              concurrency: change.concurrency,
              paused: change.paused,
              ...(change.via === 'console' && change.paused === true ? { pausedBy: CONSOLE_PAUSE } : {}),
              ...(change.via ? { via: change.via } : {}),
            },
            now,
          )
        : before;
      return { ...base, control, thresholds: t.done, refused: [], inForce: store.readThresholds().overrides };
    };
    // A read changes nothing, and a read-only connection takes no write transaction.
    return changing || asked ? store.batch(apply) : apply();
  } catch (err) {
    throw busyRefusal(err, store);
  } finally {
    store.close();
  }
}

/**
 * Writes a stop request, in one transaction with the look at the lock, so that a run ending at that
 * moment cannot leave a request behind for the next one.
 */
function applyStop(file: string, now: number, plan: PlanGiven | null, via?: 'console'): ControlResult {
  const store = openExistingCheckpoint(file, { readOnly: false });
  try {
    return store.batch((): ControlResult => {
      const before = store.readControl();
      const runner = lockHolder(store);
      const base = {
        file,
        before,
        control: before,
        planConcurrency: planCapOf(store, plan),
        planAuto: planAutoOf(store, plan),
        runner,
        thresholds: [],
        refused: [],
        inForce: store.readThresholds().overrides,
      };
      if (!runner || runner.alive === false) return { ...base, stop: { kind: 'no run', ended: endedState(store) } };
      if (before.stop) return { ...base, stop: { kind: 'already', stop: before.stop } };
      const control = store.writeControl(
        via === 'console' ? { stop: { by: 'console' }, via } : { stop: { by: 'control' } },
        now,
      );
      return { ...base, control, stop: { kind: 'asked', stop: control.stop! } };
    });
  } catch (err) {
    throw busyRefusal(err, store);
  } finally {
    store.close();
  }
}

/**
 * The checkpoint a stop is for: the one given, or the revert's beside it when a revert holds both
 * (the same process holds the forward lock and the revert's).
 */
function stopTarget(file: string): string {
  const revert = revertCheckpointPath(file);
  if (revert === file || !existsSync(revert)) return file;
  const forward = openExistingCheckpoint(file, { readOnly: true });
  let holder: LockView | null;
  try {
    holder = lockHolder(forward);
  } finally {
    forward.close();
  }
  if (!holder || holder.alive === false) return file;
  const other = openExistingCheckpoint(revert, { readOnly: true });
  try {
    const r = lockHolder(other);
    return r && r.pid === holder.pid && r.host === holder.host ? revert : file;
  } finally {
    other.close();
  }
}

/** The final state a run that holds no lock ended in, or null (interrupted, or never started). */
function endedState(store: Pick<Checkpoint, 'loadRun'>): string | null {
  const snap = store.loadRun()?.snapshot as { status?: string; value?: unknown } | undefined;
  return snap?.status === 'done' ? String(snap.value) : null;
}
