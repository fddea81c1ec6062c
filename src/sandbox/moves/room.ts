/**
 * Room on each storage: what the repositories on it take, for the move engine (a move
 * into a storage without room fails as Gitaly's replication does) and for the sandbox's node_exporter
 * (../exporters/node-exporter.ts).
 *
 * A storage's bytes are the settled part, kept here, plus what moves in flight hold, which the
 * engine adds from its running set:
 *
 * - settled: every repository the storage serves (items whose `storage` it is; groups only where
 *   group wikis exist), the copies moves left on it (`stale_copies`: `cleanup failed`, a job
 *   killed after the switch) and the object pools of fork networks on it (`pools`, moves/pools.ts).
 *   Sizes are `size_mb` MiB, plus a project's `wiki_mb` (its wiki lives beside its repository).
 * - in flight: a move copying onto the storage holds what it has copied so far (linear over the
 *   copy phase); a move in cleanup still holds its source copy until it ends. So a move uses room
 *   on both storages from the start of its copy until the source copy is removed, as a real one
 *   does (ReplicateRepository writes the destination first; `remove_old_paths` runs last).
 *
 * The settled sums are read from the database once, when first asked for (seeding a million items
 * stays cheap when nobody asks), then kept in step by the engine's calls; `forget()` drops them
 * after a rolled-back transaction.
 */
import type { Db, ItemKind } from '../db.js';

/** Bytes in the sandbox's size unit (`size_mb` is MiB, as the statistics GitLab shows). */
export const BYTES_PER_MB = 1024 * 1024;

/** Bytes of `sizeMb`, rounded. */
export function bytesOf(sizeMb: number): number {
  return Math.round(sizeMb * BYTES_PER_MB);
}

export interface RoomLedger {
  /** Settled bytes on `storage`. */
  settled(storage: string): number;
  /** An item of `sizeMb` now lives on `to` instead of `from`. */
  moved(sizeMb: number, from: string, to: string): void;
  /** A copy of `sizeMb` was left on (`+1`) or taken off (`-1`) `storage`. */
  staleCopy(storage: string, sizeMb: number, sign: 1 | -1): void;
  /** `sizeMb` more (negative: less) on `storage` that is no item's own repository (object pools). */
  adjust(storage: string, sizeMb: number): void;
  /** Drops the sums (they are read again when next asked for). */
  forget(): void;
}

/** The ledger of `db`; `hasRepository(kind)` says whether items of a kind have a repository here. */
export function createRoomLedger(db: Db, hasRepository: (kind: ItemKind) => boolean): RoomLedger {
  let sums: Map<string, number> | null = null;
  const load = (): Map<string, number> => {
    const out = new Map<string, number>();
    const add = (storage: string, mb: number) => out.set(storage, (out.get(storage) ?? 0) + mb);
    const kinds = (['project', 'snippet', 'group'] as const).filter(hasRepository);
    const live = db.prepare(
      `SELECT storage, sum(size_mb + wiki_mb) AS mb FROM items WHERE kind IN (${kinds.map(() => '?').join(', ')}) GROUP BY storage`,
    );
    for (const r of live.all(...kinds) as { storage: string; mb: number }[]) add(r.storage, r.mb);
    for (const r of db.prepare('SELECT storage, sum(size_mb) AS mb FROM stale_copies GROUP BY storage').all() as {
      storage: string;
      mb: number;
    }[])
      add(r.storage, r.mb);
    // Object pools (moves/pools.ts), one per fork network and storage.
    for (const r of db.prepare('SELECT storage, sum(size_mb) AS mb FROM pools GROUP BY storage').all() as {
      storage: string;
      mb: number;
    }[])
      add(r.storage, r.mb);
    return out;
  };
  const shift = (storage: string, mb: number) => {
    if (sums) sums.set(storage, (sums.get(storage) ?? 0) + mb);
  };
  return {
    settled(storage) {
      sums ??= load();
      return bytesOf(sums.get(storage) ?? 0);
    },
    moved(sizeMb, from, to) {
      shift(from, -sizeMb);
      shift(to, sizeMb);
    },
    staleCopy(storage, sizeMb, sign) {
      shift(storage, sign * sizeMb);
    },
    adjust(storage, sizeMb) {
      shift(storage, sizeMb);
    },
    forget() {
      sums = null;
    },
  };
}
