/**
 * Fork networks, discovered from the projects listed (issue 23). A project and its forks share an
 * object pool on their storage; a member that moves alone gets its own copy of the pool on the
 * destination (or, on releases before pools followed moves, loses its link and carries every
 * object itself), so a network is placed on one destination and scheduled as one unit.
 *
 * GitLab renders `forked_from_project` (the direct parent) in the admin listing the drain already
 * reads, and `forks_count` in every project entity (docs/gitlab-behaviour.md). The root is found by
 * walking parents: those the listing showed are known, the others are read one by one (`GET
 * /projects/:id`, cached), so a root that stays on a storage outside the plan still anchors its
 * network (and a fork between it and the moving members that already sits on a destination anchors
 * it there). A project with forks and no parent is a root. The pool's bytes are not in the API: they
 * are estimated as the root's repository size (the pool is created from the root).
 */
import type { ItemRecord } from '../../api/types.js';
import type { ActorStore } from '../../store/types.js';
import type { DrainCtx } from './context.js';

interface NetNode {
  parent: number | null;
  storage: string | null;
  sizeBytes: number | null;
}

/** Parent chains longer than this are not followed (GitLab has no limit; a cycle would be a bug). */
const MAX_DEPTH = 32;

const KNOWN = new WeakMap<ActorStore, Map<number, NetNode>>();

function knownOf(store: ActorStore): Map<number, NetNode> {
  let m = KNOWN.get(store);
  if (!m) {
    m = new Map();
    KNOWN.set(store, m);
  }
  return m;
}

/** Whether a listed project belongs to a fork network (it is a fork, or it has forks). */
export function inNetwork(it: Pick<ItemRecord, 'forkedFromId' | 'forksCount'>): boolean {
  return (it.forkedFromId ?? null) !== null || (it.forksCount ?? 0) > 0;
}

/** The root of `id`'s network: the first ancestor without a parent (or the last one readable). */
async function rootOf(ctx: DrainCtx, id: number, known: Map<number, NetNode>): Promise<number> {
  let cur = id;
  let child = id;
  const seen = new Set<number>();
  for (let depth = 0; depth < MAX_DEPTH && !seen.has(cur); depth++) {
    seen.add(cur);
    let node = known.get(cur);
    if (!node) {
      let item: ItemRecord | null = null;
      try {
        item = await ctx.deps.api.getItem('projects', cur);
      } catch (err) {
        if (ctx.deps.signal.aborted) throw err;
        ctx.deps.log.warn(
          { id: cur, err: (err as Error).message },
          'a fork parent could not be read: its child is taken as the root',
        );
      }
      if (!item) return child;
      node = { parent: item.forkedFromId ?? null, storage: item.storage, sizeBytes: item.sizeBytes };
      known.set(cur, node);
    }
    if (node.parent === null) return cur;
    child = cur;
    cur = node.parent;
  }
  return cur;
}

/**
 * Records the networks of a listing page's projects in the checkpoint: each member's network (its
 * root's id), the root's storage and the pool estimate, and the network's bytes as every member's
 * scheduling rank. Nothing for other kinds, nor for projects in no network.
 */
export async function noteNetworks(ctx: DrainCtx, page: readonly ItemRecord[]): Promise<void> {
  if (ctx.kind !== 'projects') return;
  const members = page.filter(inNetwork);
  if (members.length === 0) return;
  const known = knownOf(ctx.store);
  for (const it of members)
    known.set(it.id, { parent: it.forkedFromId ?? null, storage: it.storage, sizeBytes: it.sizeBytes });
  const byRoot = new Map<number, number[]>();
  for (const it of members) {
    const root = await rootOf(ctx, it.id, known);
    byRoot.set(root, [...(byRoot.get(root) ?? []), it.id]);
  }
  for (const [root, ids] of byRoot) {
    const r = known.get(root);
    ctx.store.noteNetwork('projects', ids, root, anchorOf(ctx, ids, root, known), r?.sizeBytes ?? null);
  }
}

/**
 * Where a network is anchored: a member already on one of the plan's destinations (the root, or a
 * fork between the listed members and the root, as far as the walk to the root saw them), else
 * the root's storage.
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

/**
 * Networks within one listing, without reading anything else (pre-flight's estimate): each fork's
 * root is its topmost ancestor the listing shows, or its parent when the listing does not show it.
 */
export function networksInListing(
  items: readonly Pick<ItemRecord, 'id' | 'forkedFromId' | 'forksCount'>[],
): Map<number, number> {
  const parent = new Map<number, number | null>();
  for (const it of items) if (inNetwork(it)) parent.set(it.id, it.forkedFromId ?? null);
  const out = new Map<number, number>();
  for (const id of parent.keys()) {
    let cur = id;
    for (let depth = 0; depth < MAX_DEPTH; depth++) {
      const p = parent.get(cur);
      if (p === null || p === undefined) break;
      cur = p;
      if (!parent.has(cur)) break;
    }
    out.set(id, cur);
  }
  return out;
}

/**
 * The pool copies a placement brings to the destinations: the one place that charges them. A
 * member that lands where its network has no pool yet brings a copy of the pool (its bytes, estimated
 * as the root's size) unless the pool is already there (the network's anchor). A network placed on one
 * destination pays once; a split network pays once on every destination it lands on, which is what
 * makes a split cost more than the network's own bytes.
 */
export class PoolCharges {
  readonly #charged = new Map<number, Set<string>>();

  /** Whether `network`'s pool copy on `destination` is counted already. */
  charged(network: number, destination: string): boolean {
    return this.#charged.get(network)?.has(destination) ?? false;
  }

  /** Bytes to add to `destination` for placing a member of `network` there: the pool copy once, else 0. */
  charge(network: number, destination: string, pool: { poolBytes: number | null; rootStorage: string | null }): number {
    if (!pool.poolBytes || pool.rootStorage === destination) return 0;
    const on = this.#charged.get(network) ?? new Set<string>();
    if (on.has(destination)) return 0;
    on.add(destination);
    this.#charged.set(network, on);
    return pool.poolBytes;
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
