/**
 * Checkpoint schema, as ordered migrations keyed by `PRAGMA user_version`. A migration is never
 * edited once released: add the next one.
 */
import type Database from 'better-sqlite3';
import { StoreVersionError } from './errors.js';

/**
 * An item's size class for largest-first scheduling: floor(log2(size_bytes)) for a known size of at
 * least one byte, -1 for 0, -2 for an unknown size (so DESC puts unknown sizes last). Written as a
 * CASE because SQLite's math functions are optional; the index (migration 10) and the query that
 * walks it (items.ts, `due`) must use this exact text.
 */
function sizeClassOf(expr: string): string {
  return `(CASE WHEN ${expr} IS NULL THEN -2 ${Array.from({ length: 51 }, (_, i) => 50 - i)
    .map((b) => `WHEN ${expr} >= ${2 ** b} THEN ${b}`)
    .join(' ')} ELSE -1 END)`;
}
export const SIZE_CLASS_SQL = sizeClassOf('size_bytes');

/**
 * The scheduling order from schema 15 (fork networks): a fork network's members rank by the network's
 * bytes (`rank_bytes`: its members on the sources plus its pool), every other item by its own size,
 * and a network's members follow each other (`COALESCE(network, id)`), so a network is scheduled as
 * one unit, largest first. The index (migration 15) and the queries in items.ts use this exact text.
 */
export const RANK_CLASS_SQL = sizeClassOf('COALESCE(rank_bytes, size_bytes)');
export const RANK_ORDER_SQL = `${RANK_CLASS_SQL} DESC, COALESCE(network, id), id`;

const MIGRATIONS: readonly string[] = [
  // 1: run snapshot, lock, event log, items, enumeration cursors, bulk bookkeeping.
  `
  CREATE TABLE run (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    plan_name TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    machine_version INTEGER NOT NULL,
    snapshot TEXT NOT NULL
  );
  CREATE TABLE lock (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started_at INTEGER NOT NULL
  );
  CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL
  );
  CREATE TABLE items (
    kind TEXT NOT NULL,
    id INTEGER NOT NULL,
    source TEXT NOT NULL,
    name TEXT NOT NULL,
    size_bytes INTEGER,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    move_id INTEGER,
    move_state TEXT,
    last_error TEXT,
    next_attempt_at INTEGER NOT NULL DEFAULT 0,
    intent_at INTEGER,
    scheduled_at INTEGER,
    moved_at INTEGER,
    stuck_at INTEGER,
    read_only INTEGER,
    seen_round INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (kind, id)
  ) WITHOUT ROWID;
  CREATE INDEX items_by_state ON items (kind, source, state, next_attempt_at);
  CREATE INDEX items_state ON items (state);
  CREATE INDEX items_moved_at ON items (moved_at) WHERE moved_at IS NOT NULL;
  CREATE TABLE cursors (
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    round INTEGER NOT NULL,
    after_id INTEGER NOT NULL,
    done INTEGER NOT NULL,
    PRIMARY KEY (kind, source)
  );
  CREATE TABLE bulk (
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    state TEXT NOT NULL,
    intent_at INTEGER NOT NULL,
    seen_max_move_id INTEGER NOT NULL,
    PRIMARY KEY (kind, source)
  );
  `,
  // 2: counts per (kind, source, state) kept by triggers, so `status` and progress lines stay cheap
  // at a million items (a GROUP BY over the items index took ~0.5 s there).
  `
  CREATE TABLE item_counts (
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    state TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (kind, source, state)
  ) WITHOUT ROWID;
  INSERT INTO item_counts (kind, source, state, n) SELECT kind, source, state, COUNT(*) FROM items GROUP BY kind, source, state;
  CREATE TRIGGER item_counts_insert AFTER INSERT ON items BEGIN
    INSERT INTO item_counts (kind, source, state, n) VALUES (NEW.kind, NEW.source, NEW.state, 1)
      ON CONFLICT (kind, source, state) DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER item_counts_update AFTER UPDATE OF state, source ON items
    WHEN OLD.state IS NOT NEW.state OR OLD.source IS NOT NEW.source BEGIN
    UPDATE item_counts SET n = n - 1 WHERE kind = OLD.kind AND source = OLD.source AND state = OLD.state;
    INSERT INTO item_counts (kind, source, state, n) VALUES (NEW.kind, NEW.source, NEW.state, 1)
      ON CONFLICT (kind, source, state) DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER item_counts_delete AFTER DELETE ON items BEGIN
    UPDATE item_counts SET n = n - 1 WHERE kind = OLD.kind AND source = OLD.source AND state = OLD.state;
  END;
  `,
  // 3: when each item was last listed on its source, so a POST is sent only on fresh knowledge.
  `
  ALTER TABLE items ADD COLUMN listed_at INTEGER NOT NULL DEFAULT 0;
  `,
  // 4: items waiting for a retry after a failed attempt, counted for progress lines and `status`
  // without scanning every pending item (the partial index holds only the retrying ones).
  `
  CREATE INDEX items_retrying ON items (kind, source) WHERE state = 'pending' AND attempts > 0;
  `,
  // 5: the operator's live overrides (\`shardmove control\`): a concurrency cap other than the plan's,
  // and a pause. Kept apart from the plan, so changing them mid-run is not a plan change.
  `
  CREATE TABLE control (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    concurrency INTEGER,
    paused INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL
  );
  `,
  // 6: when the current move was first seen running (started or replicated), so the stuck limit for
  // running moves does not count the time a move waited in GitLab's throttled queue (scheduled).
  `
  ALTER TABLE items ADD COLUMN running_at INTEGER;
  `,
  // 7: parts of a listing that could not be read (a page that kept answering 500, narrowed down to
  // an item or an id range), per enumeration round, so verification never calls such a storage
  // empty; and when a bulk POST for a kind whose storage the instance does not expose was seen to
  // create no new move (the move-records proof that nothing is left on the source).
  `
  CREATE TABLE unlistable (
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    round INTEGER NOT NULL,
    item_id INTEGER,
    after_id INTEGER,
    before_id INTEGER,
    reason TEXT NOT NULL,
    at INTEGER NOT NULL
  );
  CREATE INDEX unlistable_by_round ON unlistable (kind, source, round);
  ALTER TABLE bulk ADD COLUMN confirmed_at INTEGER;
  `,
  // 8: the run lock as a lease: the holder renews heartbeat_at; a lock whose heartbeat is
  // older than its holder's lease_ms may be taken over. Every acquisition raises the generation
  // (kept in lock_generation, which outlives released locks), and the holder's writes are fenced on it.
  `
  ALTER TABLE lock ADD COLUMN heartbeat_at INTEGER;
  ALTER TABLE lock ADD COLUMN lease_ms INTEGER;
  ALTER TABLE lock ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE lock_generation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n INTEGER NOT NULL
  );
  `,
  // 9: the learned move-duration model per kind (a JSON window of recent observations),
  // so a resumed run predicts completions from what it already watched; and the largest-first
  // scheduling order (size descending, unknown sizes last, then id) read straight off an index.
  `
  CREATE TABLE move_model (
    kind TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX items_due_order ON items (kind, source, size_bytes DESC, id) WHERE state = 'pending';
  `,
  // 10: largest first by size class (powers of two) instead of the exact size. An index in exact
  // size order takes every new item at a random place, which made recording 100,000 listed items
  // about 4x slower; within a class the order is by id, so inserts append at about 40 places. The
  // order is still longest-processing-time first to within a factor of two.
  `
  DROP INDEX items_due_order;
  CREATE INDEX items_due_order ON items (kind, source, ${SIZE_CLASS_SQL} DESC, id) WHERE state = 'pending';
  `,
  // 11: what kind of run the checkpoint holds, a real run or a dry run, fixed by the
  // first run that claims it, so that neither can ever resume the other's snapshot. An older
  // checkpoint takes the kind of the first run that started on it.
  `
  CREATE TABLE identity (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    mode TEXT NOT NULL CHECK (mode IN ('run', 'dry-run'))
  );
  INSERT INTO identity (id, mode)
    SELECT 1, CASE WHEN json_extract(data, '$.dryRun') = 1 THEN 'dry-run' ELSE 'run' END
    FROM events WHERE type = 'run.started' ORDER BY seq LIMIT 1;
  `,
  // 12: moved items whose source copy is left behind (a move that ended cleanup failed,
  // or failed after the switch), read by every summary: a partial index keeps that read small.
  `
  CREATE INDEX items_orphans ON items (kind, id) WHERE state = 'moved' AND move_state IN ('cleanup failed', 'failed');
  `,
  // 13: why the run is paused when the failure breaker paused it (null: an operator did).
  `
  ALTER TABLE control ADD COLUMN paused_by TEXT;
  `,
  // 14 (the twin): what a dry run learnt of its projects beyond the listing. GitLab's
  // entities say nothing of hidden or pending deletion, so a dry run lists each project source
  // again without one flag (./shape.ts); `census` says which of those listings finished for which
  // enumeration round, `item_flags` holds the items found to carry a flag (only those: the
  // others carry none once the census is done).
  `
  CREATE TABLE census (
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    flag TEXT NOT NULL CHECK (flag IN ('hidden', 'pending_delete')),
    round INTEGER NOT NULL,
    flagged INTEGER NOT NULL DEFAULT 0,
    done_at INTEGER,
    PRIMARY KEY (kind, source, flag)
  );
  CREATE TABLE item_flags (
    kind TEXT NOT NULL,
    id INTEGER NOT NULL,
    flag TEXT NOT NULL,
    PRIMARY KEY (kind, id, flag)
  ) WITHOUT ROWID;
  `,
  // 15 (many destinations): where each item goes, chosen when its first intent is recorded (or pinned when
  // the row is written, as a revert does) and never changed after; the fork network an item belongs
  // to (its root project's id), so a network is placed as one unit; and the sources whose
  // \`move.until\` bound was reached (what is left there stays, as expected).
  `
  ALTER TABLE items ADD COLUMN destination TEXT;
  ALTER TABLE items ADD COLUMN network INTEGER;
  ALTER TABLE items ADD COLUMN rank_bytes INTEGER;
  CREATE INDEX items_placed ON items (destination, kind, source, state, size_bytes) WHERE destination IS NOT NULL;
  CREATE INDEX items_placed_due ON items (kind, source, next_attempt_at) WHERE state = 'pending' AND destination IS NOT NULL;
  CREATE INDEX items_network ON items (network) WHERE network IS NOT NULL;
  DROP INDEX items_due_order;
  CREATE INDEX items_due_order ON items (kind, source, ${RANK_CLASS_SQL} DESC, COALESCE(network, id), id) WHERE state = 'pending';
  CREATE TABLE networks (
    id INTEGER PRIMARY KEY,
    root_storage TEXT,
    pool_bytes INTEGER,
    bytes INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE bounds (
    source TEXT PRIMARY KEY,
    reached_at INTEGER NOT NULL,
    note TEXT NOT NULL
  );
  `,
  // 16: a third kind of checkpoint, a revert's (\`shardmove revert\`, beside the forward
  // run's): neither a run nor a dry run may ever resume it, and it is never reverted in turn.
  // SQLite cannot change a CHECK in place, so the one-row table is copied.
  `
  CREATE TABLE identity_16 (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    mode TEXT NOT NULL CHECK (mode IN ('run', 'dry-run', 'revert'))
  );
  INSERT INTO identity_16 (id, mode) SELECT id, mode FROM identity;
  DROP TABLE identity;
  ALTER TABLE identity_16 RENAME TO identity;
  `,
  // 17: the plan the run's hash covers (the normalised plan without credentials, as canonical JSON),
  // so that a refused resume can say which fields changed. Older rows have none (null).
  `
  ALTER TABLE run ADD COLUMN plan TEXT;
  `,
  // 18: a stop from outside (\`shardmove control --stop\`, or the stop file beside the checkpoint):
  // when it was asked for and by what; null when none waits. The run that ends clears it.
  `
  ALTER TABLE control ADD COLUMN stop_at INTEGER;
  ALTER TABLE control ADD COLUMN stop_by TEXT;
  `,
  // 19: the reviewed item list a checkpoint was seeded from (\`run --only FILE\`), so
  // that it is resumed with that list only, and never by a run that lists its sources.
  `
  CREATE TABLE given_list (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    digest TEXT NOT NULL,
    file TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    items INTEGER NOT NULL,
    seeded_at INTEGER NOT NULL
  );
  `,
  // 20: notifications and hooks (the plan's `notify:`). The public events the targets asked for, each
  // once with a number of its own (its `seq` for every delivery), and one delivery per event and
  // target until it is delivered: attempts, the next attempt (null: given up by the process that
  // tried, tried again by the next run) and the last error. The cursor is the last audit event turned
  // into notifications, so a run killed between an event and its notification makes it on resume.
  `
  CREATE TABLE notify_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    audit_seq INTEGER,
    at INTEGER NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL
  );
  CREATE TABLE notify_deliveries (
    target TEXT NOT NULL,
    event_seq INTEGER NOT NULL,
    label TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    delivered_at INTEGER,
    last_error TEXT,
    PRIMARY KEY (target, event_seq)
  ) WITHOUT ROWID;
  CREATE INDEX notify_undelivered ON notify_deliveries (target, event_seq) WHERE delivered_at IS NULL;
  CREATE TABLE notify_cursor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    audit_seq INTEGER NOT NULL
  );
  `,
  // 21: thresholds changed live (\`shardmove control --breaker\`, \`--rule NAME --above X\`,
  // \`--latency-p90\`): one row per threshold, its value as JSON, when and by whom (store/thresholds.ts).
  // A threshold without a row is the plan's.
  `
  CREATE TABLE thresholds (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    at INTEGER NOT NULL,
    by TEXT NOT NULL
  ) WITHOUT ROWID;
  `,
  // 22: the state of \`move.concurrency: auto\`'s limiter (its cap, its knee, its last judged window;
  // src/schedule/auto-limit.ts) as JSON, one row: a resumed run goes on from what it had learned,
  // and a dry run beside it can say which cap its estimate assumes.
  `
  CREATE TABLE auto_cap (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    data TEXT NOT NULL,
    updated_at INTEGER NOT NULL
  );
  `,
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Brings the database up to `target` (default SCHEMA_VERSION), each migration in its own transaction. */
export function migrate(db: Database.Database, file: string, target = SCHEMA_VERSION): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) throw new StoreVersionError(file, current, SCHEMA_VERSION);
  for (let v = current; v < target; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v] as string);
      db.pragma(`user_version = ${v + 1}`);
    }).immediate();
  }
}
