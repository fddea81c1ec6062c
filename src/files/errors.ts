/** Errors of writing a command's output files, with their stable codes. */
import { ShardmoveError, defineErrorCodes } from '../shared/errors.js';

/** The output files' error codes, with their meanings for operators (docs/errors.md). */
export const FILES_CODES = defineErrorCodes('files', {
  SHARDMOVE_OUTPUT_NOT_A_FILE:
    'An output path is a symlink, a directory, a FIFO, a socket or a device, which shardmove never replaces (a rename would put a regular file in its place); the message names the path and what it is. Nothing was written there. Name a regular file, or `-` where the option takes standard output.',
  SHARDMOVE_OUTPUT_EXISTS:
    'An output that is never replaced without `--force` (the reviewed list of `run --dry-run --items`) appeared while the command ran; it was left as it was.',
});

export const OUTPUT_NOT_A_FILE = FILES_CODES.SHARDMOVE_OUTPUT_NOT_A_FILE;
export const OUTPUT_EXISTS = FILES_CODES.SHARDMOVE_OUTPUT_EXISTS;

export type OutputErrorCode = keyof typeof FILES_CODES;

/** An output that cannot be written where it is named, for the reason the message gives. */
export class OutputError extends ShardmoveError<OutputErrorCode> {}
