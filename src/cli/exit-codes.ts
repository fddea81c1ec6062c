/** Which exit code an error means (README: Exit codes): main.ts exits with it, `run --events` reports it. */
import { COPY_REFUSED } from '../copy/errors.js';
import { codeOf } from '../shared/errors.js';
import { SANDBOX_FAULTS_INVALID, SEED_INVALID } from '../shared/sandbox-errors.js';
import { PLAN_INVALID } from '../plan/errors.js';
import { INSTANCE_OUTAGE } from '../api/errors.js';
import {
  CHECKPOINT_ELSEWHERE,
  CHECKPOINT_MODE,
  DRAIN_RUNNING,
  INSTANCE_CHANGED,
  ITEMS_FILE_INVALID,
  ITEMS_OTHER_LIST,
  ITEMS_OTHER_PLAN,
  LOCKED,
  MOVES_IN_FLIGHT,
  PLAN_CHANGED,
  WEIGHTS_CHANGED,
} from '../runtime/errors.js';
import { METRICS_FILE_IN_USE } from '../metrics/errors.js';
import { FOREIGN_MOVES } from '../actors/errors.js';
import { CHECKPOINT_BUSY, CHECKPOINT_UNUSABLE, LEASE_LOST } from '../store/errors.js';
import type { ExitCode } from './context.js';
import { EXIT } from './context.js';
import { ARGS_INVALID } from './errors.js';

/**
 * Errors carry stable `code`s; these map to exit codes. Other SHARDMOVE_* codes are failures (1);
 * anything else is an internal error (1). The sandbox's codes come from the shared floor: importing
 * the sandbox's modules here would load it on every command (main.ts loads each command lazily).
 * src/cli/main.test.ts checks every code against the error class that throws it.
 */
export const EXIT_BY_CODE: Readonly<Record<string, ExitCode>> = {
  [PLAN_INVALID]: EXIT.invalid,
  [ARGS_INVALID]: EXIT.invalid,
  [SEED_INVALID]: EXIT.invalid,
  [SANDBOX_FAULTS_INVALID]: EXIT.invalid,
  [ITEMS_FILE_INVALID]: EXIT.invalid,
  [ITEMS_OTHER_PLAN]: EXIT.refused,
  [ITEMS_OTHER_LIST]: EXIT.refused,
  [LOCKED]: EXIT.refused,
  [PLAN_CHANGED]: EXIT.refused,
  [CHECKPOINT_MODE]: EXIT.refused,
  [CHECKPOINT_ELSEWHERE]: EXIT.refused,
  [MOVES_IN_FLIGHT]: EXIT.refused,
  [INSTANCE_CHANGED]: EXIT.refused,
  [WEIGHTS_CHANGED]: EXIT.refused,
  [LEASE_LOST]: EXIT.leaseLost,
  [COPY_REFUSED]: EXIT.refused,
  [METRICS_FILE_IN_USE]: EXIT.refused,
  // One drain per storage: another live run of these storages on this host, or moves of another in flight.
  [DRAIN_RUNNING]: EXIT.refused,
  [FOREIGN_MOVES]: EXIT.refused,
  // A failure the operator fixes (the file, its permissions, or --state) before running again; not 2:
  // the default checkpoint is no argument at all, and a good --state may point at a file damaged since.
  [CHECKPOINT_UNUSABLE]: EXIT.failed,
  // Another process holds the checkpoint's write lock: like the run lock, wait or end the holder.
  [CHECKPOINT_BUSY]: EXIT.refused,
  // Not 1: 1 also says "token revoked", which a restart loop must not retry blindly; an outage it may.
  [INSTANCE_OUTAGE]: EXIT.outage,
};

/** The exit code of a thrown error: its own when it has one, else 1 (a failure, or an internal error). */
export function exitCodeOf(err: unknown): ExitCode {
  return EXIT_BY_CODE[codeOf(err) ?? ''] ?? EXIT.failed;
}

/**
 * What each exit code means, in one line: the exit-code table of docs/errors.md (`npm run docs`).
 * README's Exit codes section says the same at length, with what to do, and is checked against it.
 */
export const EXIT_MEANINGS: Readonly<Record<ExitCode, string>> = {
  [EXIT.ok]:
    'Done: everything moved and verified, or the dry run finished (`revert`: every item moved back and verified, or nothing to revert).',
  [EXIT.failed]:
    'Failed: a fatal error, with the step and the cause, or a checkpoint that cannot be used; fix the cause and `run` again, which resumes.',
  [EXIT.invalid]: 'Invalid plan, arguments, sandbox seed or fault options, each problem named; nothing was written.',
  [EXIT.quarantined]: 'Done, but some items are quarantined; fix them on the instance, then `run --retry-quarantined`.',
  [EXIT.refused]:
    'Refused before any write: a live lock, a changed plan, the other kind of checkpoint, moves in flight (`revert`), another drain of the same storages (on this host, or its moves in flight), a copy guardrail.',
  [EXIT.leaseLost]:
    'This run lost its lock to another runner or to `shardmove unlock`; nothing more was written, the run goes on where the lock is.',
  [EXIT.stopped]:
    'Stopped on request (`control --stop`, or the stop file): nothing new started, the moves in flight ended first; `run` again continues.',
  [EXIT.outage]:
    'The instance did not answer for `instance.outage_wait` (network errors, timeouts, 502/503/504) while the run held for it; moves already posted go on on GitLab: once it answers, `run` again follows them and continues.',
  [EXIT.interrupted]: 'Interrupted (SIGINT/SIGTERM); the checkpoint is saved and `run` again continues.',
};
