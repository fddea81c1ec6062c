/**
 * Statements by SQL text, prepared once per database: the listing queries are the benchmark's hot
 * path, and their IN lists take a page's length, so a few hundred texts recur.
 */
import type Database from 'better-sqlite3';
import type { Db } from '../db.js';
import { perDatabase } from '../db.js';

type Statement = Database.Statement<unknown[], unknown>;

const statementsOf = perDatabase(() => new Map<string, Statement>());

/** The statement for `sql` on `db`, prepared on first use; `raw`: it returns rows as arrays. */
export function prepared(db: Db, sql: string, raw = false): Statement {
  const cache = statementsOf(db);
  const key = raw ? `raw:${sql}` : sql;
  let stmt = cache.get(key);
  if (!stmt) {
    stmt = db.prepare<unknown[], unknown>(sql);
    if (raw) stmt.raw(true);
    // A bound on the texts kept: beyond it the cache starts again rather than grow.
    if (cache.size > 500) cache.clear();
    cache.set(key, stmt);
  }
  return stmt;
}
