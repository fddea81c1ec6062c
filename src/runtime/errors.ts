/** Errors of the runtime, with the stable codes src/cli/main.ts maps to exit codes. */

export class RuntimeError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'RuntimeError';
    this.code = code;
  }
}

/** The checkpoint was written for another plan or machine version (exit 4 unless --accept-plan-change). */
export const PLAN_CHANGED = 'SHARDMOVE_PLAN_CHANGED';
/** Another live process holds the checkpoint's lock (exit 4). Raised by the store. */
export const LOCKED = 'SHARDMOVE_LOCKED';
/** `status` found no checkpoint for the plan (exit 1). */
export const NO_CHECKPOINT = 'SHARDMOVE_NO_CHECKPOINT';
/** The machine stopped in a state it should never reach (a bug). */
export const INTERNAL = 'SHARDMOVE_INTERNAL';
