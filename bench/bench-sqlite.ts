/**
 * Preload for the orchestrator (`node --import tsx --import ./bench/bench-sqlite.ts bin/shardmove run
 * ...`): counts checkpoint writes by wrapping better-sqlite3's prepare and transaction, and writes
 * them to the file named by BENCH_SQLITE_FILE when the process exits, with the process's CPU time. A commit is a transaction
 * (or a write statement outside one: SQLite commits it alone); statements are rows-changing runs.
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

interface Stmt {
  reader: boolean;
  source: string;
  database: { inTransaction: boolean };
  run(...args: unknown[]): unknown;
  get(...args: unknown[]): unknown;
  all(...args: unknown[]): unknown;
  iterate(...args: unknown[]): unknown;
}
type Db = { prepare(sql: string): Stmt; transaction(fn: (...a: unknown[]) => unknown): unknown };

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3') as { prototype: Db };
const counts = { commits: 0, statements: 0, firstAt: 0, lastAt: 0, cpuAtFirstMs: 0 };
/**
 * BENCH_SQLITE_DEBUG=1: autocommitted statements by SQL, to find who writes outside a batch, and
 * every statement run (reads included) by SQL, to count statements per move.
 */
const alone = new Map<string, number>();
const every = new Map<string, number>();
const debug = process.env.BENCH_SQLITE_DEBUG === '1';
const patched = new WeakSet<object>();

function stamp(): void {
  const now = Date.now();
  if (counts.firstAt === 0) {
    counts.firstAt = now;
    // The process's CPU before its first checkpoint write: start-up (module loading, which tsx
    // transpiles when the tree is not built, and the plan) rather than the moves.
    const cpu = process.cpuUsage();
    counts.cpuAtFirstMs = (cpu.user + cpu.system) / 1000;
  }
  counts.lastAt = now;
}

const prepare = Database.prototype.prepare;
Database.prototype.prepare = function (this: Db, sql: string): Stmt {
  const st = prepare.call(this, sql);
  const proto = Object.getPrototypeOf(st) as Stmt;
  if (!patched.has(proto)) {
    patched.add(proto);
    const run = proto.run;
    if (debug)
      for (const m of ['get', 'all', 'iterate'] as const) {
        const orig = proto[m];
        proto[m] = function (this: Stmt, ...args: unknown[]) {
          const sql = this.source.replace(/\s+/g, ' ').slice(0, 70);
          every.set(sql, (every.get(sql) ?? 0) + 1);
          return orig.apply(this, args);
        };
      }
    proto.run = function (this: Stmt, ...args: unknown[]) {
      // better-sqlite3 runs BEGIN/COMMIT/SAVEPOINT as statements of its own: the transaction wrapper
      // below counts those commits.
      if (
        !this.reader &&
        !/^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i.test((this as unknown as { source: string }).source)
      ) {
        counts.statements++;
        if (debug) {
          const sql = this.source.replace(/\s+/g, ' ').slice(0, 70);
          every.set(sql, (every.get(sql) ?? 0) + 1);
        }
        if (!this.database.inTransaction) {
          counts.commits++;
          if (debug) {
            const sql = (this as unknown as { source: string }).source.slice(0, 60);
            alone.set(sql, (alone.get(sql) ?? 0) + 1);
          }
        }
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
  // The process's own CPU (user + system, worker threads included) to its last turn: /proc sampled
  // from outside misses what it spends after the last sample.
  const cpu = process.cpuUsage();
  const out = { ...counts, cpuMs: (cpu.user + cpu.system) / 1000 };
  if (file)
    writeFileSync(
      file,
      JSON.stringify(debug ? { ...out, alone: Object.fromEntries(alone), every: Object.fromEntries(every) } : out),
    );
});

// BENCH_MEM=1: where the orchestrator's memory is (V8 heap, external, array buffers, RSS), every second.
if (process.env.BENCH_MEM === '1') {
  setInterval(() => {
    const m = process.memoryUsage();
    const mb = (n: number) => Math.round(n / 1048576);
    process.stderr.write(
      `mem rss ${mb(m.rss)} heapTotal ${mb(m.heapTotal)} heapUsed ${mb(m.heapUsed)} external ${mb(m.external)} arrayBuffers ${mb(m.arrayBuffers)}\n`,
    );
  }, 1000).unref();
}
