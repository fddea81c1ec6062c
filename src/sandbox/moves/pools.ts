/**
 * Object pools: GitLab's PoolRepository, the repository on a storage that holds the
 * objects a fork network shares, one per network (its root project's id) and storage. A project
 * is linked to at most one pool (`projects.pool_repository_id`), on its own storage.
 *
 * Bytes: a pool holds the root's objects as they were when the network formed (`pools.size_mb`, the
 * root's `size_mb` then); a linked member's own `size_mb` counts only the objects it has beside
 * the pool, as GitLab's `repository_size` does for a repository with alternates. Both count in
 * their storage's used space (moves/room.ts), so the sandbox's node_exporter shows them.
 *
 * When a move switches a linked project to another storage (`track_repository`), its copy on the
 * destination holds its own objects **and its pool's**: Gitaly's snapshot of a repository with
 * alternates adds every object of the alternate directories (`addAlternateFiles`, snapshot.go),
 * and linking the copy to a pool afterwards (`objectpool/link.go`) deduplicates nothing until
 * housekeeping repacks it, which the move never runs. So the member grows by the pool's bytes on
 * every release, and then:
 * - from the release that replicates pools on move (replicatesPoolsOnMove): the pool is copied to
 *   the destination too unless the network has one there (`mirror_object_pool`), and the project
 *   is linked to that one (`swap_pool_repository!`, `link_pool_repository`);
 * - before it: the project leaves its pool (`leave_pool_repository`) and its copy on the
 *   destination is standalone (deduplication lost for good).
 * Either way the pool it left is removed when no member is left on it (`unlink_repository` /
 * `mark_obsolete_if_last` -> `ObjectPool::DestroyWorker`). The sandbox does all of this at the
 * switch: the pool copy's bytes appear on the destination at `replicated` (GitLab writes them just
 * before the member's own copy), and a move that fails leaves no pool copy behind.
 */
import type { Db } from '../db.js';
import { perDatabase } from '../db.js';
import { atLeast, parseRelease } from '../auth/token-types.js';
import { storedFeatureFlag } from '../auth/store.js';
import type { RoomLedger } from './room.js';

/**
 * The feature flag that gated pool replication on move: introduced in 16.3 default off
 * (gitlab-org/gitlab!127143, config/feature_flags/development/replicate_object_pool_on_move.yml),
 * default on in 16.6 (!135103), removed in 16.7 (!136875).
 */
export const POOL_REPLICATION_FLAG = 'replicate_object_pool_on_move';
const FLAG_SINCE = [16, 3] as const;
const DEFAULT_ON_SINCE = [16, 6] as const;
const FLAG_REMOVED_IN = [16, 7] as const;

/**
 * Whether a move on `version` copies the moved member's pool to the destination. `flag` is the
 * instance's setting of POOL_REPLICATION_FLAG (undefined: never set, the flag's default applies).
 */
export function replicatesPoolsOnMove(version: string, flag: boolean | undefined): boolean {
  const release = parseRelease(version);
  if (!atLeast(release, FLAG_SINCE)) return false;
  if (atLeast(release, FLAG_REMOVED_IN)) return true;
  return flag ?? atLeast(release, DEFAULT_ON_SINCE);
}

/** One pool as GET /-/sandbox/pools shows it. */
export interface PoolRecord {
  network: number;
  storage: string;
  bytes: number;
  members: number[];
}

interface PoolStatements {
  linkOf: { get(id: number): { network: number; storage: string } | undefined };
  pool: { get(network: number, storage: string): { size_mb: number } | undefined };
  insertPool: { run(network: number, storage: string, sizeMb: number): unknown };
  deletePool: { run(network: number, storage: string): unknown };
  relink: { run(storage: string, id: number): unknown };
  unlink: { run(id: number): unknown };
  membersLeft: { get(network: number, storage: string): { n: number } | undefined };
  growItem: { run(mb: number, id: number): unknown };
  all: { all(): { network: number; storage: string; size_mb: number }[] };
  members: { all(): { project_id: number; network: number; storage: string }[] };
}

const statements = perDatabase((db: Db): PoolStatements => ({
  linkOf: db.prepare<[number], { network: number; storage: string }>(
    'SELECT network, storage FROM pool_members WHERE project_id = ?',
  ),
  pool: db.prepare<[number, string], { size_mb: number }>(
    'SELECT size_mb FROM pools WHERE network = ? AND storage = ?',
  ),
  insertPool: db.prepare('INSERT OR REPLACE INTO pools (network, storage, size_mb) VALUES (?, ?, ?)'),
  deletePool: db.prepare('DELETE FROM pools WHERE network = ? AND storage = ?'),
  relink: db.prepare('UPDATE pool_members SET storage = ? WHERE project_id = ?'),
  unlink: db.prepare('DELETE FROM pool_members WHERE project_id = ?'),
  membersLeft: db.prepare<[number, string], { n: number }>(
    'SELECT count(*) AS n FROM pool_members WHERE network = ? AND storage = ?',
  ),
  growItem: db.prepare("UPDATE items SET size_mb = size_mb + ? WHERE kind = 'project' AND id = ?"),
  all: db.prepare<[], { network: number; storage: string; size_mb: number }>(
    'SELECT network, storage, size_mb FROM pools ORDER BY network, storage',
  ),
  members: db.prepare<[], { project_id: number; network: number; storage: string }>(
    'SELECT project_id, network, storage FROM pool_members ORDER BY project_id',
  ),
}));

/** The instance's setting of POOL_REPLICATION_FLAG (seeded or set through the Features API), if any. */
export function readPoolFlag(db: Db): boolean | undefined {
  return storedFeatureFlag(db, POOL_REPLICATION_FLAG);
}

/** Every pool with its linked members, by network then storage (sizes in bytes, as room.ts counts them). */
export function listPools(db: Db): PoolRecord[] {
  const s = statements(db);
  const members = new Map<string, number[]>();
  for (const m of s.members.all()) {
    const key = `${m.network}\u0000${m.storage}`;
    const list = members.get(key);
    if (list) list.push(m.project_id);
    else members.set(key, [m.project_id]);
  }
  return s.all.all().map((p) => ({
    network: p.network,
    storage: p.storage,
    bytes: Math.round(p.size_mb * 1024 * 1024),
    members: members.get(`${p.network}\u0000${p.storage}`) ?? [],
  }));
}

/** What the move engine tells the pools. */
export interface PoolKeeper {
  /**
   * Project `id` now lives on `to` instead of `from` (the move's switch). Returns the MiB its own
   * repository grew by (a linked member's copy carries the pool's objects), 0 otherwise.
   */
  memberMoved(id: number, from: string, to: string): number;
  /**
   * MiB a copy of project `id` onto `to` writes beyond its own repository: its pool's objects
   * (in the snapshot), and a copy of the pool itself when this release replicates pools on move
   * and the network has none on `to` yet.
   */
  copyExtraMb(id: number, to: string): number;
  /** MiB of its pool's objects a copy of project `id` onto `to` holds (its alternates, in the snapshot). */
  alternatesMb(id: number, to: string): number;
  /** The fork network whose pool project `id` is linked to, if any. */
  networkOf(id: number): number | undefined;
}

/** The pools of `db` on an instance of `version`, kept in step with `room`'s sums. */
export function createPoolKeeper(db: Db, version: string, room: RoomLedger): PoolKeeper {
  const s = statements(db);
  /** Removes the pool when no member is linked to it any more. */
  const dropIfEmpty = (network: number, storage: string) => {
    if ((s.membersLeft.get(network, storage)?.n ?? 0) > 0) return;
    const pool = s.pool.get(network, storage);
    if (!pool) return;
    s.deletePool.run(network, storage);
    room.adjust(storage, -pool.size_mb);
  };
  return {
    memberMoved(id, from, to) {
      if (from === to) return 0;
      const link = s.linkOf.get(id);
      if (!link) return 0;
      const pool = s.pool.get(link.network, link.storage);
      const poolMb = pool?.size_mb ?? 0;
      if (replicatesPoolsOnMove(version, readPoolFlag(db))) {
        if (!s.pool.get(link.network, to)) {
          s.insertPool.run(link.network, to, poolMb);
          room.adjust(to, poolMb);
        }
        s.relink.run(to, id);
      } else s.unlink.run(id);
      // The copy was made from a snapshot that holds the alternates' objects (see the module comment).
      if (poolMb > 0) {
        s.growItem.run(poolMb, id);
        room.adjust(to, poolMb);
      }
      dropIfEmpty(link.network, link.storage);
      return poolMb;
    },
    copyExtraMb(id, to) {
      const link = s.linkOf.get(id);
      if (!link || link.storage === to) return 0;
      const poolMb = s.pool.get(link.network, link.storage)?.size_mb ?? 0;
      const copy = replicatesPoolsOnMove(version, readPoolFlag(db)) && !s.pool.get(link.network, to) ? poolMb : 0;
      return poolMb + copy;
    },
    networkOf(id) {
      return s.linkOf.get(id)?.network;
    },
    alternatesMb(id, to) {
      const link = s.linkOf.get(id);
      if (!link || link.storage === to) return 0;
      return s.pool.get(link.network, link.storage)?.size_mb ?? 0;
    },
  };
}
