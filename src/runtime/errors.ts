/** Errors of the runtime, with the stable codes src/cli/main.ts maps to exit codes. */
import { ShardmoveError } from '../errors/base.js';
import { INTERNAL } from '../machine/errors.js';
import { LOCKED } from '../store/errors.js';

/** The checkpoint was written for another plan or machine version (exit 4 unless --accept-plan-change). */
export const PLAN_CHANGED = 'SHARDMOVE_PLAN_CHANGED';
/** The checkpoint holds the other kind of run: a dry run's for a real run, or the reverse (exit 4). */
export const CHECKPOINT_MODE = 'SHARDMOVE_CHECKPOINT_MODE';
/**
 * `revert` refuses a forward run that still has moves of its own in flight or being posted: they
 * would land after the revert read the checkpoint and stay on the storage it empties (exit 4).
 */
export const MOVES_IN_FLIGHT = 'SHARDMOVE_MOVES_IN_FLIGHT';
/**
 * `revert` refuses an instance that holds no record of the forward run's moves: another instance
 * behind the plan's URL, or one restored from a backup (exit 4). No flag overrides it.
 */
export const INSTANCE_CHANGED = 'SHARDMOVE_INSTANCE_CHANGED';
/**
 * `revert` and `weights restore` refuse to write the weights of before a run over weights changed
 * since the run left them, unless `--overwrite-weights` (exit 4).
 */
export const WEIGHTS_CHANGED = 'SHARDMOVE_WEIGHTS_CHANGED';
/** `status` found no checkpoint for the plan (exit 1). */
export const NO_CHECKPOINT = 'SHARDMOVE_NO_CHECKPOINT';
/** The machine stopped in a state it should never reach (a bug); the machine's own code for bugs. */
export { INTERNAL };
/** Another live process holds the checkpoint's lock (exit 4): the store's LockedError, passed through. */
export { LOCKED };

export type RuntimeErrorCode =
  | typeof PLAN_CHANGED
  | typeof CHECKPOINT_MODE
  | typeof MOVES_IN_FLIGHT
  | typeof INSTANCE_CHANGED
  | typeof WEIGHTS_CHANGED
  | typeof NO_CHECKPOINT
  | typeof INTERNAL;

/** The runtime refuses to go on; match on `code`. */
export class RuntimeError extends ShardmoveError<RuntimeErrorCode> {}
