/**
 * What a checkpoint knows of the instance's shape beyond its item rows, for the twin (`shardmove twin`): which
 * listed projects are hidden or pending deletion. GitLab's project entity says neither, and the
 * enumeration lists with `include_hidden` and `include_pending_delete`, so it sees them all without
 * telling them apart. A dry run therefore lists each project source once more without one flag
 * (src/actors/drain/census.ts): the items the checkpoint knows there and that listing left out carry the
 * flag. Written by that census, read by `shardmove twin`.
 *
 * A read-only open of a checkpoint older than schema 14 has no such tables: it knows no census.
 */
import type Database from 'better-sqlite3';
import type { Kind } from '../plan/types.js';
import type { CensusRow, CensusStore, ItemFlag } from './types.js';
import { hasTable, LaterTable } from './introspect.js';

/** One item as the twin carries it: no name, no path, nothing but its shape. */
export interface ShapeItem {
  kind: Kind;
  id: number;
  source: string;
  sizeBytes: number | null;
  /** Null: unknown (no finished census of the item's source for its latest enumeration round). */
  hidden: boolean | null;
  pendingDelete: boolean | null;
}

/** The census and the twin's reads, over an open checkpoint database. */
export class ShapeTable extends LaterTable implements CensusStore {
  private readonly s;

  constructor(db: Database.Database) {
    super(db, 'census');
    const p = (sql: string) => db.prepare(sql);
    const w = this.prepare;
    this.s = {
      census: w(
        'SELECT kind, source, flag, round, flagged, done_at FROM census WHERE kind = ? AND source = ? AND flag = ?',
      ),
      allCensus: w('SELECT kind, source, flag, round, flagged, done_at FROM census ORDER BY kind, source, flag'),
      clearFlags: w(
        `DELETE FROM item_flags WHERE kind = ? AND flag = ? AND id IN (SELECT id FROM items WHERE kind = ? AND source = ?)`,
      ),
      putCensus: w(
        `INSERT INTO census (kind, source, flag, round, flagged, done_at) VALUES (?, ?, ?, ?, 0, NULL)
         ON CONFLICT (kind, source, flag) DO UPDATE SET round = excluded.round, flagged = 0, done_at = NULL`,
      ),
      finish: w('UPDATE census SET flagged = ?, done_at = ? WHERE kind = ? AND source = ? AND flag = ? AND round = ?'),
      // The primary key (kind, id) walks the id range; the source and state are filtered on the way
      // (the unary + keeps the planner off items_by_state, which would sort every pending item).
      knownIds: p(
        `SELECT id FROM items WHERE kind = ? AND id > ? AND id <= ? AND +source = ? AND +state = 'pending' ORDER BY id LIMIT ?`,
      ),
      flag: w('INSERT OR IGNORE INTO item_flags (kind, id, flag) VALUES (?, ?, ?)'),
      flagged: w('SELECT id FROM item_flags WHERE kind = ? AND flag = ?'),
      cursor: p('SELECT round FROM cursors WHERE kind = ? AND source = ?'),
      // Every item still on its source (a dry run's `left` items are gone or elsewhere).
      items: p(`SELECT kind, id, source, size_bytes FROM items WHERE state != 'left' ORDER BY kind, id`).raw(true),
      unlistable: hasTable(db, 'unlistable')
        ? p('SELECT DISTINCT item_id FROM unlistable WHERE kind = ? AND item_id IS NOT NULL ORDER BY item_id')
        : p('SELECT NULL AS item_id WHERE 0'),
    };
  }

  censusOf(kind: Kind, source: string, flag: ItemFlag): CensusRow | null {
    if (!this.known) return null;
    const r = this.s.census.get(kind, source, flag) as RawCensus | undefined;
    return r ? toCensus(r) : null;
  }

  /** Every census recorded, finished or not. */
  allCensus(): CensusRow[] {
    if (!this.known) return [];
    return (this.s.allCensus.all() as RawCensus[]).map(toCensus);
  }

  startCensus(kind: Kind, source: string, flag: ItemFlag, round: number): void {
    this.db.transaction(() => {
      this.s.clearFlags.run(kind, flag, kind, source);
      this.s.putCensus.run(kind, source, flag, round);
    })();
  }

  knownIds(kind: Kind, source: string, afterId: number, uptoId: number | null, limit: number): number[] {
    return (
      this.s.knownIds.all(kind, afterId, uptoId ?? Number.MAX_SAFE_INTEGER, source, limit) as { id: number }[]
    ).map((r) => r.id);
  }

  flagItems(kind: Kind, ids: readonly number[], flag: ItemFlag): void {
    if (ids.length === 0) return;
    this.db.transaction(() => {
      for (const id of ids) this.s.flag.run(kind, id, flag);
    })();
  }

  finishCensus(kind: Kind, source: string, flag: ItemFlag, round: number, flagged: number, now: number): void {
    this.s.finish.run(flagged, now, kind, source, flag, round);
  }

  /** Ids of `kind` flagged `flag` (by any census; the caller knows which sources it trusts). */
  flaggedIds(kind: Kind, flag: ItemFlag): Set<number> {
    if (!this.known) return new Set();
    return new Set((this.s.flagged.all(kind, flag) as { id: number }[]).map((r) => r.id));
  }

  /**
   * Whether the census of (kind, source, flag) finished for the source's latest enumeration round:
   * only then does an item without the flag not carry it.
   */
  censusDone(kind: Kind, source: string, flag: ItemFlag): boolean {
    const c = this.censusOf(kind, source, flag);
    if (c === null || c.doneAt === null) return false;
    const cursor = this.s.cursor.get(kind, source) as { round: number } | undefined;
    return cursor?.round === c.round;
  }

  /**
   * Every item still on its source, by kind then id, with the flags the census found (null where
   * it did not finish). Streams: a million rows never sit in memory at once (the flagged ids do).
   */
  *items(): Generator<ShapeItem> {
    const flags = new Map<Kind, { hidden: Set<number>; pending: Set<number> }>();
    const done = new Map<string, { hidden: boolean; pending: boolean }>();
    for (const row of this.s.items.iterate() as IterableIterator<[Kind, number, string, number | null]>) {
      const [kind, id, source, sizeBytes] = row;
      let f = flags.get(kind);
      if (!f)
        flags.set(
          kind,
          (f = { hidden: this.flaggedIds(kind, 'hidden'), pending: this.flaggedIds(kind, 'pending_delete') }),
        );
      let d = done.get(`${kind}\n${source}`);
      if (!d)
        done.set(
          `${kind}\n${source}`,
          (d = {
            hidden: this.censusDone(kind, source, 'hidden'),
            pending: this.censusDone(kind, source, 'pending_delete'),
          }),
        );
      yield {
        kind,
        id,
        source,
        sizeBytes,
        hidden: d.hidden ? f.hidden.has(id) : null,
        pendingDelete: d.pending ? f.pending.has(id) : null,
      };
    }
  }

  /** Ids of `kind` that a listing named as the item it cannot render (HTTP 500), in any round. */
  unlistableIds(kind: Kind): number[] {
    return (this.s.unlistable.all(kind) as { item_id: number }[]).map((r) => r.item_id);
  }
}

interface RawCensus {
  kind: Kind;
  source: string;
  flag: ItemFlag;
  round: number;
  flagged: number;
  done_at: number | null;
}

function toCensus(r: RawCensus): CensusRow {
  return { kind: r.kind, source: r.source, flag: r.flag, round: r.round, flagged: r.flagged, doneAt: r.done_at };
}
