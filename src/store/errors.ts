/** Errors of the checkpoint store, matched by `code` across modules. */
import { ShardmoveError, defineErrorCodes } from '../shared/errors.js';
import type { LockHolder } from './types.js';

/** The checkpoint store's error codes, with their meanings for operators (docs/errors.md). */
export const STORE_CODES = defineErrorCodes('store', {
  SHARDMOVE_LOCKED:
    "Another live process holds the checkpoint's run lock (its pid, host and last heartbeat are named); wait, or `shardmove unlock` if it is gone. Nothing was written.",
  SHARDMOVE_STORE_VERSION:
    'The checkpoint was written by a newer shardmove (its schema version is above what this one knows); use that version or a newer one.',
  SHARDMOVE_LEASE_LOST:
    'This run lost its lock: another runner took it over after the lease expired, or an operator ran `shardmove unlock`. Nothing more was written; the run goes on where the lock is.',
  SHARDMOVE_CHECKPOINT_UNUSABLE:
    'The checkpoint file cannot be used (a directory, not SQLite, damaged, the other kind, not writable); the file is left as it was: fix it, or name another with --state.',
  SHARDMOVE_CHECKPOINT_BUSY:
    'Another process held a write lock on the checkpoint for longer than the busy timeout (10 s): a shardmove run frozen mid-write (SIGSTOP, a debugger), a backup, or sqlite3. The holder is named where the run lock tells it. Nothing more was written; wait for it or end it, then run the command again.',
});

/** Code of LockedError. */
export const LOCKED = STORE_CODES.SHARDMOVE_LOCKED;
/** Code of StoreVersionError. */
export const STORE_VERSION = STORE_CODES.SHARDMOVE_STORE_VERSION;
/** Code of LeaseLostError. */
export const LEASE_LOST = STORE_CODES.SHARDMOVE_LEASE_LOST;
/** Code of CheckpointUnusableError. */
export const CHECKPOINT_UNUSABLE = STORE_CODES.SHARDMOVE_CHECKPOINT_UNUSABLE;
/** Code of CheckpointBusyError. */
export const CHECKPOINT_BUSY = STORE_CODES.SHARDMOVE_CHECKPOINT_BUSY;

/** Another live process holds the run lock of this checkpoint (exit 4). */
export class LockedError extends ShardmoveError<typeof LOCKED> {
  constructor(
    readonly file: string,
    readonly holder: LockHolder,
    now?: number,
  ) {
    super(
      LOCKED,
      `checkpoint ${file} is locked by pid ${holder.pid} on ${holder.host} since ${new Date(holder.startedAt).toISOString()}${leaseNote(holder, now)}`,
    );
  }
}

function leaseNote(holder: LockHolder, now: number | undefined): string {
  if (now === undefined || holder.heartbeatAt === undefined) return '';
  const age = Math.max(0, Math.round((now - holder.heartbeatAt) / 1000));
  if (holder.leaseMs === null || holder.leaseMs === undefined)
    return ` (it sets no lease: only \`shardmove unlock\` removes it)`;
  return ` (last heartbeat ${age}s ago; it may be taken over once that exceeds its lease of ${Math.round(holder.leaseMs / 1000)}s, or removed now with \`shardmove unlock\`)`;
}

/**
 * This process held the run lock and lost it: another runner took it over after the lease expired
 * (this process was paused, or its heartbeats did not reach the checkpoint), or an operator ran
 * `shardmove unlock`. Nothing more was written (exit 5).
 */
export class LeaseLostError extends ShardmoveError<typeof LEASE_LOST> {
  constructor(
    readonly file: string,
    readonly holder: LockHolder | null,
  ) {
    super(
      LEASE_LOST,
      `lost the run lock of ${file}: ${holder ? `pid ${holder.pid} on ${holder.host} took it over` : 'it was removed (shardmove unlock)'}; ` +
        'this process stopped without writing anything more. The run goes on wherever the lock now is',
    );
  }
}

/** The checkpoint file was written by a newer shardmove (schema version above what this build knows). */
export class StoreVersionError extends ShardmoveError<typeof STORE_VERSION> {
  constructor(
    readonly file: string,
    readonly found: number,
    readonly supported: number,
  ) {
    super(STORE_VERSION, `checkpoint ${file} has schema version ${found}; this shardmove supports up to ${supported}`);
  }
}

/**
 * What is wrong with a checkpoint file: `directory`, `not-a-file` (a FIFO, a device), `not-a-database`
 * (not SQLite), `damaged` (SQLite says malformed: truncated, overwritten), `foreign` (a SQLite
 * database without this kind's tables, or the other kind of checkpoint), `read-only` (a command
 * that writes cannot: the file or its directory is not writable), `unreadable` (permissions, I/O).
 */
export type CheckpointProblem =
  'directory' | 'not-a-file' | 'not-a-database' | 'damaged' | 'foreign' | 'read-only' | 'unreadable';

/**
 * The checkpoint file cannot be used: the message names the file and the problem in one line. It is
 * thrown before anything was written to the file, which is left exactly as it was (exit 1: the
 * operator fixes or moves the file, or points --state elsewhere, and runs the command again).
 */
export class CheckpointUnusableError extends ShardmoveError<typeof CHECKPOINT_UNUSABLE> {
  constructor(
    readonly file: string,
    readonly problem: CheckpointProblem,
    message: string,
  ) {
    super(CHECKPOINT_UNUSABLE, message);
  }
}

/**
 * Another process held a write lock on the checkpoint for longer than the busy timeout (exit 4):
 * nothing more was written by this command. `holder` is the run lock's holder when the checkpoint
 * names one that is not this process, else null (a backup, `sqlite3`, another program).
 */
export class CheckpointBusyError extends ShardmoveError<typeof CHECKPOINT_BUSY> {
  constructor(
    readonly file: string,
    readonly holder: LockHolder | null,
    message: string,
  ) {
    super(CHECKPOINT_BUSY, message);
  }
}
