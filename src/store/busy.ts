/**
 * A checkpoint another process is writing: SQLite lets one writer at a time, and a connection that
 * finds the write lock taken waits for it (the busy timeout), then fails with SQLITE_BUSY. Waiting a
 * bounded while covers a run's commits and a `control` beside it; what holds the lock longer is a
 * run frozen mid-transaction (SIGSTOP, a debugger), a backup, or `sqlite3` with a transaction open.
 * Then the command refuses (CheckpointBusyError, exit 4) naming the holder where the run lock tells
 * it, instead of failing as an internal error.
 */
import type Database from 'better-sqlite3';
import { CheckpointBusyError } from './errors.js';
import type { LockHolder } from './types.js';

/** How long a statement waits for another connection's write lock, unless told otherwise. */
export const DEFAULT_BUSY_TIMEOUT_MS = 10_000;

let busyTimeout = DEFAULT_BUSY_TIMEOUT_MS;

/** The busy timeout every checkpoint opened from now on uses (main.ts sets it; tests shorten it). */
export function setCheckpointBusyTimeout(ms: number): void {
  busyTimeout = ms;
}

/** The busy timeout in force (ms). */
export function checkpointBusyTimeout(): number {
  return busyTimeout;
}

/** SQLite's answer when the lock stayed taken past the busy timeout (SQLITE_BUSY and its extended codes). */
export function isBusyError(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code);
}

/** This process, as the run lock records a holder. */
export interface Self {
  pid: number;
  host: string;
}

/**
 * The refusal for a busy checkpoint. `holder` is the run lock's holder as read beside the writer
 * (WAL lets a reader in), `self` this process when it holds the run lock itself (a run whose write
 * waited), `during` whether this command had started writing (a run: it stops, `run` again goes on).
 */
export function checkpointBusy(
  file: string,
  holder: LockHolder | null,
  o: { self?: Self | null; during?: boolean } = {},
): CheckpointBusyError {
  const other = holder && !(o.self && holder.pid === o.self.pid && holder.host === o.self.host) ? holder : null;
  const waited = `${Math.round(busyTimeout / 100) / 10}s`;
  const who = other
    ? `the shardmove run that holds its run lock (pid ${other.pid} on ${other.host}, since ${new Date(other.startedAt).toISOString()}) holds a write lock on it, or another process does; a run frozen mid-write (kill -STOP, a debugger) holds it until it goes on (kill -CONT ${other.pid})`
    : `another process holds a write lock on ${file} (not a shardmove run${o.self ? ': this run holds the run lock' : ': no run holds its run lock'}; a backup, sqlite3 with a transaction open, or another program)`;
  const then = o.during
    ? 'this run stopped where it was: nothing more was written, and `run` again continues once the lock is free'
    : 'nothing was written: run the command again once it is free';
  return new CheckpointBusyError(file, other, `checkpoint ${file} is busy: after waiting ${waited}, ${who}; ${then}`);
}

/** The run lock's holder read on `db`, or null when there is none or it cannot be read. */
export function lockHolderOn(db: Database.Database): LockHolder | null {
  try {
    const r = db.prepare('SELECT pid, host, started_at FROM lock WHERE id = 1').get() as
      { pid: number; host: string; started_at: number } | undefined;
    return r ? { pid: r.pid, host: r.host, startedAt: r.started_at } : null;
  } catch {
    return null;
  }
}

/**
 * `err` as the refusal it means when it is SQLite's busy answer (the holder read from `store`'s run
 * lock), else `err` itself: for a command whose write waited past the busy timeout on an open store.
 */
export function busyRefusal(
  err: unknown,
  store: { readonly file: string; readLock(): LockHolder | null },
  o: { self?: Self | null; during?: boolean } = {},
): unknown {
  if (!isBusyError(err)) return err;
  let holder: LockHolder | null = null;
  try {
    holder = store.readLock();
  } catch {
    // Unreadable too: the refusal names no holder.
  }
  return checkpointBusy(store.file, holder, o);
}
