/**
 * Preload for the orchestrator (`node --import tsx --import ./bench/bench-sqlite.ts bin/shardmove run
 * ...`): counts checkpoint writes by wrapping better-sqlite3's prepare and transaction, and writes
 * them to the file named by BENCH_SQLITE_FILE when the process exits. A commit is a transaction
 * (or a write statement outside one: SQLite commits it alone); statements are rows-changing runs.
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

interface Stmt {
  reader: boolean;
  database: { inTransaction: boolean };
  run(...args: unknown[]): unknown;
}
type Db = { prepare(sql: string): Stmt; transaction(fn: (...a: unknown[]) => unknown): unknown };

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3') as { prototype: Db };
const counts = { commits: 0, statements: 0, firstAt: 0, lastAt: 0 };
const patched = new WeakSet<object>();

function stamp(): void {
  const now = Date.now();
  if (counts.firstAt === 0) counts.firstAt = now;
  counts.lastAt = now;
}

const prepare = Database.prototype.prepare;
Database.prototype.prepare = function (this: Db, sql: string): Stmt {
  const st = prepare.call(this, sql);
  const proto = Object.getPrototypeOf(st) as Stmt;
  if (!patched.has(proto)) {
    patched.add(proto);
    const run = proto.run;
    proto.run = function (this: Stmt, ...args: unknown[]) {
      if (!this.reader) {
        counts.statements++;
        if (!this.database.inTransaction) counts.commits++;
        stamp();
      }
      return run.apply(this, args);
    };
  }
  return st;
};

const transaction = Database.prototype.transaction;
Database.prototype.transaction = function (this: Db, fn: (...a: unknown[]) => unknown) {
  return transaction.call(this, function (this: unknown, ...args: unknown[]) {
    counts.commits++;
    stamp();
    return fn.apply(this, args);
  });
};

process.on('exit', () => {
  const file = process.env.BENCH_SQLITE_FILE;
  if (file) writeFileSync(file, JSON.stringify(counts));
});
