/**
 * The sandbox's one SQLite database: schema, migrations (PRAGMA user_version) and the small
 * key/value `meta` table. Everything the service knows lives here, so `--db FILE` restarts where
 * it stopped; without a file it is `:memory:` through the same code path.
 *
 * The row types of `items` and `moves` live here too, beside their tables: every layer reads them
 * (the seed writes items, http/'s context names them in what handlers ask of the move engine).
 */
import Database from 'better-sqlite3';

export type Db = Database.Database;

/**
 * A prepared statement, typed by its parameters and the row its SQL returns. Declare a statement's
 * type where it is kept (an interface of statements), and `db.prepare(sql)` takes it from there.
 */
export type Statement<P extends unknown[] = unknown[], R = unknown> = Database.Statement<P, R>;

/** Item kinds in the singular, as the API's nested objects and error keys use them. */
export type ItemKind = 'project' | 'snippet' | 'group';
export const ITEM_KINDS: readonly ItemKind[] = ['project', 'snippet', 'group'];

/** One row of `items`. */
export interface ItemRow {
  kind: ItemKind;
  id: number;
  name: string;
  path: string;
  namespace: string;
  visibility: string;
  storage: string;
  read_only: number;
  size_mb: number;
  checksum: string;
  commit_count: number;
  owner_id: number | null;
  project_id: number | null;
  created_at: string;
  updated_at: string;
}

/** The columns of ItemRow, in the table's own order. */
export const ITEM_COLUMNS =
  'kind, id, name, path, namespace, visibility, storage, read_only, size_mb, checksum, commit_count, owner_id, project_id, created_at, updated_at';

/** GitLab's move states as the API spells them (`cleanup failed` has a space); stored verbatim. */
export type MoveState = 'initial' | 'scheduled' | 'started' | 'replicated' | 'finished' | 'failed' | 'cleanup failed';

/** One row of `moves`. */
export interface MoveRow {
  id: number;
  kind: ItemKind;
  item_id: number;
  state: MoveState;
  source: string;
  destination: string;
  error_message: string | null;
  fate: string;
  duration_ms: number;
  due_at_ms: number | null;
  snapshot_checksum: string | null;
  snapshot_commits: number | null;
  created_at: string;
  updated_at: string;
}

const MIGRATIONS: string[] = [
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE COLLATE NOCASE,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    admin INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT 'active',
    bot INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
  );
  CREATE TABLE applications (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    uid TEXT NOT NULL UNIQUE,
    secret TEXT NOT NULL UNIQUE,
    redirect_uri TEXT NOT NULL,
    confidential INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL
  );
  -- One row per credential of any type. value is the literal secret (OAuth: the access token).
  CREATE TABLE credentials (
    id INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    value TEXT NOT NULL UNIQUE,
    refresh_token TEXT UNIQUE,
    user_id INTEGER,
    project_id INTEGER,
    group_id INTEGER,
    application_id INTEGER,
    name TEXT,
    scopes TEXT NOT NULL DEFAULT '[]',
    expires_at TEXT,
    expires_at_ms INTEGER,
    revoked INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_used_at TEXT,
    previous_id INTEGER,
    extra TEXT NOT NULL DEFAULT '{}'
  );
  CREATE INDEX credentials_user ON credentials(user_id, type);
  -- Projects, snippets and groups (a group's repository is its wiki) in one table.
  CREATE TABLE items (
    kind TEXT NOT NULL,
    id INTEGER NOT NULL,
    name TEXT NOT NULL,
    path TEXT NOT NULL,
    namespace TEXT NOT NULL,
    visibility TEXT NOT NULL,
    storage TEXT NOT NULL,
    read_only INTEGER NOT NULL DEFAULT 0,
    size_mb REAL NOT NULL,
    checksum TEXT NOT NULL,
    commit_count INTEGER NOT NULL DEFAULT 0,
    owner_id INTEGER,
    project_id INTEGER,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (kind, id)
  ) WITHOUT ROWID;
  CREATE INDEX items_storage ON items(kind, storage, id);
  CREATE TABLE commits (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    sha TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE INDEX commits_item ON commits(kind, item_id);
  -- fate is decided when the move is created (faults), so a restart replays the same outcome.
  CREATE TABLE moves (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    state TEXT NOT NULL,
    source TEXT NOT NULL,
    destination TEXT NOT NULL,
    error_message TEXT,
    fate TEXT NOT NULL DEFAULT 'ok',
    duration_ms INTEGER NOT NULL DEFAULT 0,
    due_at_ms INTEGER,
    snapshot_checksum TEXT,
    snapshot_commits INTEGER,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX moves_kind ON moves(kind, id);
  CREATE INDEX moves_item ON moves(kind, item_id, id);
  CREATE INDEX moves_active ON moves(state) WHERE state IN ('initial', 'scheduled', 'started', 'replicated');
  -- Bulk schedule requests, processed in the background in batches; cursor makes them resumable.
  CREATE TABLE bulk_jobs (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    destination TEXT,
    cursor_id INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
  );
  CREATE TABLE features (name TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE geo_sites (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    is_primary INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE geo_actions (
    id INTEGER PRIMARY KEY,
    registry_class TEXT NOT NULL,
    action TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  `,
  // Lookups by full path (`/projects/group-1%2Fproject-1`), case-insensitive as GitLab's routes; a
  // scan of a million projects took 150 ms per request. Queries name it (INDEXED BY): without
  // statistics SQLite prefers the primary key's `kind` prefix.
  'CREATE INDEX items_path ON items(kind, path COLLATE NOCASE);',
  // Inventory fidelity: projects GitLab hides from listings and from GET /projects/:id (but still moves):
  // `hidden` (EE) and `pending_delete`; groups may be pending deletion too (and stay listed).
  `ALTER TABLE items ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE items ADD COLUMN pending_delete INTEGER NOT NULL DEFAULT 0;`,
  // Move lists, health and Geo as GitLab has them: move lists ordered by created_at as GitLab's
  // `order_created_at_desc`; Geo sites that can be disabled; bulk actions recorded per site (the
  // registries live on the secondaries), with the number of registries each one marked.
  `
  CREATE INDEX moves_kind_created ON moves(kind, created_at);
  CREATE INDEX moves_item_created ON moves(kind, item_id, created_at);
  ALTER TABLE geo_sites ADD COLUMN enabled INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE geo_actions ADD COLUMN site_id INTEGER;
  ALTER TABLE geo_actions ADD COLUMN registries INTEGER NOT NULL DEFAULT 0;
  `,
  // Snippet visibility: a project's snippets feature level (GitLab's ProjectFeature `snippets_access_level`)
  // and its members, which decide who GET /snippets/:id shows a project snippet to.
  `
  ALTER TABLE items ADD COLUMN snippets_access_level TEXT NOT NULL DEFAULT 'enabled';
  CREATE TABLE project_members (project_id INTEGER NOT NULL, user_id INTEGER NOT NULL, PRIMARY KEY (project_id, user_id)) WITHOUT ROWID;
  `,
  // A Geo site the primary cannot reach (its node proxy gets no answer).
  'ALTER TABLE geo_sites ADD COLUMN reachable INTEGER NOT NULL DEFAULT 1;',
  // Copies left behind (and the room they take): repository copies a move left on a storage that no
  // longer serves the item (`cleanup failed`, or a job killed after the switch). They take room
  // until someone removes them; a later move back onto that storage reuses the directory.
  `
  CREATE TABLE stale_copies (
    kind TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    storage TEXT NOT NULL,
    size_mb REAL NOT NULL,
    move_id INTEGER NOT NULL,
    PRIMARY KEY (kind, item_id, storage)
  ) WITHOUT ROWID;
  `,
  // Fork networks and object pools (inventory/forks.ts, moves/pools.ts). A
  // project's `forked_from` is the project it was forked from (GitLab's fork_network_members row);
  // a pool is GitLab's PoolRepository, one per network (its root project's id) and storage, and a
  // project is linked to at most one (`projects.pool_repository_id`).
  `
  ALTER TABLE items ADD COLUMN forked_from INTEGER;
  CREATE INDEX items_forked_from ON items(kind, forked_from) WHERE forked_from IS NOT NULL;
  CREATE TABLE pools (
    network INTEGER NOT NULL,
    storage TEXT NOT NULL,
    size_mb REAL NOT NULL,
    PRIMARY KEY (network, storage)
  ) WITHOUT ROWID;
  CREATE TABLE pool_members (
    project_id INTEGER PRIMARY KEY,
    network INTEGER NOT NULL,
    storage TEXT NOT NULL
  );
  CREATE INDEX pool_members_pool ON pool_members(network, storage);
  `,
  // Releases and tiers: a project's repository feature level (GitLab's ProjectFeature
  // `repository_access_level`), which decides who has `read_code` (inventory/code-access.ts).
  "ALTER TABLE items ADD COLUMN repository_access_level TEXT NOT NULL DEFAULT 'enabled';",
  // A renamed or transferred project's former full paths (GitLab's redirect_routes), which the
  // API redirects to the project from 16.7 (inventory/redirects.ts).
  `
  CREATE TABLE redirect_routes (
    path TEXT PRIMARY KEY COLLATE NOCASE,
    project_id INTEGER NOT NULL
  );
  `,
  // A project's wiki repository (GitLab's `statistics.wiki_size`): a project move copies it too, so
  // it takes room on the destination beside the repository's `size_mb`.
  'ALTER TABLE items ADD COLUMN wiki_mb REAL NOT NULL DEFAULT 0;',
  // A project's refs (inventory/refs.ts): counts the seed gave (NULL: derived from the id), and the
  // seeded fault that loses a commit and a tag when the project next moves.
  `ALTER TABLE items ADD COLUMN branch_count INTEGER;
   ALTER TABLE items ADD COLUMN tag_count INTEGER;
   ALTER TABLE items ADD COLUMN content_drift INTEGER NOT NULL DEFAULT 0;`,
];

/** Opens (and migrates) the database at `file`, or an in-memory one when `file` is undefined. */
export function openDatabase(file?: string): Db {
  const db = new Database(file ?? ':memory:');
  if (file) db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = OFF');
  const current = db.pragma('user_version', { simple: true }) as number;
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v] as string);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
  return db;
}

/** Reads a JSON value from `meta`, or undefined. */
export function getMeta<T>(db: Db, key: string): T | undefined {
  const row = db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
  return row ? (JSON.parse(row.value) as T) : undefined;
}

export function setMeta(db: Db, key: string, value: unknown): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(
    key,
    JSON.stringify(value),
  );
}

/** ISO 8601 with milliseconds, UTC, as GitLab renders timestamps. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * `build(db)` once per database, the same result afterwards: modules prepare their statements on
 * first use and keep them, since preparing costs more than running most of them.
 */
export function perDatabase<T>(build: (db: Db) => T): (db: Db) => T {
  const cache = new WeakMap<Db, T>();
  return (db) => {
    let value = cache.get(db);
    if (value === undefined) {
      value = build(db);
      cache.set(db, value);
    }
    return value;
  };
}
