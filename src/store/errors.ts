/** Errors of the checkpoint store, matched by `code` across modules. */
import type { LockHolder } from './types.js';

/** Code of LockedError. */
export const LOCKED = 'SHARDMOVE_LOCKED';
/** Code of StoreVersionError. */
export const STORE_VERSION = 'SHARDMOVE_STORE_VERSION';

/** Another live process holds the run lock of this checkpoint (exit 4). */
export class LockedError extends Error {
  readonly code = LOCKED;
  constructor(
    readonly file: string,
    readonly holder: LockHolder,
  ) {
    super(
      `checkpoint ${file} is locked by pid ${holder.pid} on ${holder.host} since ${new Date(holder.startedAt).toISOString()}`,
    );
    this.name = 'LockedError';
  }
}

/** The checkpoint file was written by a newer shardmove (schema version above what this build knows). */
export class StoreVersionError extends Error {
  readonly code = STORE_VERSION;
  constructor(
    readonly file: string,
    readonly found: number,
    readonly supported: number,
  ) {
    super(`checkpoint ${file} has schema version ${found}; this shardmove supports up to ${supported}`);
    this.name = 'StoreVersionError';
  }
}
