/**
 * Fork networks and their object pools in the seed. Data, like the rest of the
 * inventory: written into an empty database only.
 *
 * - `inventory.generate.fork_networks: {count, max_forks}` picks `count` networks among the
 *   generated projects: a root, then 1 to `max_forks` forks, each a fork of the root or of a fork
 *   drawn before it. Drawn from their own generator (derived from random_seed), so a seed without
 *   networks gives the inventory it gave before. Members keep the storages drawn for them.
 * - A listed project's `forked_from` (an id or a full path) makes it a fork of that project; it
 *   replaces what the generated networks said of the same id.
 * - Pools, once the graph is final: a network has one when its root is poolable, as GitLab's
 *   `git_objects_poolable?` requires (its visibility and its repository feature above private), created from the root's repository on the
 *   root's storage (`object_pool_params`), its bytes the root's `size_mb`. Only the root and its
 *   **direct** forks are linked to it: `object_pool_params` of a project that is itself a fork is
 *   `{}` (`return {} unless !forked? && git_objects_poolable?`, app/models/project.rb), so a fork
 *   of a fork is a standalone repository, on every release. Members on other storages than the
 *   root's have reached them by a move: from the release that replicates pools on move
 *   (moves/pools.ts) the network has a pool copy there and they are linked to it; before it they
 *   are standalone.
 */
import type { Db } from './db.js';
import type { GenerateSpec, Seed } from './seed-schema.js';
import { readPoolFlag, replicatesPoolsOnMove } from './moves/pools.js';
import { createRandom } from './random.js';

/** Marks `count` generated networks (see the module comment), drawn from the seed's `random_seed`. */
export function drawForkNetworks(db: Db, g: GenerateSpec): void {
  const spec = g.fork_networks;
  if (!spec || spec.count === 0 || g.projects < 2) return;
  const rand = createRandom(g.random_seed ^ 0xf02c5);
  const used = new Set<number>();
  // The schema keeps count * (1 + max_forks) within the generated projects, so a free id is found.
  const pick = (): number => {
    for (;;) {
      const id = 1 + Math.floor(rand() * g.projects);
      if (!used.has(id)) {
        used.add(id);
        return id;
      }
    }
  };
  const fork = db.prepare("UPDATE items SET forked_from = ? WHERE kind = 'project' AND id = ?");
  for (let n = 0; n < spec.count && used.size + 2 <= g.projects; n++) {
    const members = [pick()];
    const forks = Math.min(1 + Math.floor(rand() * spec.max_forks), g.projects - used.size);
    for (let f = 0; f < forks; f++) {
      const parent = members[Math.floor(rand() * members.length)] as number;
      const id = pick();
      fork.run(parent, id);
      members.push(id);
    }
  }
}

/**
 * Applies the listed projects' `forked_from` (after every listed project is written, so a path may
 * name one listed later). Returns the problems, each naming the seed field.
 */
export function applyListedForks(db: Db, seed: Seed): string[] {
  const problems: string[] = [];
  const byId = db.prepare("SELECT id FROM items WHERE kind = 'project' AND id = ?");
  const byPath = db.prepare(
    `SELECT id FROM items INDEXED BY items_path WHERE kind = 'project' AND path = ? COLLATE NOCASE AND namespace = ? COLLATE NOCASE`,
  );
  const fork = db.prepare("UPDATE items SET forked_from = ? WHERE kind = 'project' AND id = ?");
  for (const [i, p] of (seed.inventory.projects ?? []).entries()) {
    if (p.forked_from === undefined) continue;
    let row: unknown;
    if (typeof p.forked_from === 'number') row = byId.get(p.forked_from);
    else {
      const slash = p.forked_from.lastIndexOf('/');
      row = slash > 0 ? byPath.get(p.forked_from.slice(slash + 1), p.forked_from.slice(0, slash)) : undefined;
    }
    const parent = (row as { id: number } | undefined)?.id;
    if (parent === undefined)
      problems.push(`inventory.projects.${i}.forked_from: unknown project ${JSON.stringify(p.forked_from)}`);
    else fork.run(parent, p.id);
  }
  return problems;
}

interface Member {
  id: number;
  forked_from: number | null;
  storage: string;
  visibility: string;
  size_mb: number;
  repository_access_level: string;
}

/**
 * Creates the pools of every network and links their members (see the module comment). Returns
 * the problems: a chain of forks that comes back to where it started (a listed `forked_from` into
 * a generated network can close one).
 */
export function seedPools(db: Db, seed: Seed): string[] {
  const forks = db
    .prepare(
      "SELECT id, forked_from, storage, visibility, size_mb, repository_access_level FROM items WHERE kind = 'project' AND forked_from IS NOT NULL",
    )
    .all() as Member[];
  if (forks.length === 0) return [];
  const rowOf = db.prepare(
    "SELECT id, forked_from, storage, visibility, size_mb, repository_access_level FROM items WHERE kind = 'project' AND id = ?",
  );
  const members = new Map<number, Member>(forks.map((m) => [m.id, m]));
  const get = (id: number): Member | undefined => {
    let m = members.get(id);
    if (!m) {
      m = rowOf.get(id) as Member | undefined;
      if (m) members.set(id, m);
    }
    return m;
  };
  const rootOf = new Map<number, number>();
  const problems: string[] = [];
  for (const f of forks) {
    const chain: number[] = [];
    let at: Member | undefined = f;
    let root: number | undefined;
    while (at) {
      const known = rootOf.get(at.id);
      if (known !== undefined) {
        root = known;
        break;
      }
      if (chain.includes(at.id)) break;
      chain.push(at.id);
      if (at.forked_from === null) {
        root = at.id;
        break;
      }
      at = get(at.forked_from);
    }
    if (root === undefined) {
      if (at && chain.includes(at.id)) {
        // Name the listed project that closes the cycle (only a listed forked_from can).
        const listed = (seed.inventory.projects ?? []).findIndex(
          (p) => p.forked_from !== undefined && chain.includes(p.id),
        );
        const field = listed >= 0 ? `inventory.projects.${listed}.forked_from` : 'inventory.generate.fork_networks';
        problems.push(
          `${field}: project ${f.id} would be a fork of its own fork (forked_from runs ${[...chain, at.id].join(' -> ')})`,
        );
      }
      continue;
    }
    for (const id of chain) rootOf.set(id, root);
  }
  if (problems.length > 0) return problems;
  const replicated = replicatesPoolsOnMove(seed.instance.version, readPoolFlag(db));
  const insertPool = db.prepare('INSERT OR IGNORE INTO pools (network, storage, size_mb) VALUES (?, ?, ?)');
  const link = db.prepare('INSERT OR REPLACE INTO pool_members (project_id, network, storage) VALUES (?, ?, ?)');
  for (const [id, network] of rootOf) {
    const root = get(network) as Member;
    // `git_objects_poolable?`: visibility and repository feature both above private.
    if (root.visibility === 'private' || root.repository_access_level !== 'enabled') continue;
    const member = get(id) as Member;
    // A fork of a fork was forked from a project that is itself a fork: no pool for it.
    if (id !== network && member.forked_from !== network) continue;
    for (const m of id === network ? [member] : [root, member]) {
      if (m.storage !== root.storage && !replicated) continue;
      insertPool.run(network, m.storage, root.size_mb);
      link.run(m.id, network, m.storage);
    }
  }
  return problems;
}
