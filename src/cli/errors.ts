/** Errors of the commands themselves, with their stable codes. */

/** Code of ArgsError. */
export const ARGS_INVALID = 'SHARDMOVE_ARGS_INVALID';

/** Bad command-line options: main.ts prints the message and exits with EXIT.invalid (2). */
export class ArgsError extends Error {
  readonly code = ARGS_INVALID;
  constructor(message: string) {
    super(message);
    this.name = 'ArgsError';
  }
}
