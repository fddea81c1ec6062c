/** Errors of `shardmove copy`, with the stable codes src/cli/main.ts maps to exit codes. */
import { ShardmoveError, defineErrorCodes } from '../shared/errors.js';

/** The error codes of `shardmove copy`, with their meanings for operators (docs/errors.md). */
export const COPY_CODES = defineErrorCodes('copy', {
  SHARDMOVE_COPY_REFUSED:
    'A guardrail of `shardmove copy` refused before anything was written; the message names the rule (docs/copy.md: Guardrails) and what to do.',
  SHARDMOVE_COPY_FAILED:
    "A command of the copy failed (rsync, tar, git, ssh): the message names it and quotes its stderr's last lines.",
});

/** Code of CopyRefusedError (exit 4). */
export const COPY_REFUSED = COPY_CODES.SHARDMOVE_COPY_REFUSED;
/** Code of CopyFailedError (exit 1). */
export const COPY_FAILED = COPY_CODES.SHARDMOVE_COPY_FAILED;

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
