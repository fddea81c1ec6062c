/** Errors of `shardmove twin`, with their stable codes (exit 1; a real run's checkpoint is CHECKPOINT_MODE, exit 4). */
import { ShardmoveError, defineErrorCodes } from '../shared/errors.js';

/** The error codes of `shardmove twin`, with their meanings for operators (docs/errors.md). */
export const TWIN_CODES = defineErrorCodes('twin', {
  SHARDMOVE_TWIN_UNFINISHED:
    'The checkpoint holds no finished dry run (none yet, failed, or stopped midway): an unfinished one may have listed only part of the instance.',
  SHARDMOVE_TWIN_WRITE_FAILED:
    'The seed or its items file could not be written; the message names the file and the cause.',
});

export const TWIN_UNFINISHED = TWIN_CODES.SHARDMOVE_TWIN_UNFINISHED;
export const TWIN_WRITE_FAILED = TWIN_CODES.SHARDMOVE_TWIN_WRITE_FAILED;

export type TwinErrorCode = keyof typeof TWIN_CODES;

export class TwinError extends ShardmoveError<TwinErrorCode> {}
