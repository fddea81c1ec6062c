/**
 * The checkpoint: one SQLite file per plan. Run-level part (lock, machine snapshot, event log,
 * status summary) here; the item-level part in ./items.ts. WAL so `status` reads while `run`
 * writes; busy_timeout so short write locks wait instead of failing.
 */
import Database from 'better-sqlite3';
import type { Kind } from '../plan/types.js';
import { checkpointBusy, checkpointBusyTimeout, isBusyError, lockHolderOn } from './busy.js';
import { CheckpointUnusableError, LeaseLostError, LockedError } from './errors.js';
import { ItemTable } from './items.js';
import { installFence, removeFence, takeoverReason, toHolder } from './lease.js';
import type { LockRow } from './lease.js';
import { checkCheckpointFile, openCheckpointFile } from './open.js';
import type { CheckpointKind } from './open.js';
import { NotificationTable } from './notifications.js';
import { ThresholdTable } from './thresholds.js';
import type { LiveThresholds, ThresholdBy, ThresholdName, ThresholdSetting } from './thresholds.js';
import { migrate, SCHEMA_VERSION } from './schema.js';
import { NO_CONTROL } from './types.js';
import { RETIRED_AUDIT_TYPES, readAuditRow, storedNamesOf } from '../events/legacy-names.js';
import type { AuditEventMap, AuditEventOf, AuditType } from '../events/vocabulary.js';
import type {
  CheckpointStore,
  ControlChange,
  DestinationPlacement,
  FailedMove,
  LockAcquired,
  LockHolder,
  OrphanCopy,
  RunControl,
  RunMode,
  SavedRun,
  StatusSummary,
  StoredEvent,
} from './types.js';
import { hasColumn, hasIndex, hasTable, prepareIf } from './introspect.js';

const TEN_MINUTES = 10 * 60 * 1000;

export interface OpenOptions {
  /** Open an existing file for reading only (`status`): no migration, no writes. */
  readOnly?: boolean;
  /** How long a statement waits for another connection's write lock (ms). Default: store/busy.ts. */
  busyTimeoutMs?: number;
  /**
   * The file was just checked whole (`checkMoveCheckpoint`, in a worker thread): opening skips
   * quick_check. Everything else an open checks is checked again.
   */
  checked?: boolean;
}

/** How long a summary's placement figures are reused. */
const PLACEMENT_TTL_MS = 5_000;

/** SQLite checkpoint: the runtime's CheckpointStore, which the actors see as an ActorStore. */
export class Checkpoint extends ItemTable implements CheckpointStore {
  private readonly r;
  readonly notifications: NotificationTable;
  private readonly thresholds: ThresholdTable;
  private placementCache: { at: number; rows: DestinationPlacement[] } | null = null;
  private lockHolder: LockHolder | null = null;
  /** The generation of the lock this store holds (null: none). */
  private generation: number | null = null;

  constructor(
    readonly file: string,
    db: Database.Database,
    /** Closes the database (and removes a private copy read in its place: ./open.ts). */
    private readonly closeDb: () => void = () => db.close(),
  ) {
    super(db);
    this.notifications = new NotificationTable(db);
    this.thresholds = new ThresholdTable(db);
    const p = (sql: string) => db.prepare(sql);
    const control = hasTable(db, 'control');
    // Schema 8 (leases); a read-only `status` on an older, unmigrated file sees plain locks.
    const leases = hasTable(db, 'lock_generation');
    const w8 = prepareIf(db, leases, 'SELECT 1 WHERE 0');
    const runPlan = hasColumn(db, 'run', 'plan');
    this.r = {
      getLock: p(
        leases
          ? 'SELECT pid, host, started_at, heartbeat_at, lease_ms, generation FROM lock WHERE id = 1'
          : 'SELECT pid, host, started_at, NULL AS heartbeat_at, NULL AS lease_ms, 0 AS generation FROM lock WHERE id = 1',
      ),
      nextGeneration: w8(
        `INSERT INTO lock_generation (id, n) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET n = n + 1 RETURNING n`,
      ),
      putLock: w8(
        `INSERT INTO lock (id, pid, host, started_at, heartbeat_at, lease_ms, generation) VALUES (1, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, host = excluded.host, started_at = excluded.started_at,
           heartbeat_at = excluded.heartbeat_at, lease_ms = excluded.lease_ms, generation = excluded.generation`,
      ),
      renewLock: w8('UPDATE lock SET heartbeat_at = ? WHERE id = 1 AND generation = ?'),
      dropLock: w8('DELETE FROM lock WHERE id = 1 AND generation = ?'),
      forceDropLock: p('DELETE FROM lock WHERE id = 1'),
      // Schema 17 keeps the plan; a read-only `status` on an older, unmigrated file reads none
      // (and never writes, so its put is a no-op there).
      getRun: p(
        `SELECT plan_name, plan_hash, machine_version, snapshot, ${runPlan ? 'plan' : 'NULL AS plan'} FROM run WHERE id = 1`,
      ),
      putRun: p(
        runPlan
          ? `INSERT INTO run (id, plan_name, plan_hash, machine_version, snapshot, plan) VALUES (1, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET plan_name = excluded.plan_name, plan_hash = excluded.plan_hash,
           machine_version = excluded.machine_version, snapshot = excluded.snapshot, plan = excluded.plan`
          : 'SELECT ?, ?, ?, ?, ? WHERE 0',
      ),
      event: p('INSERT INTO events (at, type, data) VALUES (?, ?, ?)'),
      // Retired types are left out here, not after: a page of events stays full, so paging goes on.
      events: p(
        `SELECT seq, at, type, data FROM events WHERE seq > ? AND type NOT IN (${RETIRED_AUDIT_TYPES.map(sqlText).join(', ')}) ORDER BY seq LIMIT ?`,
      ),
      lastSeq: p('SELECT COALESCE(MAX(seq), 0) AS seq FROM events'),
      counts: p('SELECT kind, source, state, n FROM item_counts WHERE n > 0 ORDER BY kind, source, state'),
      quarantined: p(
        `SELECT kind, id, source, name, COALESCE(last_error, 'unknown') AS reason, attempts FROM items
         WHERE state = 'quarantined' ORDER BY kind, id`,
      ),
      movedSince: p('SELECT COUNT(*) AS n FROM items WHERE moved_at >= ?'),
      ownMovedSince: p("SELECT COUNT(*) AS n FROM items WHERE moved_at >= ? AND state = 'moved' AND scheduled_at >= ?"),
      // The partial index (schema 4) holds only retrying items; the planner prefers items_state
      // unless told. A read-only `status` on an older, unmigrated file counts without it.
      retrying: p(
        `SELECT kind, source, COUNT(*) AS n FROM items ${hasIndex(db, 'items_retrying') ? 'INDEXED BY items_retrying' : ''}
         WHERE state = 'pending' AND attempts > 0 GROUP BY kind, source ORDER BY kind, source`,
      ),
      stuck: p(
        `SELECT kind, id, COALESCE(move_id, 0) AS moveId, COALESCE(move_state, 'unknown') AS moveState,
           COALESCE(scheduled_at, 0) AS since, read_only AS readOnly FROM items
         WHERE state = 'quarantined' AND stuck_at IS NOT NULL ORDER BY kind, id`,
      ),
      // Schema 12; an older, unmigrated file (read-only status) has no such rows to find quickly.
      orphans: hasIndex(db, 'items_orphans')
        ? p(
            `SELECT kind, id, name, source, move_id AS moveId, move_state AS moveState FROM items INDEXED BY items_orphans
             WHERE state = 'moved' AND move_state IN ('cleanup failed', 'failed') ORDER BY kind, id`,
          )
        : null,
      // Failed moves that may have left a copy on their destination: of items the run is done with.
      failedMoves: p(
        `SELECT kind, id, name, source, ${hasColumn(db, 'items', 'destination') ? 'destination' : 'NULL AS destination'},
           move_id AS moveId, move_state AS moveState, stuck_at IS NOT NULL AS stuck, state, last_error AS reason FROM items
         WHERE state IN ('quarantined', 'left') AND move_id IS NOT NULL
           AND (move_state IS NULL OR move_state NOT IN ('finished', 'cleanup failed'))
         ORDER BY kind, id`,
      ),
      // Schema 15: what was placed where (many destinations); an older file placed nothing per item.
      placement: hasIndex(db, 'items_placed')
        ? p(
            `SELECT destination, COUNT(*) AS items, SUM(COALESCE(size_bytes, 0)) AS bytes, SUM(size_bytes IS NULL) AS unsized,
               SUM(state = 'moved') AS moved FROM items INDEXED BY items_placed
             WHERE destination IS NOT NULL AND state NOT IN ('left', 'quarantined') GROUP BY destination ORDER BY destination`,
          )
        : null,
      // Schema 15: a reached move.until bound leaves its source's unplaced pending items where they
      // are. Counted as pending minus pending placed: the partial index holds only the placed ones.
      bounds: hasTable(db, 'bounds') ? p('SELECT source FROM bounds ORDER BY reached_at, source') : null,
      staying: hasIndex(db, 'items_placed_due')
        ? p(
            `SELECT c.kind, c.source, c.n - (SELECT COUNT(*) FROM items INDEXED BY items_placed_due
               WHERE kind = c.kind AND source = c.source AND state = 'pending' AND destination IS NOT NULL) AS n
             FROM item_counts c JOIN bounds b ON b.source = c.source
             WHERE c.state = 'pending' AND c.n > 0 ORDER BY c.kind, c.source`,
          )
        : null,
      release: p(
        `UPDATE items SET state = 'pending', attempts = 0, next_attempt_at = 0
         WHERE state = 'quarantined' AND stuck_at IS NULL`,
      ),
      // Schema 5; a read-only `status` on an older, unmigrated file has no overrides.
      // Schema 13 adds paused_by; a read-only status on an older file reads none.
      // Schema 18 adds the stop request; a read-only status on an older file reads none.
      getControl: control
        ? p(
            `SELECT concurrency, paused, ${hasColumn(db, 'control', 'paused_by') ? 'paused_by' : 'NULL AS paused_by'},
               ${hasColumn(db, 'control', 'stop_at') ? 'stop_at, stop_by' : 'NULL AS stop_at, NULL AS stop_by'}, updated_at
             FROM control WHERE id = 1`,
          )
        : null,
      putControl:
        control && hasColumn(db, 'control', 'stop_at')
          ? p(
              `INSERT INTO control (id, concurrency, paused, paused_by, stop_at, stop_by, updated_at) VALUES (1, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (id) DO UPDATE SET concurrency = excluded.concurrency, paused = excluded.paused, paused_by = excluded.paused_by,
                 stop_at = excluded.stop_at, stop_by = excluded.stop_by, updated_at = excluded.updated_at`,
            )
          : null,
    };
  }

  acquireLock(
    holder: LockHolder,
    isAlive: (pid: number) => boolean,
    lease?: { ms: number; now: number },
  ): LockAcquired {
    const now = lease?.now ?? holder.startedAt;
    // A lock taken again on this connection: the old fence would refuse the new generation's writes.
    removeFence(this.db);
    const acquired = this.batch((): LockAcquired => {
      const cur = this.r.getLock.get() as LockRow | undefined;
      let previous: LockHolder | null = null;
      let reason: LockAcquired['reason'] = null;
      if (cur && !(cur.pid === holder.pid && cur.host === holder.host)) {
        previous = toHolder(cur);
        // A holder on another host cannot be probed: only its lease (or the operator) declares it gone.
        reason = takeoverReason(cur, holder, now, isAlive);
        if (reason === null) throw new LockedError(this.file, previous, now);
        this.appendEvent(
          'lock.taken_over',
          { previous, reason, heartbeatAgeMs: now - (previous.heartbeatAt ?? previous.startedAt) },
          now,
        );
      }
      const { n } = this.r.nextGeneration.get() as { n: number };
      this.r.putLock.run(holder.pid, holder.host, holder.startedAt, now, lease?.ms ?? null, n);
      this.appendEvent(
        'lock.acquired',
        { pid: holder.pid, host: holder.host, generation: n, leaseMs: lease?.ms ?? null },
        now,
      );
      return { generation: n, previous, reason };
    });
    installFence(this.db, acquired.generation);
    this.lockHolder = holder;
    this.generation = acquired.generation;
    return acquired;
  }

  renewLock(now: number): boolean {
    if (this.generation === null) return false;
    return this.r.renewLock.run(now, this.generation).changes === 1;
  }

  /**
   * Who holds the run lock, without taking it (read-only connections too): `status` uses it to tell a
   * live run from an interrupted one. Null when no process holds it.
   */
  readLock(): LockHolder | null {
    const cur = this.r.getLock.get() as LockRow | undefined;
    return cur ? toHolder(cur) : null;
  }

  assertLease(): void {
    if (this.generation === null) return;
    const cur = this.readLock();
    if (cur?.generation !== this.generation) throw new LeaseLostError(this.file, cur);
  }

  releaseLock(): void {
    if (!this.lockHolder || this.generation === null) return;
    // Only our own generation: a lock taken over meanwhile belongs to its new holder.
    this.r.dropLock.run(this.generation);
    removeFence(this.db);
    this.lockHolder = null;
    this.generation = null;
  }

  forceUnlock(by: { pid: number; host: string }, now: number): LockHolder | null {
    return this.batch(() => {
      const cur = this.readLock();
      if (!cur) return null;
      this.r.forceDropLock.run();
      this.appendEvent('lock.unlocked', { previous: cur, by }, now);
      return cur;
    });
  }

  claimMode(mode: RunMode): RunMode {
    return this.batch(() => {
      this.db.prepare('INSERT OR IGNORE INTO identity (id, mode) VALUES (1, ?)').run(mode);
      return this.mode() ?? mode;
    });
  }

  mode(): RunMode | null {
    if (!hasTable(this.db, 'identity')) return null;
    const r = this.db.prepare('SELECT mode FROM identity WHERE id = 1').get() as { mode: RunMode } | undefined;
    return r?.mode ?? null;
  }

  loadRun(): SavedRun | null {
    const r = this.r.getRun.get() as
      | { plan_name: string; plan_hash: string; machine_version: number; snapshot: string; plan: string | null }
      | undefined;
    if (!r) return null;
    let snapshot: unknown;
    try {
      snapshot = JSON.parse(r.snapshot);
    } catch (err) {
      // Damage inside a record that leaves the page sound (quick_check reads structure, not JSON):
      // refused like any damaged file, never taken for "no run yet" and started over.
      throw new CheckpointUnusableError(
        this.file,
        'damaged',
        `${this.file} is not a usable shardmove checkpoint: its saved run is not JSON (${(err as Error).message}); it was left as it is: restore it from a copy, or move it aside`,
      );
    }
    return { planName: r.plan_name, planHash: r.plan_hash, machineVersion: r.machine_version, snapshot, plan: r.plan };
  }

  saveRun(run: SavedRun): void {
    this.r.putRun.run(run.planName, run.planHash, run.machineVersion, JSON.stringify(run.snapshot), run.plan ?? null);
  }

  appendEvent<K extends AuditType>(type: K, data: AuditEventMap[K], at: number): void {
    this.r.event.run(at, type, JSON.stringify(data));
  }

  /** Events after `afterSeq`, oldest first (for reports and tests). */
  readEvents(afterSeq = 0, limit = 1000): StoredEvent[] {
    return (this.r.events.all(afterSeq, limit) as EventRow[]).map(toEvent);
  }

  lastEventOf<K extends AuditType>(types: readonly K[], window = 1_000_000): AuditEventOf<K> | null {
    return this.lastEventsOf(types, 1, window)[0] ?? null;
  }

  lastEventsOf<K extends AuditType>(types: readonly K[], limit: number, window = 1_000_000): AuditEventOf<K>[] {
    return this.typedEvents(types, '(SELECT coalesce(max(seq), 0) FROM events) - ?', window, 'seq DESC', limit);
  }

  eventsOf<K extends AuditType>(types: readonly K[], afterSeq: number, limit: number): AuditEventOf<K>[] {
    return this.typedEvents(types, '?', afterSeq, 'seq', limit);
  }

  /**
   * At most `limit` events of one of `types` with a sequence number above `after` (an SQL
   * expression of the one parameter `param`), in the order `order`. An older checkpoint may hold a
   * type under its old name (../events/legacy-names.ts).
   */
  private typedEvents<K extends AuditType>(
    types: readonly K[],
    after: string,
    param: number,
    order: 'seq' | 'seq DESC',
    limit: number,
  ): AuditEventOf<K>[] {
    if (types.length === 0 || limit <= 0) return [];
    const names = storedNamesOf(types);
    const rows = this.db
      .prepare(
        `SELECT seq, at, type, data FROM events WHERE seq > ${after} AND type IN (${names.map(() => '?').join(', ')}) ORDER BY ${order} LIMIT ?`,
      )
      .all(param, ...names, limit) as EventRow[];
    return rows.map((r) => toEvent(r) as AuditEventOf<K>);
  }

  ownMovesSince(from: number, scheduledFrom: number): number {
    return (this.r.ownMovedSince.get(from, scheduledFrom) as { n: number }).n;
  }

  lastEventSeq(): number {
    return (this.r.lastSeq.get() as { seq: number }).seq;
  }

  summary(now: number, fresh = false): StatusSummary {
    // The statements name their columns as the summary's fields: only the flags need converting.
    const counts = this.r.counts.all() as StatusSummary['counts'];
    const quarantined = this.r.quarantined.all() as StatusSummary['quarantined'];
    const stuck = (this.r.stuck.all() as SqlFlags<StatusSummary['stuck'][number], 'readOnly'>[]).map((s) => ({
      ...s,
      readOnly: s.readOnly === null ? null : s.readOnly === 1,
    }));
    const movedLast10Min = (this.r.movedSince.get(now - TEN_MINUTES) as { n: number }).n;
    const total = counts.reduce((a, c) => a + c.n, 0);
    const retrying = this.r.retrying.all() as NonNullable<StatusSummary['retrying']>;
    const orphans = (this.r.orphans?.all() ?? []) as OrphanCopy[];
    const failedMoves = (this.r.failedMoves.all() as SqlFlags<FailedMove, 'stuck'>[]).map((f) => ({
      ...f,
      stuck: f.stuck === 1,
    }));
    // Read at most every few seconds: every progress, metrics and events tick asks for a summary,
    // and on a large checkpoint this is its dearest part.
    if (
      fresh ||
      !this.placementCache ||
      now - this.placementCache.at >= PLACEMENT_TTL_MS ||
      now < this.placementCache.at
    ) {
      this.placementCache = { at: now, rows: (this.r.placement?.all() ?? []) as DestinationPlacement[] };
    }
    const placement = this.placementCache.rows;
    const boundsReached = ((this.r.bounds?.all() ?? []) as { source: string }[]).map((b) => b.source);
    const staying =
      boundsReached.length === 0
        ? []
        : ((this.r.staying?.all() ?? []) as { kind: Kind; source: string; n: number }[]).filter((s) => s.n > 0);
    return {
      counts,
      quarantined,
      movedLast10Min,
      total,
      stuck,
      retrying,
      control: this.readControl(),
      orphans,
      failedMoves,
      placement,
      boundsReached,
      staying,
      listRun: this.givenList() !== null,
    };
  }

  readControl(): RunControl {
    const r = this.r.getControl?.get() as
      | {
          concurrency: number | null;
          paused: number;
          paused_by: string | null;
          stop_at: number | null;
          stop_by: string | null;
          updated_at: number;
        }
      | undefined;
    return r
      ? {
          concurrency: r.concurrency,
          paused: r.paused === 1,
          pausedBy: r.paused_by,
          stop: r.stop_at === null ? null : { at: r.stop_at, by: r.stop_by === 'file' ? 'file' : 'control' },
          updatedAt: r.updated_at,
        }
      : NO_CONTROL;
  }

  /**
   * Sets the live overrides (fields left undefined keep their value; `concurrency: null` goes back
   * to the plan's) and logs the change as a `control.changed` event, in one transaction. Safe while
   * a run holds the lock: the lock is a row, and SQLite serializes the two writers. `pausedBy` says
   * why a pause that no operator asked for holds (the failure breaker); any other change clears it.
   * `stop` asks the run to stop (a request already waiting keeps its time and origin) or, null,
   * clears the request (the run that ends consumes it).
   */
  writeControl(change: ControlChange, at: number): RunControl {
    return this.batch(() => {
      const cur = this.readControl();
      const paused = change.paused ?? cur.paused;
      const stop = change.stop === undefined ? (cur.stop ?? null) : change.stop && (cur.stop ?? { at, ...change.stop });
      const next: RunControl = {
        concurrency: change.concurrency === undefined ? cur.concurrency : change.concurrency,
        paused,
        pausedBy: pausedByAfter(change, cur, paused),
        stop,
        updatedAt: at,
      };
      // Writable connections are migrated, so the table is there; only a read-only one lacks it.
      if (!this.r.putControl) throw new Error(`${this.file}: the checkpoint has no control table (opened read-only?)`);
      this.r.putControl.run(
        next.concurrency,
        next.paused ? 1 : 0,
        next.pausedBy ?? null,
        stop?.at ?? null,
        stop?.by ?? null,
        at,
      );
      const stopChanged = change.stop !== undefined && (stop?.at ?? null) !== (cur.stop?.at ?? null);
      this.appendEvent(
        'control.changed',
        {
          concurrency: next.concurrency,
          paused: next.paused,
          ...(next.pausedBy ? { pausedBy: next.pausedBy } : {}),
          ...(stop ? { stop } : {}),
          previous: {
            concurrency: cur.concurrency,
            paused: cur.paused,
            ...(stopChanged ? { stop: cur.stop ?? null } : {}),
          },
          ...(change.via ? { via: change.via } : {}),
        },
        at,
      );
      return next;
    });
  }

  readThresholds(): LiveThresholds {
    return this.thresholds.read();
  }

  writeThreshold(
    name: ThresholdName,
    value: ThresholdSetting['value'] | null,
    at: number,
    by: ThresholdBy,
  ): { previous: ThresholdSetting['value'] | null; value: ThresholdSetting['value'] | null } {
    return this.batch(() => {
      const previous = this.thresholds.read().overrides.find((o) => o.name === name)?.value ?? null;
      this.thresholds.write(name, value, at, by);
      this.appendEvent('threshold.changed', { name, value, previous, by }, at);
      return { previous, value };
    });
  }

  releaseQuarantined(at: number): number {
    return this.batch(() => {
      const n = this.r.release.run().changes;
      if (n > 0) this.appendEvent('quarantine.released', { count: n }, at);
      return n;
    });
  }

  close(): void {
    if (!this.db.open) return;
    try {
      this.releaseLock();
    } catch (err) {
      // Another process holds the write lock: the lock row stays, naming this process, which is
      // gone once it exits (the next run takes it over as stale). Closing must not fail on it.
      if (!isBusyError(err)) throw err;
    } finally {
      this.closeDb();
    }
  }
}

/** A row as SQLite returns it: the `K` flags of `T` are 0 or 1 (null where `T` allows it). */
type SqlFlags<T, K extends keyof T> = Omit<T, K> & { [P in K]: null extends T[P] ? number | null : number };

interface EventRow {
  seq: number;
  at: number;
  type: string;
  data: string;
}

/**
 * A row of the log as the vocabulary's event, under today's names. The one place a stored event is
 * trusted to be what its type says: only `appendEvent`, checked against the vocabulary, writes the
 * log, and an older release's names are read through the one table of them.
 */
function toEvent(row: EventRow): StoredEvent {
  return readAuditRow({ ...row, data: JSON.parse(row.data) as unknown });
}

/** A constant as an SQL string literal. */
function sqlText(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

/**
 * Why the run is paused after a change: the reason it names; the standing one when the change leaves
 * the pause alone (a new cap); none once unpaused or paused again by hand.
 */
function pausedByAfter(
  change: Pick<ControlChange, 'paused' | 'pausedBy'>,
  cur: RunControl,
  paused: boolean,
): string | null {
  if (!paused) return null;
  if (change.pausedBy !== undefined) return change.pausedBy;
  return change.paused === undefined ? (cur.pausedBy ?? null) : null;
}

/** The move checkpoint as ./open.ts checks a file before using it. */
const MOVE_CHECKPOINT: CheckpointKind = {
  what: 'shardmove checkpoint',
  table: 'run',
  schemaVersion: SCHEMA_VERSION,
  other: { table: 'copy_run', what: 'copy checkpoint (shardmove copy), not a move checkpoint' },
  createSchema: (db) => migrate(db, ':memory:'),
};

/**
 * Opens (creating and migrating when needed) the checkpoint at `file`; ":memory:" for tests.
 * Files use WAL, so a `status` process can read while `run` writes. Throws
 * SHARDMOVE_CHECKPOINT_UNUSABLE, before writing anything, when the file cannot be a checkpoint
 * (a directory, not SQLite, damaged, another database) or cannot be written when it must be.
 */
/** Checks a move checkpoint file whole, as opening it would (throws what opening would), and closes it. */
export function checkMoveCheckpoint(file: string, busyTimeoutMs = checkpointBusyTimeout()): void {
  checkCheckpointFile(file, MOVE_CHECKPOINT, busyTimeoutMs);
}

export function openCheckpoint(file: string, opts: OpenOptions = {}): Checkpoint {
  const busyTimeoutMs = opts.busyTimeoutMs ?? checkpointBusyTimeout();
  if (file === ':memory:') {
    const db = new Database(file);
    db.pragma('synchronous = NORMAL');
    migrate(db, file);
    return new Checkpoint(file, db);
  }
  const opened = openCheckpointFile(file, MOVE_CHECKPOINT, {
    readOnly: opts.readOnly ?? false,
    busyTimeoutMs,
    integrity: !opts.checked,
  });
  const { db } = opened;
  try {
    if (!opts.readOnly) {
      db.pragma('journal_mode = WAL');
      // NORMAL in WAL is durable against process crashes (kill -9); only an OS crash may lose the last commits.
      db.pragma('synchronous = NORMAL');
      migrate(db, file);
    }
    return new Checkpoint(file, db, () => opened.close());
  } catch (err) {
    const refusal = isBusyError(err) ? checkpointBusy(file, lockHolderOn(db)) : null;
    opened.close();
    throw refusal ?? err;
  }
}
