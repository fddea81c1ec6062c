/**
 * Fork networks, discovered from the projects listed. A project and its direct forks
 * share an object pool on their storage; a fork of a fork has none (GitLab's `object_pool_params`
 * gives no pool to a fork made from a fork), so it is a standalone repository here: no network.
 * A member that moves alone gets its own copy of the pool on the destination (or, on releases
 * before pools followed moves, loses its link), so a network is placed on one destination and
 * scheduled as one unit.
 *
 * What a member lands with: its own bytes **and the pool's**, on every release, since its copy is
 * made from a snapshot that holds its alternates' objects and nothing in the move deduplicates it;
 * plus, on releases that copy the pool on move, one pool copy per network and destination where it
 * has none yet (docs/gitlab-behaviour.md §3.6). The one arithmetic of that is here (`memberLanding`,
 * PoolCharges), for pre-flight's room check and the drain's placement alike.
 *
 * GitLab renders `forked_from_project` (the direct parent) in the admin listing the drain already
 * reads, and `forks_count` in every project entity for callers with `read_code`; without it the
 * field is absent, which is unknown, not 0: such a project counts as a possible root. The root is
 * found by walking parents: those the listing showed are known, the others are read one by one
 * (`GET /projects/:id`, cached), so a root that stays on a storage outside the plan still anchors
 * its network. The pool's bytes are not in the API: they are estimated as the root's repository
 * size (the pool is created from the root).
 */
import type { ItemRecord } from '../../api/types.js';
import type { DrainCtx } from './context.js';
import { poolBytesOf } from './sizes.js';
import type { DrainStore } from '../../store/views.js';

export interface NetNode {
  parent: number | null;
  storage: string | null;
  sizeBytes: number | null;
  /** The wiki's part of `sizeBytes`, when known (it is in no pool). */
  wikiBytes?: number;
}

/** Parent chains longer than this are not followed (GitLab has no limit; a cycle would be a bug). */
const MAX_DEPTH = 32;

const KNOWN = new WeakMap<DrainStore, Map<number, NetNode>>();

function knownOf(store: DrainStore): Map<number, NetNode> {
  let m = KNOWN.get(store);
  if (!m) {
    m = new Map();
    KNOWN.set(store, m);
  }
  return m;
}

/**
 * Whether a listed project may belong to a fork network: it is a fork, it has forks, or the
 * instance left its `forks_count` out (unknown, not 0).
 */
export function inNetwork(it: Pick<ItemRecord, 'forkedFromId' | 'forksCount'>): boolean {
  return (it.forkedFromId ?? null) !== null || it.forksCount === null || (it.forksCount ?? 0) > 0;
}

/** A project's place in its network: the root's id, and how many parents up it is (0: the root). */
export interface NetworkPlace {
  root: number;
  depth: number;
}

/** Only the root and its direct forks are linked to the network's pool. */
export function isPoolMember(place: NetworkPlace): boolean {
  return place.depth <= 1;
}

/** A project by id (a parent the listing did not show), null when it cannot be read. */
export type ReadProject = (id: number) => Promise<Pick<ItemRecord, 'forkedFromId' | 'storage' | 'sizeBytes'> | null>;

/**
 * The root of `id`'s network and its depth: the first ancestor without a parent (or, when a parent
 * cannot be read, the last one readable), `known` holding the projects seen so far.
 */
export async function placeInNetwork(
  id: number,
  known: Map<number, NetNode>,
  read: ReadProject,
): Promise<NetworkPlace> {
  let cur = id;
  let child = id;
  const seen = new Set<number>();
  for (let depth = 0; depth < MAX_DEPTH && !seen.has(cur); depth++) {
    seen.add(cur);
    let node = known.get(cur);
    if (!node) {
      const item = await read(cur);
      if (!item) return { root: child, depth: Math.max(0, depth - 1) };
      node = { parent: item.forkedFromId ?? null, storage: item.storage, sizeBytes: item.sizeBytes };
      known.set(cur, node);
    }
    if (node.parent === null) return { root: cur, depth };
    child = cur;
    cur = node.parent;
  }
  return { root: cur, depth: MAX_DEPTH };
}

/** Reads a parent for the drain, logging (not throwing) what cannot be read. */
function drainReader(ctx: DrainCtx): ReadProject {
  return async (id) => {
    try {
      return await ctx.deps.api.getItem('projects', id, { statistics: true });
    } catch (err) {
      if (ctx.deps.signal.aborted) throw err;
      ctx.deps.log.warn(
        { id, err: (err as Error).message },
        'a fork parent could not be read: its child is taken as the root',
      );
      return null;
    }
  };
}

/**
 * Records the networks of a listing page's projects in the checkpoint: each pool member's network
 * (its root's id), the root's storage and the pool estimate, and the network's bytes as every
 * member's scheduling rank. Nothing for other kinds, for projects in no network, nor for forks of
 * forks (standalone).
 */
export async function noteNetworks(ctx: DrainCtx, page: readonly ItemRecord[]): Promise<void> {
  if (ctx.kind !== 'projects') return;
  const members = page.filter(inNetwork);
  if (members.length === 0) return;
  const known = knownOf(ctx.store);
  for (const it of members)
    known.set(it.id, { parent: it.forkedFromId ?? null, storage: it.storage, sizeBytes: it.sizeBytes });
  const byRoot = new Map<number, number[]>();
  const read = drainReader(ctx);
  for (const it of members) {
    const place = await placeInNetwork(it.id, known, read);
    if (!isPoolMember(place)) continue;
    byRoot.set(place.root, [...(byRoot.get(place.root) ?? []), it.id]);
  }
  for (const [root, ids] of byRoot) {
    const r = known.get(root);
    // The pool is estimated as the root's size, or the project allowance when the API gives none.
    ctx.store.noteNetwork('projects', ids, root, anchorOf(ctx, ids, root, known), r ? poolBytesOf(r) : null);
  }
}

/**
 * Where a network is anchored: the root's storage when it is one of the plan's destinations (its
 * pool is there), else the root's storage all the same (outside the plan, perhaps). The walk from
 * a member to the root passes no fork between them: only direct forks are members.
 */
function anchorOf(ctx: DrainCtx, ids: readonly number[], root: number, known: Map<number, NetNode>): string | null {
  const destinations = ctx.deps.plan.move.to;
  const rootStorage = known.get(root)?.storage ?? null;
  if (rootStorage !== null && destinations.includes(rootStorage)) return rootStorage;
  for (const id of ids) {
    let cur: number | null = known.get(id)?.parent ?? null;
    for (let depth = 0; cur !== null && cur !== root && depth < MAX_DEPTH; depth++) {
      const node = known.get(cur);
      if (!node) break;
      if (node.storage !== null && destinations.includes(node.storage)) return node.storage;
      cur = node.parent;
    }
  }
  return rootStorage;
}

/** What one moving pool member lands with: its own bytes and its pool's objects, on every release. */
export function memberLanding(ownBytes: number, poolBytes: number | null): number {
  return ownBytes + (poolBytes ?? 0);
}

/**
 * Whether moves of `version` copy a member's pool onto its destination: from 16.7 always, 16.3 to
 * 16.6 behind `replicate_object_pool_on_move` (counted: the flag may be on, and room must not be
 * short), and an unknown release counted too; before 16.3 never.
 */
export function copiesPools(version: string | null): boolean {
  return poolsOnMove(version) !== 'dropped';
}

/**
 * The pool copies a placement brings to the destinations: the one place that charges them. A
 * member that lands where its network has no pool yet brings a copy of the pool (its bytes, estimated
 * as the root's size) unless the pool is already there (the network's anchor), on releases that copy
 * pools (`copies`). A network placed on one destination pays once; a split network pays once on every
 * destination it lands on, which is what makes a split cost more than the network's own bytes.
 */
export class PoolCharges {
  readonly #charged = new Map<number, Set<string>>();

  constructor(private readonly copies = true) {}

  /** Whether `network`'s pool copy on `destination` is counted already. */
  charged(network: number, destination: string): boolean {
    return this.#charged.get(network)?.has(destination) ?? false;
  }

  /** The bytes of one copy of the pool, on a release that makes one (else 0). */
  copyBytes(pool: { poolBytes: number | null }): number {
    return this.copies ? (pool.poolBytes ?? 0) : 0;
  }

  /** The pool copy a network would bring to `destination` (0 where its pool is), without charging it. */
  copyOn(destination: string, pool: { poolBytes: number | null; rootStorage: string | null }): number {
    return pool.rootStorage === destination ? 0 : this.copyBytes(pool);
  }

  /** Bytes to add to `destination` for placing a member of `network` there: the pool copy once, else 0. */
  charge(network: number, destination: string, pool: { poolBytes: number | null; rootStorage: string | null }): number {
    const copy = this.copyOn(destination, pool);
    if (copy === 0) return 0;
    const on = this.#charged.get(network) ?? new Set<string>();
    if (on.has(destination)) return 0;
    on.add(destination);
    this.#charged.set(network, on);
    return copy;
  }
}

/** The first GitLab release whose moves keep a fork's pool (replicate_object_pool_on_move on by default). */
export const POOLS_FOLLOW_MOVES_FROM = [16, 6] as const;
/** The release that brought the flag, off by default. */
export const POOLS_FLAG_FROM = [16, 3] as const;

/**
 * How a release treats a moved fork's pool: `kept` (16.6 and later), `flag` (16.3 to 16.5: only with
 * `replicate_object_pool_on_move` turned on), `dropped` (before 16.3), or null when the version
 * cannot be read.
 */
export function poolsOnMove(version: string | null): 'kept' | 'flag' | 'dropped' | null {
  const m = /^(\d+)\.(\d+)/.exec(version ?? '');
  if (!m) return null;
  const v = [Number(m[1]), Number(m[2])] as const;
  const atLeast = (w: readonly [number, number]) => v[0] > w[0] || (v[0] === w[0] && v[1] >= w[1]);
  if (atLeast(POOLS_FOLLOW_MOVES_FROM)) return 'kept';
  if (atLeast(POOLS_FLAG_FROM)) return 'flag';
  return 'dropped';
}
