/**
 * The checkpoint contract: one SQLite file per plan (WAL). The runtime uses the run-level part
 * (lock, snapshot, events, summary); the drain and verify actors use the item-level part, which
 * the store module defines beside this (see ./items.ts once written).
 */
import type { Kind } from '../plan/types.js';

export interface LockHolder {
  pid: number;
  host: string;
  /** ms since epoch. */
  startedAt: number;
}

export interface SavedRun {
  planName: string;
  planHash: string;
  machineVersion: number;
  /** The XState persisted snapshot (JSON). */
  snapshot: unknown;
}

/** Counts per kind, source storage and item state, for `status`, progress lines and reports. */
export interface StatusSummary {
  counts: { kind: Kind; source: string; state: string; n: number }[];
  quarantined: { kind: Kind; id: number; source: string; name: string; reason: string; attempts: number }[];
  /** Items that reached a final moved state in the last 10 minutes (for rate and ETA). */
  movedLast10Min: number;
  /** Total items known (enumerated). */
  total: number;
  /** Stuck moves currently reported (in flight past poll.stuck_after). */
  stuck: { kind: Kind; id: number; moveId: number; moveState: string; since: number; readOnly: boolean | null }[];
}

export interface CheckpointStore {
  readonly file: string;
  /**
   * Takes the run lock. Throws an error with code SHARDMOVE_LOCKED naming the holder when another
   * live process holds it; takes over a lock whose holder process is dead (`isAlive` false).
   */
  acquireLock(holder: LockHolder, isAlive: (pid: number) => boolean): void;
  releaseLock(): void;
  /** The saved run, or null for a fresh checkpoint. */
  loadRun(): SavedRun | null;
  /** Writes the machine snapshot atomically (one transaction). */
  saveRun(run: SavedRun): void;
  /** Append-only log of every mutating request and decision. Never pass secrets in `data`. */
  appendEvent(type: string, data: Record<string, unknown>, at: number): void;
  summary(now: number): StatusSummary;
  close(): void;
}
