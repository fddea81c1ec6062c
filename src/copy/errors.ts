/** Errors of `shardmove copy`, with the stable codes src/cli/main.ts maps to exit codes. */
import { ShardmoveError } from '../shared/errors.js';

/** Code of CopyRefusedError (exit 4). */
export const COPY_REFUSED = 'SHARDMOVE_COPY_REFUSED';
/** Code of CopyFailedError (exit 1). */
export const COPY_FAILED = 'SHARDMOVE_COPY_FAILED';

/**
 * A guardrail refused the copy before anything was written. `rule` names the guardrail (docs/copy.md:
 * "Guardrails"); the message says what to do.
 */
export class CopyRefusedError extends ShardmoveError<typeof COPY_REFUSED> {
  constructor(
    readonly rule: string,
    message: string,
  ) {
    super(COPY_REFUSED, `copy refused [${rule}]: ${message}`);
  }
}

/** A command of the copy failed (rsync, tar, git, ssh): which one and its stderr's last lines. */
export class CopyFailedError extends ShardmoveError<typeof COPY_FAILED> {
  constructor(message: string) {
    super(COPY_FAILED, message);
  }
}
