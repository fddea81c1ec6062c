/**
 * The item-level checkpoint's prepared statements, one small function per concern, composed by
 * `itemStatements` for ./items.ts. A read-only open (`status`) of a file an older release wrote is not
 * migrated: a statement over a table or column it lacks is prepared as a placeholder that finds
 * nothing (and that a write, which such an open never makes, would not apply).
 */
import type Database from 'better-sqlite3';
import { RANK_CLASS_SQL, RANK_ORDER_SQL, SIZE_CLASS_SQL } from './schema.js';
import { hasColumn, hasTable, prepareIf, preparePlaceholder } from './introspect.js';

/** Reason recorded for a row judged out of `move.select` just before its move begins (../actors/select.ts writes it). */
export const LEFT_SELECTION = 'left the selection';

/** What the opened file has, and how to prepare a statement that needs it. */
export interface ItemSchema {
  /** Prepares a statement the file can run whatever its schema. */
  p: (sql: string) => Database.Statement;
  /** Schema 6 (`running_at`), else a placeholder. */
  w: (sql: string) => Database.Statement;
  /** Schema 7 (unlistable parts of listings, bulk confirmation), else a placeholder. */
  w7: (sql: string) => Database.Statement;
  /** Schema 9 (the move model), else a placeholder: an old file reads no model. */
  w9: (sql: string) => Database.Statement;
  /** Schema 15 (per-item destination, `move.until` bounds, fork networks), else `none`: an old file placed nothing. */
  w15: (sql: string, none: string) => Database.Statement;
  /** Schema 22 (the state of `move.concurrency: auto`'s limiter), else a placeholder: an old file kept none. */
  w22: (sql: string) => Database.Statement;
  has7: boolean;
  /** Schema 10: the largest-first due-order index. */
  has10: boolean;
  has15: boolean;
  /** Schema 19: the reviewed list of `run --only`; an older, unmigrated file was seeded from none. */
  has19: boolean;
  /** The order the due-order index walks: by rank from schema 15, by size class from 10, by size before. */
  order: string;
}

/** What `db` has of the item-level schema. */
export function itemSchemaOf(db: Database.Database): ItemSchema {
  const p = (sql: string) => db.prepare(sql);
  const hasRunningAt = hasColumn(db, 'items', 'running_at');
  const has7 = hasTable(db, 'unlistable');
  const has9 = hasTable(db, 'move_model');
  const version = db.pragma('user_version', { simple: true }) as number;
  const has10 = version >= 10;
  const has15 = version >= 15;
  return {
    p,
    w: prepareIf(db, hasRunningAt, 'SELECT 1 WHERE 0'),
    w7: prepareIf(db, has7, 'SELECT NULL AS item_id, NULL AS after_id, NULL AS before_id, NULL AS reason WHERE 0'),
    w9: prepareIf(db, has9, 'SELECT NULL AS data WHERE 0'),
    w15: (sql, none) => (has15 ? p(sql) : preparePlaceholder(db, sql, none)),
    w22: prepareIf(db, version >= 22, 'SELECT NULL AS data WHERE 0'),
    has7,
    has10,
    has15,
    has19: version >= 19,
    order: has15 ? RANK_ORDER_SQL : has10 ? `${SIZE_CLASS_SQL} DESC, id` : 'size_bytes DESC, id',
  };
}

/** Listing rounds: the cursors, the rows a page adds or sees again, and what a round could not read. */
function listingStatements({ p, w7 }: ItemSchema) {
  return {
    getCursor: p('SELECT round, after_id, done FROM cursors WHERE kind = ? AND source = ?'),
    putCursor: p(
      `INSERT INTO cursors (kind, source, round, after_id, done) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (kind, source) DO UPDATE SET round = excluded.round, after_id = excluded.after_id, done = excluded.done`,
    ),
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
  };
}

/** Reading the rows: one by its key, the due ones in the largest-first order, by state, counts and sizes. */
function readStatements({ p, w15, has10, order }: ItemSchema) {
  return {
    getItem: p('SELECT * FROM items WHERE kind = ? AND id = ?'),
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
  };
}

/** A row's way from pending to moved: the intent, the move in flight and how it ended, and `move.select`'s changes. */
function moveStatements({ p, w, w15 }: ItemSchema) {
  return {
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
    place: w15(`UPDATE items SET destination = COALESCE(destination, ?) WHERE kind = ? AND id = ?`, 'SELECT 1 WHERE 0'),
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
  };
}

/** Fork networks: each member's network, the network's bytes and root, and where its members were placed. */
function networkStatements({ w15 }: ItemSchema) {
  return {
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
      'SELECT id, root_storage AS rootStorage, pool_bytes AS poolBytes, bytes FROM networks WHERE id = ?',
      'SELECT NULL AS id WHERE 0',
    ),
    allNetworks: w15(
      'SELECT id, root_storage AS rootStorage, pool_bytes AS poolBytes, bytes FROM networks ORDER BY id',
      'SELECT NULL AS id WHERE 0',
    ),
    // Named as the row type's fields: the rows are returned as they are read.
    networkMembers: w15(
      `SELECT network, id, name, source, destination, state, size_bytes AS sizeBytes FROM items INDEXED BY items_network
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
  };
}

/** Placement on the destinations: pinned and placed rows, `move.until` bounds, and the reviewed list a checkpoint was seeded from. */
function placementStatements({ p, w15, has10, has19, order }: ItemSchema) {
  return {
    getGiven: has19
      ? p('SELECT digest, file, plan_hash, items, seeded_at FROM given_list WHERE id = 1')
      : p('SELECT NULL AS digest WHERE 0'),
    putGiven: p(
      has19
        ? 'INSERT INTO given_list (id, digest, file, plan_hash, items, seeded_at) VALUES (1, ?, ?, ?, ?, ?)'
        : 'SELECT ?, ?, ?, ?, ? WHERE 0',
    ),
    pin: w15(`UPDATE items SET destination = ? WHERE kind = ? AND id = ? AND destination IS NULL`, 'SELECT 1 WHERE 0'),
    // Named as the row type's fields, like networkMembers.
    placed: w15(
      `SELECT destination, kind, source, COUNT(*) AS items, SUM(COALESCE(size_bytes, 0)) AS bytes, SUM(size_bytes IS NULL) AS unsized,
         SUM(state = 'moved') AS movedItems, SUM(CASE WHEN state = 'moved' THEN COALESCE(size_bytes, 0) ELSE 0 END) AS movedBytes,
         SUM(state = 'moved' AND size_bytes IS NULL) AS movedUnsized
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
  };
}

/** Per-kind bookkeeping: the move-duration model and the bulk POSTs per source. */
function bookkeepingStatements({ p, w7, w9, w22, has7 }: ItemSchema) {
  return {
    getAutoCap: w22('SELECT data FROM auto_cap WHERE id = 1'),
    putAutoCap: w22(
      `INSERT INTO auto_cap (id, data, updated_at) VALUES (1, ?, ?)
       ON CONFLICT (id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
    ),
    getModel: w9('SELECT data FROM move_model WHERE kind = ?'),
    putModel: w9(
      `INSERT INTO move_model (kind, data, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (kind) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
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

/** Every statement of the item-level checkpoint, prepared once (the file's schema decides which are placeholders). */
export function itemStatements(schema: ItemSchema) {
  return {
    ...listingStatements(schema),
    ...readStatements(schema),
    ...moveStatements(schema),
    ...networkStatements(schema),
    ...placementStatements(schema),
    ...bookkeepingStatements(schema),
  };
}

/** The statements ./items.ts runs. */
export type ItemStatements = ReturnType<typeof itemStatements>;
