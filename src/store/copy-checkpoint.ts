/**
 * The checkpoint of a copy plan (`shardmove copy`): its own SQLite file (state/<name>.copy.db), apart from
 * move checkpoints, with its own migrations keyed by `PRAGMA user_version`. It holds the run (method,
 * phase, totals), the run lock, one row per repository (state, bundle checksum, refs) and the event
 * log. Same habits as checkpoint.ts: WAL, statements prepared once, one transaction per batch.
 */
import type Database from 'better-sqlite3';
import { legacyName } from '../events/legacy-names.js';
import { LockedError, StoreVersionError } from './errors.js';
import { checkpointBusyTimeout } from './busy.js';
import { openCheckpointFile } from './open.js';
import type { CheckpointKind, OpenedCheckpointFile } from './open.js';
import type { LockHolder } from './types.js';

const MIGRATIONS: readonly string[] = [
  // 1: run, lock, repositories, events.
  `
  CREATE TABLE copy_run (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    plan_name TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    method TEXT NOT NULL,
    phase TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    repos_total INTEGER NOT NULL DEFAULT 0,
    bytes_total INTEGER NOT NULL DEFAULT 0,
    repos_done INTEGER NOT NULL DEFAULT 0,
    bytes_done INTEGER NOT NULL DEFAULT 0,
    differences INTEGER
  );
  CREATE TABLE copy_lock (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started_at INTEGER NOT NULL
  );
  CREATE TABLE copy_repos (
    rel TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL,
    state TEXT NOT NULL,
    bundle_sha256 TEXT,
    hooks_sha256 TEXT,
    refs TEXT,
    error TEXT,
    updated_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE copy_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL
  );
  `,
];

/** Where a copy stands. `copying` left behind by a dead process means it was interrupted. */
export type CopyPhase = 'started' | 'copying' | 'verifying' | 'done' | 'failed';

export interface CopyRunRow {
  planName: string;
  planHash: string;
  method: string;
  phase: CopyPhase;
  startedAt: number;
  updatedAt: number;
  reposTotal: number;
  bytesTotal: number;
  reposDone: number;
  bytesDone: number;
  /** Differences the last verification found; null before one ran. */
  differences: number | null;
}

/** Per repository (backup): pending -> bundled -> restored; `failed` holds the error. */
export type CopyRepoState = 'pending' | 'bundled' | 'restored' | 'failed';

export interface CopyRepoRow {
  rel: string;
  bytes: number;
  state: CopyRepoState;
  bundleSha256: string | null;
  hooksSha256: string | null;
  /** refname -> object id at backup time. */
  refs: Record<string, string> | null;
  error: string | null;
}

function migrateCopy(db: Database.Database): void {
  for (let v = db.pragma('user_version', { simple: true }) as number; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v] as string);
      db.pragma(`user_version = ${v + 1}`);
    }).immediate();
  }
}

/** The copy checkpoint as ./open.ts checks a file before using it. */
const COPY_CHECKPOINT: CheckpointKind = {
  what: 'shardmove copy checkpoint',
  table: 'copy_run',
  schemaVersion: MIGRATIONS.length,
  other: { table: 'run', what: 'move checkpoint (shardmove run), not a copy checkpoint' },
  createSchema: migrateCopy,
};

/**
 * Whether a SQLite file is a copy checkpoint (has the copy_run table); false for anything else. It
 * only asks which kind the file is: the open that follows checks the whole file (quick_check), so
 * a move checkpoint of a million items given to `status` is not read twice.
 */
export function isCopyCheckpointFile(file: string): boolean {
  let opened: OpenedCheckpointFile | undefined;
  try {
    opened = openCheckpointFile(file, COPY_CHECKPOINT, {
      readOnly: true,
      busyTimeoutMs: checkpointBusyTimeout(),
      integrity: false,
    });
    return !opened.fresh;
  } catch {
    return false;
  } finally {
    opened?.close();
  }
}

export class CopyCheckpoint {
  private readonly s;
  private holder: LockHolder | null = null;

  private readonly db: Database.Database;

  private constructor(
    readonly file: string,
    private readonly opened: OpenedCheckpointFile,
    readOnly: boolean,
  ) {
    const db = (this.db = opened.db);
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      getRun: p('SELECT * FROM copy_run WHERE id = 1'),
      getLock: p('SELECT pid, host, started_at FROM copy_lock WHERE id = 1'),
      repos: p('SELECT * FROM copy_repos ORDER BY rel'),
      counts: p('SELECT state, COUNT(*) AS n, SUM(bytes) AS bytes FROM copy_repos GROUP BY state'),
      events: p('SELECT seq, at, type, data FROM copy_events ORDER BY seq'),
      ...(readOnly
        ? {}
        : {
            putRun: p(
              `INSERT INTO copy_run (id, plan_name, plan_hash, method, phase, started_at, updated_at) VALUES (1, ?, ?, ?, 'started', ?, ?)
               ON CONFLICT (id) DO UPDATE SET plan_name = excluded.plan_name, plan_hash = excluded.plan_hash, method = excluded.method,
                 phase = 'started', started_at = excluded.started_at, updated_at = excluded.updated_at,
                 repos_total = 0, bytes_total = 0, repos_done = 0, bytes_done = 0, differences = NULL`,
            ),
            setPhase: p('UPDATE copy_run SET phase = ?, updated_at = ? WHERE id = 1'),
            setTotals: p('UPDATE copy_run SET repos_total = ?, bytes_total = ?, updated_at = ? WHERE id = 1'),
            setDone: p('UPDATE copy_run SET repos_done = ?, bytes_done = ?, updated_at = ? WHERE id = 1'),
            setDifferences: p('UPDATE copy_run SET differences = ?, updated_at = ? WHERE id = 1'),
            putLock: p(
              `INSERT INTO copy_lock (id, pid, host, started_at) VALUES (1, ?, ?, ?)
               ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, host = excluded.host, started_at = excluded.started_at`,
            ),
            dropLock: p('DELETE FROM copy_lock WHERE id = 1 AND pid = ? AND host = ?'),
            addRepo: p(
              `INSERT INTO copy_repos (rel, bytes, state, updated_at) VALUES (?, ?, 'pending', ?) ON CONFLICT (rel) DO NOTHING`,
            ),
            setRepo: p(
              `UPDATE copy_repos SET state = ?, bundle_sha256 = coalesce(?, bundle_sha256), hooks_sha256 = coalesce(?, hooks_sha256),
                 refs = coalesce(?, refs), error = ?, updated_at = ? WHERE rel = ?`,
            ),
            clearRepos: p('DELETE FROM copy_repos'),
            retryFailed: p(
              `UPDATE copy_repos SET state = 'pending', error = NULL, updated_at = ? WHERE state = 'failed'`,
            ),
            event: p('INSERT INTO copy_events (at, type, data) VALUES (?, ?, ?)'),
          }),
    };
  }

  /**
   * Opens (creating and migrating) a checkpoint for a copy that runs. Throws
   * SHARDMOVE_CHECKPOINT_UNUSABLE, before writing anything, for a file that cannot be one.
   */
  static open(file: string): CopyCheckpoint {
    const opened = openCheckpointFile(file, COPY_CHECKPOINT, {
      readOnly: false,
      busyTimeoutMs: checkpointBusyTimeout(),
    });
    const { db } = opened;
    try {
      const current = db.pragma('user_version', { simple: true }) as number;
      if (current > MIGRATIONS.length) throw new StoreVersionError(file, current, MIGRATIONS.length);
      db.pragma('journal_mode = WAL');
      migrateCopy(db);
      return new CopyCheckpoint(file, opened, false);
    } catch (err) {
      opened.close();
      throw err;
    }
  }

  /** Opens an existing checkpoint for reading only (`status`); an empty file reads as an empty checkpoint. */
  static openReadOnly(file: string): CopyCheckpoint {
    const opened = openCheckpointFile(file, COPY_CHECKPOINT, {
      readOnly: true,
      busyTimeoutMs: checkpointBusyTimeout(),
    });
    try {
      return new CopyCheckpoint(file, opened, true);
    } catch (err) {
      opened.close();
      throw err;
    }
  }

  private w() {
    if (!('putRun' in this.s)) throw new Error('copy checkpoint opened read-only');
    return this.s as Required<typeof this.s>;
  }

  acquireLock(holder: LockHolder, isAlive: (pid: number) => boolean): void {
    const w = this.w();
    this.db
      .transaction(() => {
        const cur = w.getLock.get() as { pid: number; host: string; started_at: number } | undefined;
        if (cur && !(cur.pid === holder.pid && cur.host === holder.host)) {
          const existing = { pid: cur.pid, host: cur.host, startedAt: cur.started_at };
          if (cur.host !== holder.host || isAlive(cur.pid)) throw new LockedError(this.file, existing);
          this.event('lock.taken_over', { previous: existing }, holder.startedAt);
        }
        w.putLock.run(holder.pid, holder.host, holder.startedAt);
      })
      .immediate();
    this.holder = holder;
  }

  readLock(): LockHolder | null {
    const cur = this.s.getLock.get() as { pid: number; host: string; started_at: number } | undefined;
    return cur ? { pid: cur.pid, host: cur.host, startedAt: cur.started_at } : null;
  }

  readRun(): CopyRunRow | null {
    const r = this.s.getRun.get() as Record<string, unknown> | undefined;
    if (!r) return null;
    return {
      planName: r['plan_name'] as string,
      planHash: r['plan_hash'] as string,
      method: r['method'] as string,
      phase: r['phase'] as CopyPhase,
      startedAt: r['started_at'] as number,
      updatedAt: r['updated_at'] as number,
      reposTotal: r['repos_total'] as number,
      bytesTotal: r['bytes_total'] as number,
      reposDone: r['repos_done'] as number,
      bytesDone: r['bytes_done'] as number,
      differences: (r['differences'] as number | null) ?? null,
    };
  }

  /** Starts the run afresh (a new plan, or a tar restarted with --wipe-target): repositories are forgotten. */
  startRun(planName: string, planHash: string, method: string, now: number): void {
    const w = this.w();
    this.db.transaction(() => {
      w.putRun.run(planName, planHash, method, now, now);
      w.clearRepos.run();
      this.event('copy.started', { plan: planName, method }, now);
    })();
  }

  setPhase(phase: CopyPhase, now: number): void {
    this.w().setPhase.run(phase, now);
    this.event(`copy.${phase}`, {}, now);
  }

  setTotals(repos: number, bytes: number, now: number): void {
    this.w().setTotals.run(repos, bytes, now);
  }

  setDone(repos: number, bytes: number, now: number): void {
    this.w().setDone.run(repos, bytes, now);
  }

  setDifferences(n: number, now: number): void {
    this.w().setDifferences.run(n, now);
  }

  addRepos(repos: ReadonlyArray<{ rel: string; bytes: number }>, now: number): void {
    const w = this.w();
    this.db.transaction(() => {
      for (const r of repos) w.addRepo.run(r.rel, r.bytes, now);
    })();
  }

  setRepo(
    rel: string,
    state: CopyRepoState,
    now: number,
    extra: { bundleSha256?: string; hooksSha256?: string; refs?: Record<string, string>; error?: string } = {},
  ): void {
    const w = this.w();
    this.db.transaction(() => {
      w.setRepo.run(
        state,
        extra.bundleSha256 ?? null,
        extra.hooksSha256 ?? null,
        extra.refs ? JSON.stringify(extra.refs) : null,
        extra.error ?? null,
        now,
        rel,
      );
      this.event(`repo.${state}`, { repo: rel, ...(extra.error ? { error: extra.error } : {}) }, now);
    })();
  }

  /** Failed repositories go back to pending: a new run tries them again from their backup. */
  retryFailed(now: number): number {
    return this.w().retryFailed.run(now).changes;
  }

  readRepos(): CopyRepoRow[] {
    return (this.s.repos.all() as Array<Record<string, unknown>>).map((r) => ({
      rel: r['rel'] as string,
      bytes: r['bytes'] as number,
      state: r['state'] as CopyRepoState,
      bundleSha256: (r['bundle_sha256'] as string | null) ?? null,
      hooksSha256: (r['hooks_sha256'] as string | null) ?? null,
      refs: r['refs'] ? (JSON.parse(r['refs'] as string) as Record<string, string>) : null,
      error: (r['error'] as string | null) ?? null,
    }));
  }

  /** Repositories and bytes per state. */
  repoCounts(): Record<string, { n: number; bytes: number }> {
    const out: Record<string, { n: number; bytes: number }> = {};
    for (const r of this.s.counts.all() as Array<{ state: string; n: number; bytes: number | null }>)
      out[r.state] = { n: r.n, bytes: r.bytes ?? 0 };
    return out;
  }

  /** The copy's log, with the names the run's audit log changed read as today (a takeover is `lock.taken_over`). */
  readEvents(): Array<{ seq: number; at: number; type: string; data: Record<string, unknown> }> {
    return (this.s.events.all() as Array<{ seq: number; at: number; type: string; data: string }>).map((e) => ({
      ...e,
      type: legacyName(e.type)?.type ?? e.type,
      data: JSON.parse(e.data) as Record<string, unknown>,
    }));
  }

  event(type: string, data: Record<string, unknown>, at: number): void {
    this.w().event.run(at, type, JSON.stringify(data));
  }

  close(): void {
    if (this.holder && 'dropLock' in this.s) this.w().dropLock.run(this.holder.pid, this.holder.host);
    this.holder = null;
    this.opened.close();
  }
}
