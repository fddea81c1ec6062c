/**
 * Keeping the run lock as a lease: renew its heartbeat in the checkpoint several times
 * per lease period, and stop the run as soon as the lock turns out not to be ours any more. The
 * store's fence (src/store/lease.ts) already refuses every write of a holder that lost its lease;
 * this only makes the stop prompt and clear when the process is idle between writes.
 */
import type { Logger } from 'pino';
import type { LockView } from '../../report/status.js';
import type { CheckpointStore, LockHolder } from '../../store/types.js';
import type { Clock } from '../../shared/clock.js';
import { lockHolder, openExistingCheckpoint } from '../status.js';

/** The default lease period: `run --lease`, docs/operations.md, "The run lock as a lease". */
export const DEFAULT_LEASE_MS = 60_000;
/** Bounds of `--lease`: below 10s a busy event loop could miss its own renewal. */
export const LEASE_RANGE_MS = { min: 10_000, max: 24 * 3_600_000 } as const;
/** Renewals per lease period: a holder survives missing all but one of them. */
const RENEWALS_PER_LEASE = 4;

export interface LeaseKeeper {
  /** Aborted when the lock was lost (its reason says so). */
  readonly signal: AbortSignal;
  /** True once a renewal found the lock taken over or removed. */
  readonly lost: boolean;
  stop(): void;
}

/**
 * Renews `store`'s lock every `leaseMs / 4` of the injected clock (unref'd), with the clock's time
 * as the heartbeat, so a simulated clock can run a lease to its takeover without waiting for it. On a failed renewal it logs, aborts `signal` and stops renewing.
 */
export function keepLease(
  store: Pick<CheckpointStore, 'renewLock'>,
  leaseMs: number,
  clock: Clock,
  log: Logger,
): LeaseKeeper {
  const controller = new AbortController();
  let lost = false;
  const timer = clock.setInterval(
    () => {
      let ok: boolean;
      try {
        ok = store.renewLock(clock.now());
      } catch (err) {
        // A busy checkpoint (another connection's long write) is retried at the next tick.
        log.warn({ err }, 'could not renew the run lock');
        return;
      }
      if (ok) return;
      lost = true;
      clock.clearInterval(timer);
      log.error('the run lock was taken over or removed; stopping without further writes');
      controller.abort(new Error('the run lock was taken over'));
    },
    Math.max(1_000, Math.floor(leaseMs / RENEWALS_PER_LEASE)),
  );
  timer.unref();
  return {
    signal: controller.signal,
    get lost() {
      return lost;
    },
    stop: () => clock.clearInterval(timer),
  };
}

/** The lock of the checkpoint at `file` as `unlock` shows it (null: not locked). */
export function readLockOf(file: string): LockView | null {
  const store = openExistingCheckpoint(file, { readOnly: true });
  try {
    return lockHolder(store);
  } finally {
    store.close();
  }
}

/**
 * `shardmove unlock`: removes the run lock of the checkpoint at `file`, whoever holds it, logged in
 * the checkpoint as `lock.unlocked`. Returns the removed holder (null: there was none).
 */
export function unlockCheckpoint(file: string, by: { pid: number; host: string }, now: number): LockHolder | null {
  const store = openExistingCheckpoint(file, { readOnly: false });
  try {
    return store.forceUnlock(by, now);
  } finally {
    store.close();
  }
}
