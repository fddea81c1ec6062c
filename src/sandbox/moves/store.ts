/**
 * The SQL side of repository storage moves: bulk-job row types and statements prepared once per database
 * (the engine runs thousands of transitions a second, so nothing here is prepared per call).
 */
import type { Db, ItemKind, ItemRow, MoveRow, MoveState, Statement } from '../db.js';
import { perDatabase } from '../db.js';
import { itemStatements } from '../inventory/items.js';

export interface BulkJobRow {
  id: number;
  kind: ItemKind;
  source: string;
  destination: string | null;
  cursor_id: number;
  done: number;
  /** When the bulk POST enqueued the job (ISO): it runs `bulkDelayMs` later. */
  created_at: string;
}

/** The few item columns a bulk batch needs. */
export interface BulkItem {
  id: number;
  read_only: number;
  size_mb: number;
}

/** The columns of a move that its JSON shows (list pages read only these). */
export type MoveListRow = Pick<
  MoveRow,
  'id' | 'kind' | 'item_id' | 'state' | 'source' | 'destination' | 'error_message' | 'created_at'
>;

export interface MoveStatements {
  itemById: Statement<[ItemKind, number], ItemRow>;
  /** read_only, kind, id. GitLab sets the flag with update_column: updated_at does not change. */
  setReadOnly: Statement<[number, ItemKind, number]>;
  /** storage, checksum, commit_count, updated_at, kind, id: the item now lives on the destination. */
  replicateItem: Statement<[string, string, number, string, ItemKind, number]>;
  insertMove: Statement<[ItemKind, number, MoveState, string, string, string, number, string, string]>;
  moveById: Statement<[number], MoveRow>;
  moveByKindId: Statement<[ItemKind, number], MoveRow>;
  /** state, due_at_ms, error_message, updated_at, id */
  setMoveState: Statement<[MoveState, number | null, string | null, string, number]>;
  /** due_at_ms, snapshot_checksum, snapshot_commits, updated_at, id */
  startMove: Statement<[number | null, string, number, string, number]>;
  /** fate, id: an outcome decided when the move starts (no room on the destination). */
  setFate: Statement<[string, number]>;
  listMoves: Statement<[ItemKind, number, number], MoveListRow>;
  listItemMoves: Statement<[ItemKind, number, number, number], MoveListRow>;
  activeMoves: Statement<[], MoveRow>;
  settings: Statement<[], { value: string }>;
  insertBulk: Statement<[ItemKind, string, string | null, string]>;
  activeBulk: Statement<[], BulkJobRow>;
  bulkBatch: Statement<[ItemKind, string, number, number], BulkItem>;
  advanceBulk: Statement<[number, number, number]>;
  countKind: Statement<[ItemKind], { n: number }>;
  /** kind, item_id, storage, size_mb, move_id: a copy the move left on `storage`. */
  insertStaleCopy: Statement<[ItemKind, number, string, number, number]>;
  /** kind, item_id, storage: a move onto `storage` reuses the copy there. */
  deleteStaleCopy: Statement<[ItemKind, number, string]>;
  /** kind, item_id, storage: the size of the copy left there, if any. */
  staleCopyMb: Statement<[ItemKind, number, string], { size_mb: number }>;
  /** Moves per kind, counted once and then kept up to date by `noteMoveCreated` (list totals). */
  counts: Map<ItemKind, number>;
}

const MOVE_LIST_COLUMNS = 'id, kind, item_id, state, source, destination, error_message, created_at';

/** The move statements of `db`, prepared on first use. */
export const moveStatements = perDatabase((db): MoveStatements => ({
  itemById: itemStatements(db).byId,
  setReadOnly: db.prepare('UPDATE items SET read_only = ? WHERE kind = ? AND id = ?'),
  replicateItem: db.prepare(
    'UPDATE items SET storage = ?, checksum = ?, commit_count = ?, read_only = 0, updated_at = ? WHERE kind = ? AND id = ?',
  ),
  insertMove:
    db.prepare(`INSERT INTO moves (kind, item_id, state, source, destination, fate, duration_ms, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
  moveById: db.prepare('SELECT * FROM moves WHERE id = ?'),
  moveByKindId: db.prepare('SELECT * FROM moves WHERE kind = ? AND id = ?'),
  setMoveState: db.prepare('UPDATE moves SET state = ?, due_at_ms = ?, error_message = ?, updated_at = ? WHERE id = ?'),
  startMove: db.prepare(
    "UPDATE moves SET state = 'started', due_at_ms = ?, snapshot_checksum = ?, snapshot_commits = ?, updated_at = ? WHERE id = ?",
  ),
  setFate: db.prepare('UPDATE moves SET fate = ? WHERE id = ?'),
  // GitLab's `order_created_at_desc`: created_at only, no tie-breaker. Moves created in the same
  // millisecond (a bulk batch) come in whatever order the (kind[, item_id], created_at) index
  // walks them backwards, which SQLite makes rowid-descending; nothing here promises it.
  // Only the columns the JSON shows: converting the others (a checksum among them) cost a list page a third of its query.
  listMoves: db.prepare(
    `SELECT ${MOVE_LIST_COLUMNS} FROM moves WHERE kind = ? ORDER BY created_at DESC LIMIT ? OFFSET ?`,
  ),
  listItemMoves: db.prepare(
    `SELECT ${MOVE_LIST_COLUMNS} FROM moves WHERE kind = ? AND item_id = ? ORDER BY created_at DESC LIMIT ? OFFSET ?`,
  ),
  activeMoves: db.prepare(
    "SELECT * FROM moves WHERE state IN ('initial', 'scheduled', 'started', 'replicated') ORDER BY id",
  ),
  settings: db.prepare("SELECT value FROM meta WHERE key = 'settings'"),
  insertBulk: db.prepare('INSERT INTO bulk_jobs (kind, source, destination, created_at) VALUES (?, ?, ?, ?)'),
  activeBulk: db.prepare(
    'SELECT id, kind, source, destination, cursor_id, done, created_at FROM bulk_jobs WHERE done = 0 ORDER BY id',
  ),
  bulkBatch: db.prepare(
    'SELECT id, read_only, size_mb + wiki_mb AS size_mb FROM items WHERE kind = ? AND storage = ? AND id > ? ORDER BY id LIMIT ?',
  ),
  advanceBulk: db.prepare('UPDATE bulk_jobs SET cursor_id = ?, done = ? WHERE id = ?'),
  countKind: db.prepare('SELECT count(*) AS n FROM moves WHERE kind = ?'),
  insertStaleCopy: db.prepare(
    'INSERT OR REPLACE INTO stale_copies (kind, item_id, storage, size_mb, move_id) VALUES (?, ?, ?, ?, ?)',
  ),
  deleteStaleCopy: db.prepare('DELETE FROM stale_copies WHERE kind = ? AND item_id = ? AND storage = ?'),
  staleCopyMb: db.prepare('SELECT size_mb FROM stale_copies WHERE kind = ? AND item_id = ? AND storage = ?'),
  counts: new Map(),
}));

/** The current `repository_storages_weighted` setting (GitLab's default when never set). */
export function readWeights(db: Db): Record<string, number> {
  const row = moveStatements(db).settings.get();
  if (!row) return { default: 100 };
  const parsed = JSON.parse(row.value) as { repository_storages_weighted?: Record<string, number> };
  return parsed.repository_storages_weighted ?? { default: 100 };
}

/** Call after inserting a move, so cached totals stay exact. */
export function noteMoveCreated(db: Db, kind: ItemKind): void {
  const s = moveStatements(db);
  const n = s.counts.get(kind);
  if (n !== undefined) s.counts.set(kind, n + 1);
}

/**
 * Number of moves of a kind, or null above `cap` (GitLab leaves totals out above 10,000). Counted
 * once per process: a list request must not scan thousands of index entries every time.
 */
export function countMoves(db: Db, kind: ItemKind, cap: number): number | null {
  const s = moveStatements(db);
  let n = s.counts.get(kind);
  if (n === undefined) {
    n = s.countKind.get(kind)?.n ?? 0;
    s.counts.set(kind, n);
  }
  return n > cap ? null : n;
}
