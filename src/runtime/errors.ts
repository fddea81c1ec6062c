/** Errors of the runtime, with the stable codes src/cli/main.ts maps to exit codes. */
import { ShardmoveError, defineErrorCodes } from '../shared/errors.js';
import { INTERNAL } from '../machine/errors.js';
import { LOCKED } from '../store/errors.js';
import { WEIGHTS_CHANGED } from '../actors/index.js';

/** The runtime's error codes, with their meanings for operators (docs/errors.md). */
export const RUNTIME_CODES = defineErrorCodes('runtime', {
  SHARDMOVE_PLAN_CHANGED:
    'The checkpoint was started with another plan (or another machine version); pass --accept-plan-change if the change is intended. Nothing was written.',
  SHARDMOVE_CHECKPOINT_MODE:
    "The checkpoint holds another kind of run (a dry run's for a real run, a revert's, or the reverse); give this run its own --state. Nothing was written.",
  SHARDMOVE_MOVES_IN_FLIGHT:
    '`revert` refuses while moves of the forward run are in flight or being posted: they would land after it read the checkpoint. Pause the run, wait, then revert.',
  SHARDMOVE_INSTANCE_CHANGED:
    "`revert` found no record of the forward run's moves on this instance (another instance behind the plan's URL, or one restored from a backup). No flag overrides it; nothing was written.",
  SHARDMOVE_CHECKPOINT_ELSEWHERE:
    "The plan's checkpoint is not beside the plan, where it is looked for now, but one of its name is under the current directory, where an older shardmove put it: the message says how to move it or name it with --state. Nothing was written.",
  SHARDMOVE_ITEMS_FILE_INVALID:
    '`run --only FILE`, `run --dry-run --items FILE`: the item list cannot be read or used (not a file, not UTF-8, a malformed line, a line whose check does not match because it was changed or typed by hand, an item listed twice, an item the plan does not move); every problem is named at its file:line. Nothing was written (exit 2).',
  SHARDMOVE_ITEMS_OTHER_PLAN:
    "`run --only FILE`: the list was made under another plan (its plan_hash is not the plan's now; both are named, and the fields that changed when the dry run that made it is still beside the plan). Make the list again with `run --dry-run --items`. Nothing was written (exit 4).",
  SHARDMOVE_ITEMS_OTHER_LIST:
    'The checkpoint holds the run of another item list (`run --only`), or a run that lists its sources: a reviewed list runs in a checkpoint of its own, and only with that list. Give it its own --state. Nothing was written (exit 4).',
  SHARDMOVE_NO_CHECKPOINT:
    'There is no checkpoint for this plan (it never ran, or --state names another file); nothing to show, steer or restore.',
  SHARDMOVE_DRAIN_RUNNING:
    'Another live run on this host drains a storage of the same instance under another checkpoint (its pid, checkpoint, plan file and start are named, from the per-host registry of drains): two drains of one storage would fight over its items. Nothing was written (exit 4). Wait for it, `control --stop` it, or resume it with its own checkpoint; a record whose process is gone is taken over by itself.',
});

/** The checkpoint was written for another plan or machine version (exit 4 unless --accept-plan-change). */
export const PLAN_CHANGED = RUNTIME_CODES.SHARDMOVE_PLAN_CHANGED;
/** The checkpoint holds the other kind of run: a dry run's for a real run, or the reverse (exit 4). */
export const CHECKPOINT_MODE = RUNTIME_CODES.SHARDMOVE_CHECKPOINT_MODE;
/**
 * `revert` refuses a forward run that still has moves of its own in flight or being posted: they
 * would land after the revert read the checkpoint and stay on the storage it empties (exit 4).
 */
export const MOVES_IN_FLIGHT = RUNTIME_CODES.SHARDMOVE_MOVES_IN_FLIGHT;
/**
 * `revert` refuses an instance that holds no record of the forward run's moves: another instance
 * behind the plan's URL, or one restored from a backup (exit 4). No flag overrides it.
 */
export const INSTANCE_CHANGED = RUNTIME_CODES.SHARDMOVE_INSTANCE_CHANGED;
/** `revert` and `weights restore` refuse to undo a later change of the weights (exit 4): the actors' code. */
export { WEIGHTS_CHANGED };
/**
 * The plan's checkpoint is not where it is looked for now (beside the plan), but one of its name is
 * where an older shardmove put it by default (under the current directory): exit 4, nothing written.
 */
export const CHECKPOINT_ELSEWHERE = RUNTIME_CODES.SHARDMOVE_CHECKPOINT_ELSEWHERE;
/** An item list that cannot be read or applied: each problem at its file:line (exit 2). */
export const ITEMS_FILE_INVALID = RUNTIME_CODES.SHARDMOVE_ITEMS_FILE_INVALID;
/** `run --only`: the list was made under another plan (exit 4). */
export const ITEMS_OTHER_PLAN = RUNTIME_CODES.SHARDMOVE_ITEMS_OTHER_PLAN;
/** A checkpoint of another item list, or of a listing run, for `run --only`, or the reverse (exit 4). */
export const ITEMS_OTHER_LIST = RUNTIME_CODES.SHARDMOVE_ITEMS_OTHER_LIST;
/** `status` found no checkpoint for the plan (exit 1). */
export const NO_CHECKPOINT = RUNTIME_CODES.SHARDMOVE_NO_CHECKPOINT;
/** Another live run on this host drains one of the plan's sources on the same instance (exit 4). */
export const DRAIN_RUNNING = RUNTIME_CODES.SHARDMOVE_DRAIN_RUNNING;
/** The machine stopped in a state it should never reach (a bug); the machine's own code for bugs. */
export { INTERNAL };
/** Another live process holds the checkpoint's lock (exit 4): the store's LockedError, passed through. */
export { LOCKED };

export type RuntimeErrorCode =
  | typeof PLAN_CHANGED
  | typeof CHECKPOINT_MODE
  | typeof CHECKPOINT_ELSEWHERE
  | typeof MOVES_IN_FLIGHT
  | typeof INSTANCE_CHANGED
  | typeof NO_CHECKPOINT
  | typeof ITEMS_FILE_INVALID
  | typeof ITEMS_OTHER_PLAN
  | typeof ITEMS_OTHER_LIST
  | typeof DRAIN_RUNNING
  | typeof INTERNAL;

/** The runtime refuses to go on; match on `code`. */
export class RuntimeError extends ShardmoveError<RuntimeErrorCode> {}
