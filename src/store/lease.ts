/**
 * The run lock as a lease. The holder renews a heartbeat in the lock row; a lock whose
 * heartbeat is older than the holder's own lease period may be taken over. Every takeover (and
 * every `shardmove unlock`) raises the lock generation, and the holder's connection carries TEMP
 * triggers that refuse any write to the checkpoint once the lock row no longer shows its
 * generation: a holder that was only paused (a stopped VM, a frozen container) and lost its lease
 * cannot write after the new holder took over, whatever code path it resumes in.
 */
import type Database from 'better-sqlite3';
import type { LockHolder } from './types.js';

/** The message every fenced write fails with (SQLite RAISE); `isLeaseLostError` matches it. */
export const FENCED_MESSAGE =
  'SHARDMOVE_LEASE_LOST: the run lock was taken over; this process may no longer write the checkpoint';

/** Tables a holder writes; the lock table itself is written with a generation condition instead. */
const FENCED_TABLES = [
  'run',
  'events',
  'items',
  'cursors',
  'bulk',
  'unlistable',
  'control',
  'census',
  'item_flags',
  'notify_events',
  'notify_deliveries',
  'notify_cursor',
] as const;

/** The lock row as stored (schema 8 added heartbeat_at, lease_ms and generation). */
export interface LockRow {
  pid: number;
  host: string;
  started_at: number;
  heartbeat_at: number | null;
  lease_ms: number | null;
  generation: number;
}

export function toHolder(r: LockRow): LockHolder {
  return {
    pid: r.pid,
    host: r.host,
    startedAt: r.started_at,
    heartbeatAt: r.heartbeat_at ?? r.started_at,
    leaseMs: r.lease_ms,
    generation: r.generation,
  };
}

/** Why an existing lock may be taken over, or null when it may not. */
export type TakeoverReason = 'dead' | 'stale' | null;

/**
 * Whether a lock held by `cur` may be taken over by `holder` at `now` (pure). A dead process on
 * this host may always be replaced; any holder (this host or another) whose heartbeat is older
 * than its own lease period may be too. A lock row without a lease period was written by a
 * shardmove that never renewed it: as before, only a dead process on this host gives it up.
 */
export function takeoverReason(
  cur: LockRow,
  holder: LockHolder,
  now: number,
  isAlive: (pid: number) => boolean,
): TakeoverReason {
  if (cur.host === holder.host && !isAlive(cur.pid)) return 'dead';
  if (cur.lease_ms === null) return null;
  const beat = cur.heartbeat_at ?? cur.started_at;
  return now - beat > cur.lease_ms ? 'stale' : null;
}

/** True for the error a fenced write fails with (the SQLite trigger's, or ours). */
export function isLeaseLostError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  if ((err as { code?: unknown }).code === 'SHARDMOVE_LEASE_LOST') return true;
  return err instanceof Error && err.message.includes('SHARDMOVE_LEASE_LOST');
}

/**
 * Installs the fence on this connection: a TEMP table with the generation it holds and, on every
 * checkpoint table, TEMP triggers that abort a write unless the lock row still carries it. TEMP
 * objects belong to this connection only: `shardmove control` and `unlock`, from other
 * connections, write freely.
 */
export function installFence(db: Database.Database, generation: number): void {
  db.exec('CREATE TEMP TABLE IF NOT EXISTS fence (id INTEGER PRIMARY KEY CHECK (id = 1), generation INTEGER NOT NULL)');
  db.prepare(
    'INSERT INTO temp.fence (id, generation) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET generation = excluded.generation',
  ).run(generation);
  const check = `SELECT RAISE(ABORT, '${FENCED_MESSAGE}') WHERE (SELECT generation FROM main.lock WHERE id = 1) IS NOT (SELECT generation FROM temp.fence WHERE id = 1);`;
  for (const table of FENCED_TABLES) {
    for (const op of ['INSERT', 'UPDATE', 'DELETE']) {
      db.exec(
        `CREATE TEMP TRIGGER IF NOT EXISTS fence_${table}_${op.toLowerCase()} BEFORE ${op} ON main.${table} BEGIN ${check} END`,
      );
    }
  }
}

/** Removes the fence (the lock was released): the connection writes unchecked again. */
export function removeFence(db: Database.Database): void {
  for (const table of FENCED_TABLES) {
    for (const op of ['insert', 'update', 'delete']) db.exec(`DROP TRIGGER IF EXISTS temp.fence_${table}_${op}`);
  }
  db.exec('DROP TABLE IF EXISTS temp.fence');
}
