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
 * The plan's checkpoint is not where it is looked for now (beside the plan), but one of its name is
 * where an older shardmove put it by default (under the current directory): exit 4, nothing written.
 */
export const CHECKPOINT_ELSEWHERE = 'SHARDMOVE_CHECKPOINT_ELSEWHERE';
/** `status` found no checkpoint for the plan (exit 1). */
export const NO_CHECKPOINT = 'SHARDMOVE_NO_CHECKPOINT';
/** The machine stopped in a state it should never reach (a bug); the machine's own code for bugs. */
export { INTERNAL };
/** Another live process holds the checkpoint's lock (exit 4): the store's LockedError, passed through. */
export { LOCKED };

export type RuntimeErrorCode =
  | typeof PLAN_CHANGED
  | typeof CHECKPOINT_MODE
  | typeof CHECKPOINT_ELSEWHERE
  | typeof MOVES_IN_FLIGHT
  | typeof NO_CHECKPOINT
  | typeof INTERNAL;

/** The runtime refuses to go on; match on `code`. */
export class RuntimeError extends ShardmoveError<RuntimeErrorCode> {}
