/** Errors of the commands themselves, with their stable codes. */
import { ShardmoveError, defineErrorCodes } from '../shared/errors.js';

/** The commands' own error codes, with their meanings for operators (docs/errors.md). */
export const CLI_CODES = defineErrorCodes('cli', {
  SHARDMOVE_ARGS_INVALID:
    'A command-line option or argument is invalid, missing, or needs a terminal that is not there; the message names it. Nothing was written.',
  SHARDMOVE_TOKEN_NOT_FOUND:
    '`shardmove token`: the instance knows no token of that type with this value (404; reset and deleted tokens are gone).',
  SHARDMOVE_TOKEN_UNSUPPORTED:
    '`shardmove token`: the instance refuses this token type (422): not yet known to its release, behind a feature flag, not revocable, or minted under a previous custom prefix.',
  SHARDMOVE_TOKEN_ENDPOINT_UNAVAILABLE:
    "`shardmove token`: the instance's release has no admin token endpoint, or it sits behind a feature flag that is off; the message names the release and the flag.",
  SHARDMOVE_TOKEN_FORBIDDEN:
    "`shardmove token`: the admin credential is not an administrator's, or lacks the scope Admin Mode needs (403).",
});

/** Code of ArgsError. */
export const ARGS_INVALID = CLI_CODES.SHARDMOVE_ARGS_INVALID;

/** Codes of TokenCommandError. */
export type TokenCommandCode = Exclude<keyof typeof CLI_CODES, typeof ARGS_INVALID>;

/** Bad command-line options: main.ts prints the message and exits with EXIT.invalid (2). */
export class ArgsError extends ShardmoveError<typeof ARGS_INVALID> {
  constructor(message: string) {
    super(ARGS_INVALID, message);
  }
}

/** The admin token endpoint refused (`shardmove token`), with the reason the operator can act on (exit 1). */
export class TokenCommandError extends ShardmoveError<TokenCommandCode> {}
