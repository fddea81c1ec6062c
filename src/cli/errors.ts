/** Errors of the commands themselves, with their stable codes. */
import { ShardmoveError } from '../shared/errors.js';

/** Code of ArgsError. */
export const ARGS_INVALID = 'SHARDMOVE_ARGS_INVALID';

/** Bad command-line options: main.ts prints the message and exits with EXIT.invalid (2). */
export class ArgsError extends ShardmoveError<typeof ARGS_INVALID> {
  constructor(message: string) {
    super(ARGS_INVALID, message);
  }
}

/**
 * The admin token endpoint refused (`shardmove token`), with the reason the operator can act on.
 * Codes: SHARDMOVE_TOKEN_NOT_FOUND (404), SHARDMOVE_TOKEN_UNSUPPORTED (422: type, release, flag or
 * a previous custom prefix), SHARDMOVE_TOKEN_ENDPOINT_UNAVAILABLE (release or feature flag),
 * SHARDMOVE_TOKEN_FORBIDDEN (the admin credential is not an administrator's). Exit code 1.
 */
export class TokenCommandError extends ShardmoveError {}
