/**
 * What an opened checkpoint file has of the schema. A read-only open (`status`) of a file an older
 * release wrote is not migrated, so the tables read it from ask before preparing a statement over a
 * table, column or index that file may lack.
 */
import type Database from 'better-sqlite3';

export function hasTable(db: Database.Database, name: string): boolean {
  return db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(name) !== undefined;
}

export function hasIndex(db: Database.Database, name: string): boolean {
  return db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?`).get(name) !== undefined;
}

export function hasColumn(db: Database.Database, table: string, column: string): boolean {
  return (db.prepare('SELECT name FROM pragma_table_info(?)').all(table) as { name: string }[]).some(
    (c) => c.name === column,
  );
}

/**
 * Prepares `none`, the placeholder of `sql` on a file that lacks what `sql` reads, so that it takes
 * the same parameters: its callers bind what they would bind to `sql`, and a statement given more
 * values than it has places throws.
 */
export function preparePlaceholder(db: Database.Database, sql: string, none: string): Database.Statement {
  // The statements here bind positional parameters only, and no string literal in them holds a `?`.
  const places = (sql.replace(/'[^']*'/g, '').match(/\?/g) ?? []).length;
  if (places === 0) return db.prepare(none);
  return db.prepare(`SELECT * FROM (${none}) WHERE COALESCE(${Array(places).fill('?').join(', ')}, 1) IS NOT NULL`);
}

/**
 * Prepares statements of a part of the schema the file may lack: as written when `present`, else as
 * `none`, a placeholder that finds nothing (and that a write, which a read-only open never makes,
 * would not apply).
 */
export function prepareIf(
  db: Database.Database,
  present: boolean,
  none = 'SELECT NULL WHERE 0',
): (sql: string) => Database.Statement {
  return (sql) => (present ? db.prepare(sql) : preparePlaceholder(db, sql, none));
}

/**
 * A table of a later schema than a read-only open may find (such a file is not migrated): `known`
 * says whether the file has it, and `prepare` prepares its statements, as placeholders that find
 * nothing where it does not.
 */
export abstract class LaterTable {
  readonly known: boolean;
  protected readonly prepare: (sql: string) => Database.Statement;

  constructor(
    protected readonly db: Database.Database,
    table: string,
  ) {
    this.known = hasTable(db, table);
    this.prepare = prepareIf(db, this.known);
  }
}
