/**
 * The fork networks of a set of listed projects, one computation for the room checks of a dry run
 * (./capacity.ts, checkCapacity: the projects on the sources) and of a reviewed list's run
 * (./given-list.ts: the listed projects still on their source), so that both count the same pools.
 * Only the root and its direct forks are members (./drain/networks.ts); a parent that is not among
 * the projects given is read by id, once, to learn whether it is the root.
 */
import type { ItemRecord } from '../api/types.js';
import { inNetwork, isPoolMember, placeInNetwork } from './drain/networks.js';
import type { NetNode, ReadProject } from './drain/networks.js';
import { poolBytesOf } from './drain/sizes.js';
import type { ActorDeps } from './types.js';

/** One network among the projects given: its root, the members given, where its pool is and its bytes. */
export interface ListedNetwork {
  root: number;
  /** The members among the projects given, in the order given. */
  members: number[];
  /** The root's storage, where its pool is; null when the root could not be read. */
  rootStorage: string | null;
  /** The pool's bytes, estimated as the root's repository (./drain/sizes.ts, poolBytesOf). */
  poolBytes: number;
}

/**
 * A fork parent by id for pre-flight, with its sizes (a root's is its pool's estimate), logging (not
 * throwing) what cannot be read.
 */
export function parentReader(deps: Pick<ActorDeps, 'api' | 'signal' | 'log'>): ReadProject {
  return async (id) => {
    try {
      return await deps.api.getItem('projects', id, { statistics: true });
    } catch (err) {
      if (deps.signal.aborted) throw err;
      deps.log.warn(
        { id, err: (err as Error).message },
        'a fork parent could not be read: its child is taken as the root',
      );
      return null;
    }
  };
}

/** The node a listed project is in the parent walk. */
export function netNodeOf(item: ItemRecord): NetNode {
  return {
    parent: item.forkedFromId ?? null,
    storage: item.storage,
    sizeBytes: item.sizeBytes,
    ...(item.wikiBytes ? { wikiBytes: item.wikiBytes } : {}),
  };
}

/**
 * The networks of `projects` (each a project as the instance answered it), and how many of them left
 * `forks_count` out (counted as possible roots).
 */
export async function listNetworks(
  deps: Pick<ActorDeps, 'api' | 'signal' | 'log'>,
  projects: readonly ItemRecord[],
  read: ReadProject = parentReader(deps),
): Promise<{ networks: ListedNetwork[]; unknownForks: number }> {
  const known = new Map<number, NetNode>();
  let unknownForks = 0;
  const candidates = projects.filter(inNetwork);
  for (const p of candidates) {
    known.set(p.id, netNodeOf(p));
    if (p.forksCount === null) unknownForks += 1;
  }
  const byRoot = new Map<number, ListedNetwork>();
  for (const p of candidates) {
    const place = await placeInNetwork(p.id, known, read);
    if (!isPoolMember(place)) continue;
    let n = byRoot.get(place.root);
    if (!n) {
      const root = known.get(place.root);
      n = {
        root: place.root,
        members: [],
        rootStorage: root?.storage ?? null,
        poolBytes: poolBytesOf(root ?? { sizeBytes: null }),
      };
      byRoot.set(place.root, n);
    }
    n.members.push(p.id);
  }
  return { networks: [...byRoot.values()], unknownForks };
}
