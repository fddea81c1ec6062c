/** Every row of every table of a checkpoint (WAL included), for "nothing was written" comparisons. */
import Database from 'better-sqlite3';

export function dumpCheckpoint(file: string): string {
  const db = new Database(file, { readonly: true });
  try {
    const tables = (
      db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).all() as { name: string }[]
    ).map((t) => t.name);
    return JSON.stringify(tables.map((t) => [t, db.prepare(`SELECT * FROM "${t}"`).all()]));
  } finally {
    db.close();
  }
}
