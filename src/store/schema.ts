/**
 * Checkpoint schema, as ordered migrations keyed by `PRAGMA user_version`. A migration is never
 * edited once released: add the next one.
 */
import type Database from 'better-sqlite3';
import { StoreVersionError } from './errors.js';

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
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Brings the database up to SCHEMA_VERSION, each migration in its own transaction. */
export function migrate(db: Database.Database, file: string): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) throw new StoreVersionError(file, current, SCHEMA_VERSION);
  for (let v = current; v < SCHEMA_VERSION; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v] as string);
      db.pragma(`user_version = ${v + 1}`);
    }).immediate();
  }
}
