/**
 * The fork networks a checkpoint knows, for people (pure): each network's root, its members on the
 * sources, its object pool (estimated as the root's repository, the bytes every member lands with
 * and a destination without the pool gets one copy of) and where it goes. One view for the dry run's
 * and the run's summary, `status` and the report (text, JSON and HTML), so each says the same.
 */
import type { NetworkMemberRow, NetworkRow } from '../store/types.js';
import { escapeControls } from './escape.js';
import { formatBytes } from './summary.js';
import { headThenWrapped } from './wrap.js';

/** One member of a network, as `--items` and the JSON list them. */
export interface NetworkMemberView {
  id: number;
  path: string;
  source: string;
  /** Where it goes (or went); null when not placed yet and the run has several destinations. */
  destination: string | null;
  state: string;
}

export interface NetworkView {
  /** The root project's id (the network is named by it). */
  root: number;
  /** The root's path when the root is among the members (on a source), else null. */
  rootPath: string | null;
  /** Where the root and its pool are: a source, or a storage outside the plan. */
  rootStorage: string | null;
  /** Members on the plan's sources: the root (when there) and its direct forks. */
  members: number;
  /** The pool's estimated bytes; null when unknown. */
  poolBytes: number | null;
  /** What the network lands with on one destination (its members with the pool's objects, and one pool copy). */
  bytes: number;
  /** Where its members go; several: the network is split, and each destination gets a pool copy. */
  destinations: string[];
  /** Present with `--items` and in the report's JSON: every member. */
  memberList?: NetworkMemberView[];
}

export interface NetworksView {
  count: number;
  members: number;
  /** The pools' estimated bytes, summed (each counted once). */
  poolBytes: number;
  /** Largest first (by what each lands with), then by root id. */
  networks: NetworkView[];
}

export const NO_NETWORKS: NetworksView = { count: 0, members: 0, poolBytes: 0, networks: [] };

/**
 * The view of a checkpoint's networks and members. `destination`: where an unplaced member goes
 * when the run has one destination (null with several: unplaced is said as such).
 */
export function networksView(
  networks: readonly NetworkRow[],
  members: readonly NetworkMemberRow[],
  opts: { destination: string | null; memberList?: boolean },
): NetworksView {
  const byNetwork = new Map<number, NetworkMemberRow[]>();
  for (const m of members) byNetwork.set(m.network, [...(byNetwork.get(m.network) ?? []), m]);
  const out: NetworkView[] = [];
  for (const n of networks) {
    const ms = byNetwork.get(n.id) ?? [];
    if (ms.length === 0) continue;
    const root = ms.find((m) => m.id === n.id);
    const where = (m: NetworkMemberRow) => m.destination ?? opts.destination;
    const destinations = [...new Set(ms.map(where).filter((d): d is string => d !== null))].sort();
    out.push({
      root: n.id,
      rootPath: root ? escapeControls(root.name) : null,
      rootStorage: n.rootStorage,
      members: ms.length,
      poolBytes: n.poolBytes,
      bytes: n.bytes,
      destinations,
      ...(opts.memberList
        ? {
            memberList: ms.map((m) => ({
              id: m.id,
              path: escapeControls(m.name),
              source: m.source,
              destination: where(m),
              state: m.state,
            })),
          }
        : {}),
    });
  }
  out.sort((a, b) => b.bytes - a.bytes || a.root - b.root);
  return {
    count: out.length,
    members: out.reduce((a, n) => a + n.members, 0),
    poolBytes: out.reduce((a, n) => a + (n.poolBytes ?? 0), 0),
    networks: out,
  };
}

/** Networks listed by name in the text outputs; the JSON has them all. */
export const NETWORKS_LISTED = 10;

/** Where a network goes, in words. */
export function networkGoes(n: Pick<NetworkView, 'destinations'>): string {
  if (n.destinations.length === 0) return 'not placed yet';
  if (n.destinations.length === 1) return `to ${n.destinations[0]}`;
  return `split over ${n.destinations.join(', ')} (a pool copy on each)`;
}

/** One network, within 80 columns where it can: `project 1 acme/core: 3 members, pool 400 MiB on nfs-1, to cluster`. */
export function networkText(n: NetworkView): string[] {
  const name =
    n.rootPath === null ? `project ${n.root} (root not on the sources):` : `project ${n.root} ${n.rootPath}:`;
  const pool = n.poolBytes === null ? 'pool size unknown' : `pool ${formatBytes(n.poolBytes)}`;
  const rest = `${n.members} member${n.members === 1 ? '' : 's'}, ${pool}${n.rootStorage ? ` on ${n.rootStorage}` : ''}, ${networkGoes(n)}`;
  return headThenWrapped('  ', name, rest);
}

/**
 * The section of the text outputs: a heading with the totals, then the largest networks, and where
 * the rest are: `more`, in words, or `moreCommand`, a command printed whole on a line of its own.
 * Nothing when there are none.
 */
export function networkLines(
  v: NetworksView,
  opts: { more?: string; moreCommand?: string | undefined; limit?: number } = {},
): string[] {
  if (v.count === 0) return [];
  const limit = opts.limit ?? NETWORKS_LISTED;
  const lines = [
    '',
    `Fork networks (${v.count}, ${v.members} member${v.members === 1 ? '' : 's'} on the sources, pools ${formatBytes(v.poolBytes)} in all):`,
    ...v.networks.slice(0, limit).flatMap(networkText),
  ];
  if (v.count > limit) {
    const rest = `  ... and ${v.count - limit} more`;
    if (opts.moreCommand) lines.push(`${rest}, each with its members in:`, `    ${opts.moreCommand}`);
    else lines.push(opts.more ? `${rest}: ${opts.more}` : rest);
  }
  lines.push("  (each member lands with its pool's objects: the room counts them)");
  return lines;
}
