/** Errors of `shardmove twin`, with their stable codes (exit 1; a real run's checkpoint is CHECKPOINT_MODE, exit 4). */
import { ShardmoveError } from '../shared/errors.js';

/** The checkpoint holds no finished dry run: an unfinished one may have listed only part of the instance. */
export const TWIN_UNFINISHED = 'SHARDMOVE_TWIN_UNFINISHED';
/** The seed or its items file could not be written (the message names the file and the cause). */
export const TWIN_WRITE_FAILED = 'SHARDMOVE_TWIN_WRITE_FAILED';

export type TwinErrorCode = typeof TWIN_UNFINISHED | typeof TWIN_WRITE_FAILED;

export class TwinError extends ShardmoveError<TwinErrorCode> {}
