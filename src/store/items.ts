/**
 * The item-level checkpoint: one row per item, enumeration cursors and bulk bookkeeping. Every
 * statement is prepared once; callers group updates with `batch` so a page or a poll round is one
 * transaction.
 */
import type Database from 'better-sqlite3';
import type { ItemRecord, UnlistableGap } from '../api/types.js';
import type { Kind } from '../plan/types.js';
import { RANK_CLASS_SQL, RANK_ORDER_SQL, SIZE_CLASS_SQL } from './schema.js';
import { ShapeTable } from './shape.js';
import { ITEM_STATES } from './types.js';
import type {
  BulkRow,
  EnumCursor,
  GivenList,
  ItemRow,
  ItemState,
  ItemStore,
  NetworkMemberRow,
  NetworkRow,
  PlacedRow,
} from './types.js';

interface RawItem {
  kind: Kind;
  id: number;
  source: string;
  name: string;
  size_bytes: number | null;
  state: ItemState;
  attempts: number;
  move_id: number | null;
  move_state: string | null;
  last_error: string | null;
  next_attempt_at: number;
  intent_at: number | null;
  scheduled_at: number | null;
  moved_at: number | null;
  stuck_at: number | null;
  read_only: number | null;
  seen_round: number;
  listed_at: number;
  running_at?: number | null;
  destination?: string | null;
  network?: number | null;
  rank_bytes?: number | null;
}

function toRow(r: RawItem): ItemRow {
  return {
    kind: r.kind,
    id: r.id,
    source: r.source,
    name: r.name,
    sizeBytes: r.size_bytes,
    state: r.state,
    attempts: r.attempts,
    moveId: r.move_id,
    moveState: r.move_state,
    lastError: r.last_error,
    nextAttemptAt: r.next_attempt_at,
    intentAt: r.intent_at,
    scheduledAt: r.scheduled_at,
    runningAt: r.running_at ?? null,
    movedAt: r.moved_at,
    stuckAt: r.stuck_at,
    readOnly: r.read_only === null ? null : r.read_only === 1,
    seenRound: r.seen_round,
    listedAt: r.listed_at,
    destination: r.destination ?? null,
    network: r.network ?? null,
    // Only a network's members rank by other bytes than their own: other rows leave it out.
    ...(r.rank_bytes !== null && r.rank_bytes !== undefined ? { rankBytes: r.rank_bytes } : {}),
  };
}

/** Reason recorded when a moved item is still listed on its source (GitLab issue 345591). */
export const STILL_ON_SOURCE = 'move finished but the item is still listed on the source (GitLab issue 345591)';

/** SQLite-backed ItemStore over an open, migrated database. */
/** How the reason of a row judged out of `move.select` just before its move begins (../actors/select.ts writes it). */
export const LEFT_SELECTION = 'left the selection';

export class ItemTable implements ItemStore {
  private readonly s;
  private readonly inTx: () => boolean;
  /** The checkpoint has the per-item destination (schema 15): an intent writes it in the same statement. */
  private readonly has15: boolean;
  readonly shape: ShapeTable;

  constructor(protected readonly db: Database.Database) {
    this.inTx = () => db.inTransaction;
    this.shape = new ShapeTable(db);
    const p = (sql: string) => db.prepare(sql);
    // A read-only open (`status`) of a checkpoint from before schema 6 is not migrated: it has no
    // running_at column, and it never runs the statements that write it (placeholders, which
    // would fail loudly if it did).
    const hasRunningAt = (db.prepare('SELECT name FROM pragma_table_info(?)').all('items') as { name: string }[]).some(
      (c) => c.name === 'running_at',
    );
    const w = (sql: string) => p(hasRunningAt ? sql : 'SELECT 1 WHERE 0');
    // Same for schema 7 (unlistable parts of listings, bulk confirmation).
    const has7 =
      (db
        .prepare('SELECT name FROM sqlite_master WHERE type = ? AND name = ?')
        .get('table', 'unlistable') as unknown) !== undefined;
    const w7 = (sql: string) =>
      p(has7 ? sql : 'SELECT NULL AS item_id, NULL AS after_id, NULL AS before_id, NULL AS reason WHERE 0');
    // Same for schema 8 (move model, largest-first index): an old file reads no model.
    const has10 = (db.pragma('user_version', { simple: true }) as number) >= 10;
    const has9 =
      (db
        .prepare('SELECT name FROM sqlite_master WHERE type = ? AND name = ?')
        .get('table', 'move_model') as unknown) !== undefined;
    const w9 = (sql: string) => p(has9 ? sql : 'SELECT NULL AS data WHERE 0');
    // Same for schema 15 (per-item destination, move.until bounds): an old file has placed nothing.
    const has15 = (db.pragma('user_version', { simple: true }) as number) >= 15;
    this.has15 = has15;
    const w15 = (sql: string, none: string) => p(has15 ? sql : none);
    // Schema 19 (the reviewed list of `run --only`); an older, unmigrated file was seeded from none.
    const has19 = (db.pragma('user_version', { simple: true }) as number) >= 19;
    // The order the due-order index walks: by rank from schema 15, by size class from 10, by size before.
    const order = has15 ? RANK_ORDER_SQL : has10 ? `${SIZE_CLASS_SQL} DESC, id` : 'size_bytes DESC, id';
    this.s = {
      getCursor: p('SELECT round, after_id, done FROM cursors WHERE kind = ? AND source = ?'),
      putCursor: p(
        `INSERT INTO cursors (kind, source, round, after_id, done) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (kind, source) DO UPDATE SET round = excluded.round, after_id = excluded.after_id, done = excluded.done`,
      ),
      getItem: p('SELECT * FROM items WHERE kind = ? AND id = ?'),
      insertItem: p(
        `INSERT INTO items (kind, id, source, name, size_bytes, state, seen_round, listed_at) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)
         ON CONFLICT (kind, id) DO NOTHING`,
      ),
      seen: p(`UPDATE items SET seen_round = ?, name = ?, size_bytes = ?, listed_at = ? WHERE kind = ? AND id = ?`),
      touchListed: p(`UPDATE items SET listed_at = ? WHERE kind = ? AND id = ? AND source = ?`),
      staleListed: p(
        `SELECT COUNT(*) AS n FROM items WHERE kind = ? AND source = ? AND state = 'pending' AND listed_at < ?`,
      ),
      backToPending: p(
        `UPDATE items SET state = 'pending', source = ?, last_error = ?, move_id = NULL, move_state = NULL,
           moved_at = NULL, next_attempt_at = 0, seen_round = ?, listed_at = ? WHERE kind = ? AND id = ?`,
      ),
      absent: p(
        `SELECT * FROM items WHERE kind = ? AND source = ? AND state = 'pending' AND seen_round < ? ORDER BY id LIMIT ?`,
      ),
      markSeen: p(`UPDATE items SET seen_round = MAX(seen_round, ?), listed_at = ? WHERE kind = ? AND id = ?`),
      addUnlistable: w7(
        `INSERT INTO unlistable (kind, source, round, item_id, after_id, before_id, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      unlistable: w7(
        `SELECT item_id, after_id, before_id, reason FROM unlistable WHERE kind = ? AND source = ? AND round = ? ORDER BY rowid`,
      ),
      // Largest first by size class (a power of two; unknown sizes last), then id. The partial
      // index (schema 10) walks pending items in exactly this order; items waiting out a retry
      // backoff are skipped by the filter, and join the order once due. No `LIMIT ?`: SQLite
      // re-prepares a statement whose LIMIT is a bound parameter each time it is bound (the planner
      // uses its value), and this one's order expression made that about 60 µs per call, at every
      // turn of the drain loop; dueItems stops reading after the rows it needs instead.
      due: p(
        `SELECT * FROM items ${has10 ? 'INDEXED BY items_due_order' : ''} WHERE kind = ? AND source = ? AND state = 'pending' AND next_attempt_at <= ?
         ORDER BY ${order}`,
      ),
      getModel: w9('SELECT data FROM move_model WHERE kind = ?'),
      putModel: w9(
        `INSERT INTO move_model (kind, data, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (kind) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
      ),
      nextDue: p(`SELECT MIN(next_attempt_at) AS t FROM items WHERE kind = ? AND source = ? AND state = 'pending'`),
      inStateOf: p('SELECT * FROM items WHERE kind = ? AND source = ? AND state = ? ORDER BY id LIMIT ?'),
      inStateAll: p('SELECT * FROM items WHERE kind = ? AND state = ? ORDER BY id LIMIT ?'),
      open: p(`SELECT * FROM items WHERE state IN ('scheduling', 'in_flight') ORDER BY kind, id LIMIT ?`),
      leftSelection: p(
        `SELECT * FROM items WHERE state = 'unselected' AND last_error LIKE '${LEFT_SELECTION}%' ORDER BY kind, id LIMIT ?`,
      ),
      countLeftSelection: p(
        `SELECT COUNT(*) AS n FROM items WHERE state = 'unselected' AND last_error LIKE '${LEFT_SELECTION}%'`,
      ),
      countInFlight: p(`SELECT COUNT(*) AS n FROM items WHERE state IN ('scheduling', 'in_flight')`),
      sizeStats: p(
        `SELECT SUM(size_bytes) AS bytes, COUNT(size_bytes) AS sized, MAX(size_bytes) AS max_bytes
         FROM items WHERE kind = ? AND source = ? AND state = ?`,
      ),
      // The pending items a run will still move: on a source whose move.until bound is reached,
      // only those already placed (the rest stays, see ../report/counts.ts).
      movingSizeStats: w15(
        `SELECT SUM(size_bytes) AS bytes, COUNT(size_bytes) AS sized, MAX(size_bytes) AS max_bytes
         FROM items WHERE kind = ? AND source = ? AND state = 'pending'
           AND (destination IS NOT NULL OR source NOT IN (SELECT source FROM bounds))`,
        `SELECT SUM(size_bytes) AS bytes, COUNT(size_bytes) AS sized, MAX(size_bytes) AS max_bytes
         FROM items WHERE kind = ? AND source = ? AND state = 'pending'`,
      ),
      countStates: p('SELECT state, n FROM item_counts WHERE kind = ? AND source = ?'),
      intent: w(
        `UPDATE items SET state = 'scheduling', attempts = attempts + 1, intent_at = ?, move_state = NULL,
           scheduled_at = NULL, running_at = NULL WHERE kind = ? AND id = ? AND state = 'pending'`,
      ),
      // A bulk job's move for an item already quarantined (GitLab's bulk service schedules every
      // container still on the storage): followed as one more attempt, so what it does is recorded.
      intentFromQuarantine: w(
        `UPDATE items SET state = 'scheduling', attempts = attempts + 1, intent_at = ?, move_state = NULL,
           scheduled_at = NULL, running_at = NULL, stuck_at = NULL
         WHERE kind = ? AND id = ? AND state = 'quarantined' AND stuck_at IS NULL`,
      ),
      // The intent and the destination in one statement (one row write per move, not two). The
      // destination is written once, by the first intent (or pinned before it), never changed.
      intentPlaced: w15(
        `UPDATE items SET state = 'scheduling', attempts = attempts + 1, intent_at = ?, move_state = NULL,
           scheduled_at = NULL, running_at = NULL, destination = COALESCE(destination, ?) WHERE kind = ? AND id = ? AND state = 'pending'`,
        'SELECT 1 WHERE 0',
      ),
      place: w15(
        `UPDATE items SET destination = COALESCE(destination, ?) WHERE kind = ? AND id = ?`,
        'SELECT 1 WHERE 0',
      ),
      // move.select: only a row no move of ours was made for leaves the run's scope.
      unselect: w15(
        `UPDATE items SET state = 'unselected', destination = NULL
         WHERE kind = ? AND id = ? AND state = 'pending' AND attempts = 0 AND move_id IS NULL`,
        'SELECT 1 WHERE 0',
      ),
      reselect: p(
        `UPDATE items SET state = 'pending', next_attempt_at = 0 WHERE kind = ? AND id = ? AND state = 'unselected'`,
      ),
      // Judged out just before its POST: the intent's attempt is given back, no move was sent.
      leaveSelection: p(
        `UPDATE items SET state = 'unselected', last_error = ?,
           attempts = CASE WHEN state = 'scheduling' THEN max(attempts - 1, 0) ELSE attempts END, intent_at = NULL
         WHERE kind = ? AND id = ? AND state IN ('pending', 'scheduling')`,
      ),
      getGiven: has19
        ? p('SELECT digest, file, plan_hash, items, seeded_at FROM given_list WHERE id = 1')
        : p('SELECT NULL AS digest WHERE 0'),
      putGiven: p(
        has19
          ? 'INSERT INTO given_list (id, digest, file, plan_hash, items, seeded_at) VALUES (1, ?, ?, ?, ?, ?)'
          : 'SELECT ?, ?, ?, ?, ? WHERE 0',
      ),
      pin: w15(
        `UPDATE items SET destination = ? WHERE kind = ? AND id = ? AND destination IS NULL`,
        'SELECT 1 WHERE 0',
      ),
      setNetwork: w15(`UPDATE items SET network = ? WHERE kind = ? AND id = ?`, 'SELECT 1 WHERE 0'),
      rankNetwork: w15(`UPDATE items SET rank_bytes = ? WHERE network = ? AND kind = 'projects'`, 'SELECT 1 WHERE 0'),
      putNetwork: w15(
        `INSERT INTO networks (id, root_storage, pool_bytes, bytes) VALUES (?, ?, ?, 0)
         ON CONFLICT (id) DO UPDATE SET root_storage = COALESCE(excluded.root_storage, root_storage), pool_bytes = COALESCE(excluded.pool_bytes, pool_bytes)`,
        'SELECT 1 WHERE 0',
      ),
      setNetworkBytes: w15(
        'UPDATE networks SET bytes = ?, pool_bytes = COALESCE(pool_bytes, ?) WHERE id = ?',
        'SELECT 1 WHERE 0',
      ),
      rankItem: w15(`UPDATE items SET rank_bytes = ? WHERE kind = ? AND id = ?`, 'SELECT 1 WHERE 0'),
      getNetwork: w15(
        'SELECT id, root_storage, pool_bytes, bytes FROM networks WHERE id = ?',
        'SELECT NULL AS id WHERE 0',
      ),
      allNetworks: w15(
        'SELECT id, root_storage, pool_bytes, bytes FROM networks ORDER BY id',
        'SELECT NULL AS id WHERE 0',
      ),
      networkMembers: w15(
        `SELECT network, id, name, source, destination, state, size_bytes FROM items INDEXED BY items_network
         WHERE network IS NOT NULL AND kind = 'projects' ORDER BY network, id`,
        'SELECT NULL AS network WHERE 0',
      ),
      countNetwork: w15('SELECT COUNT(*) AS n FROM items INDEXED BY items_network WHERE network = ?', 'SELECT 0 AS n'),
      placedMembers: w15(
        `SELECT network, destination, COUNT(*) AS members FROM items INDEXED BY items_network
         WHERE network IS NOT NULL AND destination IS NOT NULL GROUP BY network, destination`,
        'SELECT NULL AS network WHERE 0',
      ),
      networkPlacements: w15(
        `SELECT network, MIN(destination) AS destination, COUNT(DISTINCT destination) AS n FROM items INDEXED BY items_network
         WHERE network IS NOT NULL AND destination IS NOT NULL GROUP BY network`,
        'SELECT NULL AS network, NULL AS destination, 0 AS n WHERE 0',
      ),
      placed: w15(
        `SELECT destination, kind, source, COUNT(*) AS items, SUM(COALESCE(size_bytes, 0)) AS bytes, SUM(size_bytes IS NULL) AS unsized,
           SUM(state = 'moved') AS moved_items, SUM(CASE WHEN state = 'moved' THEN COALESCE(size_bytes, 0) ELSE 0 END) AS moved_bytes,
           SUM(state = 'moved' AND size_bytes IS NULL) AS moved_unsized
         FROM items INDEXED BY items_placed WHERE destination IS NOT NULL GROUP BY destination, kind, source`,
        'SELECT NULL AS destination WHERE 0',
      ),
      duePlaced: w15(
        `SELECT * FROM items INDEXED BY items_placed_due WHERE kind = ? AND source = ? AND state = 'pending' AND destination IS NOT NULL
           AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?`,
        'SELECT * FROM items WHERE 0',
      ),
      nextPlacedDue: w15(
        `SELECT MIN(next_attempt_at) AS t FROM items INDEXED BY items_placed_due WHERE kind = ? AND source = ? AND state = 'pending' AND destination IS NOT NULL`,
        'SELECT NULL AS t',
      ),
      unplacedPendingIds: w15(
        `SELECT id FROM items ${has10 ? 'INDEXED BY items_due_order' : ''} WHERE kind = ? AND source = ? AND state = 'pending' AND destination IS NULL
         ORDER BY ${order}`,
        'SELECT NULL AS id WHERE 0',
      ),
      unplacedPendingKeys: w15(
        `SELECT id, ${RANK_CLASS_SQL}, COALESCE(network, id) FROM items ${has10 ? 'INDEXED BY items_due_order' : ''}
         WHERE kind = ? AND source = ? AND state = 'pending' AND destination IS NULL ORDER BY ${order}`,
        'SELECT NULL AS id WHERE 0',
      ),
      countUnplaced: w15(
        `SELECT COUNT(*) AS n FROM items WHERE kind = ? AND source = ? AND state = 'pending' AND destination IS NULL`,
        'SELECT 0 AS n',
      ),
      getBound: w15(
        'SELECT reached_at, note FROM bounds WHERE source = ?',
        'SELECT NULL AS reached_at, NULL AS note WHERE 0',
      ),
      putBound: w15(
        'INSERT INTO bounds (source, reached_at, note) VALUES (?, ?, ?) ON CONFLICT (source) DO NOTHING',
        'SELECT 1 WHERE 0',
      ),
      inFlight: w(
        `UPDATE items SET state = 'in_flight', scheduled_at = CASE WHEN move_id IS ? AND scheduled_at IS NOT NULL
           THEN scheduled_at ELSE ? END, running_at = CASE WHEN move_id IS ? THEN running_at ELSE NULL END,
           move_id = ?, move_state = ? WHERE kind = ? AND id = ?`,
      ),
      moveState: p('UPDATE items SET move_state = ? WHERE kind = ? AND id = ?'),
      running: w('UPDATE items SET running_at = COALESCE(running_at, ?) WHERE kind = ? AND id = ?'),
      moved: p(
        `UPDATE items SET state = 'moved', move_id = COALESCE(?, move_id), move_state = COALESCE(?, move_state),
           moved_at = ?, last_error = ? WHERE kind = ? AND id = ?`,
      ),
      pending: p(
        `UPDATE items SET state = 'pending', next_attempt_at = ?, last_error = COALESCE(?, last_error),
           attempts = MAX(0, attempts - ?) WHERE kind = ? AND id = ?`,
      ),
      left: p(`UPDATE items SET state = 'left', moved_at = ?, last_error = ? WHERE kind = ? AND id = ?`),
      quarantine: p(
        `UPDATE items SET state = 'quarantined', last_error = ?, stuck_at = ?, read_only = ? WHERE kind = ? AND id = ?`,
      ),
      getBulk: p(
        `SELECT state, intent_at, seen_max_move_id, ${has7 ? 'confirmed_at' : 'NULL AS confirmed_at'} FROM bulk WHERE kind = ? AND source = ?`,
      ),
      putBulk: w7(
        `INSERT INTO bulk (kind, source, state, intent_at, seen_max_move_id, confirmed_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (kind, source) DO UPDATE SET state = excluded.state, intent_at = excluded.intent_at,
           seen_max_move_id = excluded.seen_max_move_id, confirmed_at = excluded.confirmed_at`,
      ),
    };
  }

  batch<T>(fn: () => T): T {
    if (this.inTx()) return fn();
    return this.db.transaction(fn).immediate();
  }

  getCursor(kind: Kind, source: string): EnumCursor | null {
    const r = this.s.getCursor.get(kind, source) as { round: number; after_id: number; done: number } | undefined;
    return r ? { round: r.round, afterId: r.after_id, done: r.done === 1 } : null;
  }

  startRound(kind: Kind, source: string, round: number): void {
    this.s.putCursor.run(kind, source, round, 0, 0);
  }

  recordPage(
    kind: Kind,
    source: string,
    round: number,
    items: readonly ItemRecord[],
    now: number,
  ): { added: number; back: ItemRow[] } {
    return this.batch(() => {
      let added = 0;
      const back: ItemRow[] = [];
      let afterId = this.getCursor(kind, source)?.afterId ?? 0;
      for (const it of items) {
        afterId = Math.max(afterId, it.id);
        if (this.s.insertItem.run(kind, it.id, source, it.name, it.sizeBytes, round, now).changes === 1) {
          added++;
          continue;
        }
        const row = this.getItem(kind, it.id);
        if (!row) continue;
        if (row.state === 'moved' || row.state === 'left') {
          const reason = row.state === 'moved' ? STILL_ON_SOURCE : 'listed on the source again';
          this.s.backToPending.run(source, reason, round, now, kind, it.id);
          back.push({ ...row, state: 'pending', lastError: reason });
        } else {
          this.s.seen.run(round, it.name, it.sizeBytes, now, kind, it.id);
        }
      }
      this.s.putCursor.run(kind, source, round, afterId, 0);
      return { added, back };
    });
  }

  countStaleListed(kind: Kind, source: string, before: number): number {
    return (this.s.staleListed.get(kind, source, before) as { n: number }).n;
  }

  touchListed(kind: Kind, source: string, ids: readonly number[], now: number): void {
    this.batch(() => {
      for (const id of ids) this.s.touchListed.run(now, kind, id, source);
    });
  }

  absentItems(kind: Kind, source: string, round: number, limit: number): ItemRow[] {
    return (this.s.absent.all(kind, source, round, limit) as RawItem[]).map(toRow);
  }

  markSeen(kind: Kind, id: number, round: number, now: number): void {
    this.s.markSeen.run(round, now, kind, id);
  }

  finishRound(kind: Kind, source: string, round: number): void {
    const c = this.getCursor(kind, source);
    this.s.putCursor.run(kind, source, round, c?.afterId ?? 0, 1);
  }

  recordUnlistable(kind: Kind, source: string, round: number, gap: UnlistableGap, now: number): void {
    this.s.addUnlistable.run(kind, source, round, gap.id, gap.afterId, gap.beforeId, gap.reason, now);
  }

  unlistable(kind: Kind, source: string, round: number): UnlistableGap[] {
    const rows = this.s.unlistable.all(kind, source, round) as {
      item_id: number | null;
      after_id: number | null;
      before_id: number | null;
      reason: string;
    }[];
    return rows.map((r) => ({ kind, id: r.item_id, afterId: r.after_id, beforeId: r.before_id, reason: r.reason }));
  }

  getItem(kind: Kind, id: number): ItemRow | null {
    const r = this.s.getItem.get(kind, id) as RawItem | undefined;
    return r ? toRow(r) : null;
  }

  dueItems(kind: Kind, source: string, now: number, limit: number): ItemRow[] {
    const out: ItemRow[] = [];
    if (limit <= 0) return out;
    // The walk follows the index's order: leaving it after `limit` rows reads no more of them.
    for (const r of this.s.due.iterate(kind, source, now) as IterableIterator<RawItem>) {
      out.push(toRow(r));
      if (out.length >= limit) break;
    }
    return out;
  }

  nextDueAt(kind: Kind, source: string): number | null {
    return (this.s.nextDue.get(kind, source) as { t: number | null }).t;
  }

  openItems(limit: number): ItemRow[] {
    return (this.s.open.all(limit) as RawItem[]).map(toRow);
  }

  leftSelection(limit: number): { rows: ItemRow[]; total: number } {
    return {
      rows: (this.s.leftSelection.all(limit) as RawItem[]).map(toRow),
      total: (this.s.countLeftSelection.get() as { n: number }).n,
    };
  }

  itemsInState(kind: Kind, source: string | null, state: ItemState, limit: number): ItemRow[] {
    const raw =
      source === null ? this.s.inStateAll.all(kind, state, limit) : this.s.inStateOf.all(kind, source, state, limit);
    return (raw as RawItem[]).map(toRow);
  }

  /**
   * Known sizes of the items in `state` on (kind, source), summed by SQLite: the dry-run estimate
   * over a million items must not read a million rows into memory.
   */
  sizeStats(kind: Kind, source: string, state: ItemState): { bytes: number; sized: number; maxBytes: number } {
    const r = this.s.sizeStats.get(kind, source, state) as {
      bytes: number | null;
      sized: number;
      max_bytes: number | null;
    };
    return { bytes: r.bytes ?? 0, sized: r.sized, maxBytes: r.max_bytes ?? 0 };
  }

  movingSizeStats(kind: Kind, source: string): { bytes: number; sized: number; maxBytes: number } {
    const r = this.s.movingSizeStats.get(kind, source) as {
      bytes: number | null;
      sized: number;
      max_bytes: number | null;
    };
    return { bytes: r.bytes ?? 0, sized: r.sized, maxBytes: r.max_bytes ?? 0 };
  }

  countInFlight(): number {
    return (this.s.countInFlight.get() as { n: number }).n;
  }

  countStates(kind: Kind, source: string): Record<ItemState, number> {
    const out = Object.fromEntries(ITEM_STATES.map((s) => [s, 0])) as Record<ItemState, number>;
    for (const r of this.s.countStates.all(kind, source) as { state: ItemState; n: number }[]) out[r.state] = r.n;
    return out;
  }

  markIntent(kind: Kind, id: number, now: number, destination?: string): boolean {
    if (destination !== undefined && this.has15)
      return this.s.intentPlaced.run(now, destination, kind, id).changes === 1;
    if (this.s.intent.run(now, kind, id).changes !== 1) return false;
    if (destination !== undefined) this.s.place.run(destination, kind, id);
    return true;
  }

  markIntentFromQuarantine(kind: Kind, id: number, now: number): boolean {
    return this.s.intentFromQuarantine.run(now, kind, id).changes === 1;
  }

  setSelected(kind: Kind, id: number, selected: boolean): boolean {
    return (selected ? this.s.reselect : this.s.unselect).run(kind, id).changes === 1;
  }

  leaveSelection(kind: Kind, id: number, reason: string): boolean {
    return this.s.leaveSelection.run(reason, kind, id).changes === 1;
  }

  givenList(): GivenList | null {
    const r = this.s.getGiven.get() as
      { digest: string; file: string; plan_hash: string; items: number; seeded_at: number } | undefined;
    return r ? { digest: r.digest, file: r.file, planHash: r.plan_hash, items: r.items, seededAt: r.seeded_at } : null;
  }

  setGivenList(list: GivenList): void {
    const held = this.givenList();
    if (held && held.digest !== list.digest)
      throw new Error(`the checkpoint was seeded from another item list (${held.digest})`);
    if (!held) this.s.putGiven.run(list.digest, list.file, list.planHash, list.items, list.seededAt);
  }

  pinDestination(kind: Kind, id: number, destination: string): boolean {
    return this.s.pin.run(destination, kind, id).changes === 1;
  }

  setNetwork(kind: Kind, id: number, network: number | null): void {
    this.s.setNetwork.run(network, kind, id);
  }

  noteNetwork(
    kind: Kind,
    ids: readonly number[],
    network: number,
    rootStorage: string | null,
    poolBytes: number | null,
  ): number {
    return this.batch(() => {
      const before = this.getNetwork(network);
      this.s.putNetwork.run(network, rootStorage, poolBytes);
      // The network's bytes are what it lands with on one destination: each member with the pool's
      // objects (its copy holds its alternates'), plus one pool copy. They grow by the new members
      // (and by the pool, once known: once for the copy and once per member counted before), counted
      // as they come, never summed again over every member (a page of a large network would be
      // quadratic); the members are counted once, when the pool becomes known.
      let bytes = before?.bytes ?? 0;
      const pool = before?.poolBytes ?? poolBytes ?? 0;
      if ((before?.poolBytes ?? null) === null && poolBytes !== null)
        bytes += poolBytes * (1 + (before ? (this.s.countNetwork.get(network) as { n: number }).n : 0));
      const fresh: number[] = [];
      for (const id of ids) {
        const row = this.getItem(kind, id);
        if (!row || row.network === network) continue;
        bytes += (row.sizeBytes ?? 0) + pool;
        fresh.push(id);
        this.s.setNetwork.run(network, kind, id);
      }
      this.s.setNetworkBytes.run(bytes, poolBytes, network);
      // Every member ranks by the network's bytes; only the size class orders, so all members are
      // ranked again only when the class changes (a few times per network), else just the new ones.
      const classOf = (b: number) => (b >= 1 ? Math.floor(Math.log2(b)) : -1);
      if (before === null || classOf(before.bytes) !== classOf(bytes)) this.s.rankNetwork.run(bytes, network);
      else for (const id of fresh) this.s.rankItem.run(bytes, kind, id);
      return bytes;
    });
  }

  getNetwork(network: number): NetworkRow | null {
    const r = this.s.getNetwork.get(network) as
      { id: number; root_storage: string | null; pool_bytes: number | null; bytes: number } | undefined;
    return r ? { id: r.id, rootStorage: r.root_storage, poolBytes: r.pool_bytes, bytes: r.bytes } : null;
  }

  networks(): NetworkRow[] {
    return (
      this.s.allNetworks.all() as {
        id: number;
        root_storage: string | null;
        pool_bytes: number | null;
        bytes: number;
      }[]
    ).map((r) => ({
      id: r.id,
      rootStorage: r.root_storage,
      poolBytes: r.pool_bytes,
      bytes: r.bytes,
    }));
  }

  networkMembers(): NetworkMemberRow[] {
    type Raw = {
      network: number;
      id: number;
      name: string;
      source: string;
      destination: string | null;
      state: ItemState;
      size_bytes: number | null;
    };
    return (this.s.networkMembers.all() as Raw[]).map((r) => ({
      network: r.network,
      id: r.id,
      name: r.name,
      source: r.source,
      destination: r.destination,
      state: r.state,
      sizeBytes: r.size_bytes,
    }));
  }

  networkPlacements(): { networks: Map<number, string>; split: Set<number> } {
    const rows = this.s.networkPlacements.all() as { network: number; destination: string; n: number }[];
    return {
      networks: new Map(rows.filter((r) => r.n === 1).map((r) => [r.network, r.destination])),
      split: new Set(rows.filter((r) => r.n > 1).map((r) => r.network)),
    };
  }

  placedNetworkMembers(): { network: number; destination: string; members: number }[] {
    return this.s.placedMembers.all() as { network: number; destination: string; members: number }[];
  }

  placedBytes(): PlacedRow[] {
    type Raw = {
      destination: string;
      kind: Kind;
      source: string;
      items: number;
      bytes: number;
      unsized: number;
      moved_items: number;
      moved_bytes: number;
      moved_unsized: number;
    };
    return (this.s.placed.all() as Raw[]).map((r) => ({
      destination: r.destination,
      kind: r.kind,
      source: r.source,
      items: r.items,
      bytes: r.bytes,
      unsized: r.unsized,
      movedItems: r.moved_items,
      movedBytes: r.moved_bytes,
      movedUnsized: r.moved_unsized,
    }));
  }

  duePlacedItems(kind: Kind, source: string, now: number, limit: number): ItemRow[] {
    return (this.s.duePlaced.all(kind, source, now, limit) as RawItem[]).map(toRow);
  }

  nextPlacedDueAt(kind: Kind, source: string): number | null {
    return (this.s.nextPlacedDue.get(kind, source) as { t: number | null }).t;
  }

  unplacedPendingIds(kind: Kind, source: string): number[] {
    return this.s.unplacedPendingIds.pluck().all(kind, source) as number[];
  }

  unplacedPendingKeys(kind: Kind, source: string): { ids: number[]; classes: number[]; groups: number[] } {
    const out = { ids: [] as number[], classes: [] as number[], groups: [] as number[] };
    // Three flat arrays rather than a row object per item: a million items stay a few tens of MB.
    for (const r of this.s.unplacedPendingKeys.raw().iterate(kind, source) as Iterable<[number, number, number]>) {
      out.ids.push(r[0]);
      out.classes.push(r[1]);
      out.groups.push(r[2]);
    }
    return out;
  }

  itemsByIds(kind: Kind, ids: readonly number[]): ItemRow[] {
    const out: ItemRow[] = [];
    for (const id of ids) {
      const row = this.getItem(kind, id);
      if (row) out.push(row);
    }
    return out;
  }

  countUnplaced(kind: Kind, source: string): number {
    return (this.s.countUnplaced.get(kind, source) as { n: number }).n;
  }

  getBound(source: string): { reachedAt: number; note: string } | null {
    const r = this.s.getBound.get(source) as { reached_at: number; note: string } | undefined;
    return r ? { reachedAt: r.reached_at, note: r.note } : null;
  }

  setBound(source: string, at: number, note: string): void {
    this.s.putBound.run(source, at, note);
  }

  markInFlight(kind: Kind, id: number, moveId: number, moveState: string, since: number): void {
    this.s.inFlight.run(moveId, since, moveId, moveId, moveState, kind, id);
  }

  markMoveState(kind: Kind, id: number, moveState: string): void {
    this.s.moveState.run(moveState, kind, id);
  }

  markRunning(kind: Kind, id: number, at: number): void {
    this.s.running.run(at, kind, id);
  }

  markMoved(
    kind: Kind,
    id: number,
    moveId: number | null,
    moveState: string | null,
    now: number,
    note: string | null,
  ): void {
    this.s.moved.run(moveId, moveState, now, note, kind, id);
  }

  markPending(kind: Kind, id: number, nextAttemptAt: number, lastError: string | null, refundAttempt: boolean): void {
    this.s.pending.run(nextAttemptAt, lastError, refundAttempt ? 1 : 0, kind, id);
  }

  markLeft(kind: Kind, id: number, now: number, note: string | null): void {
    this.s.left.run(now, note, kind, id);
  }

  markQuarantined(
    kind: Kind,
    id: number,
    reason: string,
    stuck: { at: number; readOnly: boolean | null } | null,
  ): void {
    const ro = stuck?.readOnly === undefined || stuck.readOnly === null ? null : stuck.readOnly ? 1 : 0;
    this.s.quarantine.run(reason, stuck?.at ?? null, ro, kind, id);
  }

  getBulk(kind: Kind, source: string): BulkRow | null {
    const r = this.s.getBulk.get(kind, source) as
      { state: BulkRow['state']; intent_at: number; seen_max_move_id: number; confirmed_at: number | null } | undefined;
    return r
      ? {
          kind,
          source,
          state: r.state,
          intentAt: r.intent_at,
          seenMaxMoveId: r.seen_max_move_id,
          confirmedAt: r.confirmed_at,
        }
      : null;
  }

  setBulk(row: BulkRow): void {
    this.s.putBulk.run(row.kind, row.source, row.state, row.intentAt, row.seenMaxMoveId, row.confirmedAt ?? null);
  }

  getMoveModel(kind: Kind): string | null {
    return (this.s.getModel.get(kind) as { data: string } | undefined)?.data ?? null;
  }

  setMoveModel(kind: Kind, data: string, now: number): void {
    this.s.putModel.run(kind, data, now);
  }
}
