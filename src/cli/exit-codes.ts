/** Which exit code an error means (README: Exit codes): main.ts exits with it, `run --events` reports it. */
import { COPY_REFUSED } from '../copy/errors.js';
import { codeOf } from '../errors/base.js';
import { PLAN_INVALID } from '../plan/errors.js';
import { CHECKPOINT_ELSEWHERE, CHECKPOINT_MODE, LOCKED, MOVES_IN_FLIGHT, PLAN_CHANGED } from '../runtime/errors.js';
import { CHECKPOINT_UNUSABLE, LEASE_LOST } from '../store/errors.js';
import type { ExitCode } from './context.js';
import { EXIT } from './context.js';
import { ARGS_INVALID } from './errors.js';

/**
 * Errors carry stable `code`s; these map to exit codes. Other SHARDMOVE_* codes are failures (1);
 * anything else is an internal error (1). The sandbox's two codes are spelled out: importing its
 * modules here would load the sandbox on every command (main.ts loads each command lazily).
 * src/cli/main.test.ts checks every code against the error class that throws it.
 */
export const EXIT_BY_CODE: Readonly<Record<string, ExitCode>> = {
  [PLAN_INVALID]: EXIT.invalid,
  [ARGS_INVALID]: EXIT.invalid,
  SHARDMOVE_SEED_INVALID: EXIT.invalid,
  SHARDMOVE_SANDBOX_FAULTS_INVALID: EXIT.invalid,
  [LOCKED]: EXIT.refused,
  [PLAN_CHANGED]: EXIT.refused,
  [CHECKPOINT_MODE]: EXIT.refused,
  [CHECKPOINT_ELSEWHERE]: EXIT.refused,
  [MOVES_IN_FLIGHT]: EXIT.refused,
  [LEASE_LOST]: EXIT.leaseLost,
  [COPY_REFUSED]: EXIT.refused,
  // A failure the operator fixes (the file, its permissions, or --state) before running again; not 2:
  // the default checkpoint is no argument at all, and a good --state may point at a file damaged since.
  [CHECKPOINT_UNUSABLE]: EXIT.failed,
};

/** The exit code of a thrown error: its own when it has one, else 1 (a failure, or an internal error). */
export function exitCodeOf(err: unknown): ExitCode {
  return EXIT_BY_CODE[codeOf(err) ?? ''] ?? EXIT.failed;
}
