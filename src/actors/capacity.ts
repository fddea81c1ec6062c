/**
 * The room check of pre-flight: the bytes that will land on the destination
 * against the room it has, before the first write (the weights included). Read-only: it lists the
 * sources' items (the drains list them again, as they always did) and reads the free space, declared
 * in the plan or answered by Prometheus.
 *
 * GitLab reports `statistics.repository_size` for projects only. Snippets and group wikis have no
 * size in the API, so each counts with a fixed allowance (SIZE_ALLOWANCE): generous for a snippet,
 * modest for a wiki. A project whose size the instance does not report counts with the project
 * allowance. The fit table says how many items were counted by allowance.
 */
import type { KindAccessMode } from '../api/types.js';
import { formatBytes } from '../plan/capacity-field.js';
import { KINDS } from '../plan/types.js';
import type { Kind } from '../plan/types.js';
import { CAPACITY_EXCEEDED, StepError } from './errors.js';
import type { ItemRecord } from '../api/types.js';
import { PoolCharges, copiesPools, inNetwork, memberLanding, poolsOnMove } from './drain/networks.js';
import { listNetworks } from './list-networks.js';
import type { ListedNetwork } from './list-networks.js';
import { compareKeys, rankClass, sizeClass } from './drain/order.js';
import type { OrderKey } from './drain/order.js';
import { UnreadableFreeError, bytesOf, chooseUnit, freeBytesOf, pickDestination } from './drain/placement.js';
import { DESIGN_ALLOWANCE, SIZE_ALLOWANCE } from './drain/sizes.js';
import { chooseItems, selectionOf } from './select.js';
import type { ActorDeps } from './types.js';
import type { PreflightStore } from '../store/views.js';

/** One line of the fit table. */
export interface FitRow {
  storage: string;
  neededBytes: number;
  keepFreeBytes: number;
  freeBytes: number | null;
  /** Items counted by allowance, not by a reported size. */
  byAllowance: number;
  /** Kinds that could not be listed (moved by records): their bytes are not counted. */
  uncounted: Kind[];
  /** Projects whose `forks_count` the instance left out, counted as possible fork network roots. */
  unknownForks?: number;
  fits: boolean | null;
}

/** The fit table as text: one line per receiving storage. */
export function describeFit(r: FitRow): string {
  const free = r.freeBytes === null ? 'unknown' : formatBytes(r.freeBytes);
  const verdict = r.fits === null ? 'not checked' : r.fits ? 'fits' : 'DOES NOT FIT';
  const extra = [
    r.byAllowance > 0 ? `${r.byAllowance} item(s) counted by allowance (no size in the API)` : '',
    r.uncounted.length > 0 ? `${r.uncounted.join(', ')} not counted (not listable)` : '',
    r.unknownForks ? `${r.unknownForks} project(s) without forks_count counted as fork network roots` : '',
  ]
    .filter(Boolean)
    .join('; ');
  return `room on ${r.storage}: needs ${formatBytes(r.neededBytes)} + keep_free ${formatBytes(r.keepFreeBytes)}, free ${free}: ${verdict}${extra ? ` (${extra})` : ''}`;
}

/** One listed item as the fit simulation sees it. */
export interface Sized {
  kind: Kind;
  source: string;
  id: number;
  bytes: number;
  byAllowance: boolean;
  /** Projects: the wiki's part of `bytes` (`statistics.wiki_size`), when it has one. */
  wikiBytes?: number;
  /** Its fork network (the root id as far as the listing shows), when in one. */
  network?: number;
  /**
   * Where it goes when that is decided already (a reviewed list's pinned destination): placed there
   * and counted there, outside any `move.until` budget (the list is what was reviewed).
   */
  destination?: string;
}

/**
 * A fork network in the simulation: what its listed members land with (each its own bytes and the
 * pool's objects), the pool's bytes (estimated as the root's size), and where the pool is.
 */
export interface SimNetwork {
  bytes: number;
  poolBytes: number;
  /** The root's storage, where its pool is (no copy is made there); null when unknown. */
  rootStorage: string | null;
}

/** A storage's free bytes for pre-flight: unread room is unchecked room, refused like room that is too small. */
async function freeOf(deps: ActorDeps<PreflightStore>, storage: string): Promise<number | null> {
  try {
    return await freeBytesOf(deps, storage);
  } catch (err) {
    const query = (deps.plan.capacity?.storages[storage] as { query: string }).query;
    if (err instanceof UnreadableFreeError)
      throw new StepError(
        CAPACITY_EXCEEDED,
        `capacity.storages.${storage}.free: ${err.message}: the free space of ${storage} cannot be read (query: ${query}). Nothing was written`,
      );
    throw new StepError(
      CAPACITY_EXCEEDED,
      `capacity.storages.${storage}.free: the room on ${storage} could not be read: ${(err as Error).message} (query: ${query}). Nothing was written`,
    );
  }
}

/** Said once, by pre-flight: a drain that fills its destination breaks every push there. */
const notChecked = (where: string) =>
  `the room on ${where} was not checked: the plan has no capacity section (see docs/operations.md, "Rules and room from Prometheus")`;

export interface SimResult {
  byDestination: Map<string, { bytes: number; items: number; byAllowance: number; kinds: Set<Kind> }>;
  /** Networks no destination had room for, and the pool bytes each extra destination costs. */
  split: { network: number; bytes: number; extraBytes: number }[];
}

/** A network's rank bytes: what it lands with on a destination without its pool (the checkpoint's rank, one pool copy included). */
function rankOf(net: SimNetwork | undefined): number | undefined {
  return net === undefined ? undefined : net.bytes + net.poolBytes;
}

/**
 * Where the listed items would go, as the drains will place them: largest first by size class (a
 * fork network ranks by its bytes and its members follow each other), in the drain's own order:
 * every kind on every source in one order (`move.order: together`, drain/order.ts: sizeless kinds
 * by their allowance), or per source in the plan's order, kind by kind (`by-kind`); within each
 * source's `move.until` budget, each network on one destination with room for all of it (else
 * split), every other item to the destination the placement policy picks.
 * A network member lands with the pool's objects, and a destination without the pool gets a copy of
 * it on releases that copy pools (`copies`).
 */
export function simulatePlacement(
  items: readonly Sized[],
  plan: ActorDeps<PreflightStore>['plan'],
  rooms: ReadonlyMap<string, number | null>,
  sourceFree: ReadonlyMap<string, number | null> = new Map(),
  networks: ReadonlyMap<number, SimNetwork> = new Map(),
  copies = true,
): SimResult {
  const byDestination = new Map(
    plan.move.to.map((d) => [d, { bytes: 0, items: 0, byAllowance: 0, kinds: new Set<Kind>() }]),
  );
  const split: SimResult['split'] = [];
  const netDest = new Map<number, string | null>();
  const pools = new PoolCharges(copies);
  const until = plan.move.until;
  // What the drain's order is made of (drain/order.ts), for a listed item.
  const sizeless = (i: Sized) => i.byAllowance && i.kind !== 'projects';
  const key = (i: Sized): OrderKey => ({
    cls:
      i.network !== undefined
        ? sizeClass(rankOf(networks.get(i.network)) ?? i.bytes)
        : sizeless(i) || !i.byAllowance
          ? rankClass(i.kind, i.bytes)
          : sizeClass(null),
    group: i.network ?? i.id,
    id: i.id,
    pair: plan.move.from.indexOf(i.source) * KINDS.length + plan.move.kinds.indexOf(i.kind),
  });
  // Networks kept together count whole on their destination from their first member on, as the
  // drain counts them (drain/placement.ts): what their members have not brought yet is `ahead`.
  const ahead = new Map<string, number>();
  const together = new Map<number, { landed: number; counted: number }>();
  const candidates = () =>
    plan.move.to.map((name) => {
      const room = rooms.get(name);
      return {
        name,
        placed: byDestination.get(name)!.bytes + (ahead.get(name) ?? 0),
        room: room === undefined ? null : room,
        weight: plan.weights[name] ?? 0,
      };
    });
  const budgets = new Map<string, number>();
  for (const source of plan.move.from) {
    let budget = Infinity;
    if (until && 'movedBytes' in until) budget = until.movedBytes;
    if (until && 'freeBytes' in until) {
      const f = sourceFree.get(source);
      budget = f === null || f === undefined ? 0 : until.freeBytes - f;
    }
    budgets.set(source, budget);
  }
  // A network whose pool is on a destination with room for it goes there whatever the weights:
  // counted there from the start, as the drain counts it (drain/placement.ts, reserveAnchored).
  const listed = new Set(items.flatMap((i) => (i.network === undefined ? [] : [i.network])));
  for (const [id, net] of networks) {
    const anchor = net.rootStorage;
    if (anchor === null || !byDestination.has(anchor) || !listed.has(id)) continue;
    const c = candidates().find((x) => x.name === anchor);
    if (!c || (c.room !== null && c.room - c.placed < net.bytes)) continue;
    netDest.set(id, anchor);
    together.set(id, { landed: 0, counted: net.bytes });
    ahead.set(anchor, (ahead.get(anchor) ?? 0) + net.bytes);
  }
  const keys = new Map(items.map((i) => [i, key(i)]));
  const byKind = plan.move.order === 'by-kind' || plan.move.mode !== 'throttled';
  const ordered = [...items]
    .filter((i) => budgets.has(i.source))
    .sort((a, b) => {
      const ka = keys.get(a) as OrderKey;
      const kb = keys.get(b) as OrderKey;
      // By kind: source by source, kind by kind, each largest first; together: one order.
      return (byKind ? ka.pair - kb.pair : 0) || compareKeys(ka, kb);
    });
  for (const it of ordered) {
    const pinned = it.destination;
    if (pinned === undefined) {
      const budget = budgets.get(it.source) as number;
      if (budget <= 0) continue;
      budgets.set(it.source, budget - it.bytes);
    } else if (!byDestination.has(pinned)) continue;
    let dest: string;
    const net = it.network !== undefined ? networks.get(it.network) : undefined;
    const known = it.network !== undefined ? netDest.get(it.network) : undefined;
    if (pinned !== undefined) dest = pinned;
    else if (known) dest = known;
    else if (it.network !== undefined && net && known === undefined && plan.move.to.length > 1) {
      const all = candidates();
      const whole = chooseUnit(all, { sizeOn: (d) => net.bytes + pools.copyOn(d, net), anchor: net.rootStorage });
      if (whole !== null) {
        dest = whole;
        netDest.set(it.network, dest);
      } else {
        const extra = copies ? net.poolBytes : 0;
        split.push({ network: it.network, bytes: net.bytes + extra, extraBytes: extra });
        netDest.set(it.network, null);
        dest = pickDestination(all, memberLanding(it.bytes, net.poolBytes));
      }
    } else dest = pickDestination(candidates(), net ? memberLanding(it.bytes, net.poolBytes) : it.bytes);
    const d = byDestination.get(dest)!;
    // A member lands with the pool's objects, and brings the pool copy once per destination it
    // lands on (split or not) where the pool is not, on releases that copy it.
    let lands = it.bytes;
    if (net && it.network !== undefined)
      lands += memberLanding(it.bytes, net.poolBytes) - it.bytes + pools.charge(it.network, dest, net);
    d.bytes += lands;
    if (net && it.network !== undefined && netDest.get(it.network) === dest) {
      const t = together.get(it.network) ?? { landed: 0, counted: 0 };
      const before = t.counted - t.landed;
      t.landed += lands;
      t.counted = Math.max(net.bytes + pools.copyOn(dest, net), t.landed);
      together.set(it.network, t);
      ahead.set(dest, (ahead.get(dest) ?? 0) - before + (t.counted - t.landed));
    }
    d.items += 1;
    if (it.byAllowance) d.byAllowance += 1;
    d.kinds.add(it.kind);
  }
  return { byDestination, split };
}

/**
 * The listed projects' fork networks (./list-networks.ts) with what they land with: each member its
 * own bytes and the pool's objects. Marks each member's network on its item.
 */
function landedNetworks(items: Sized[], listed: readonly ListedNetwork[]): Map<number, SimNetwork> {
  const byId = new Map(items.filter((i) => i.kind === 'projects').map((i) => [i.id, i]));
  const out = new Map<number, SimNetwork>();
  for (const l of listed) {
    const n: SimNetwork = { bytes: 0, poolBytes: l.poolBytes, rootStorage: l.rootStorage };
    for (const id of l.members) {
      const it = byId.get(id);
      if (!it) continue;
      it.network = l.root;
      n.bytes += memberLanding(it.bytes, n.poolBytes);
    }
    out.set(l.root, n);
  }
  return out;
}

/** What the room check has to say: problems to warn about, and room that fits (information, not a warning). */
export interface RoomReport {
  warnings: string[];
  notes: string[];
  /** A dry run: the refusal a real run would meet here (the drain does not fit); absent: none. */
  refusal?: string;
}

/**
 * Checks the room; returns the lines to report: a destination with room for what the placement
 * would send there is a note, one without (a dry run's), unchecked room, fork networks split or
 * losing their pools are warnings. How many items go where, and how many stay, is not said here:
 * that is the checkpoint's count (report/counts.ts), which every output shows the same way.
 * Throws (exit 1, before any write) when a destination's bytes plus `keep_free` exceed its room,
 * except in a dry run, which reports and refuses nothing.
 */
export async function checkCapacity(
  deps: ActorDeps<PreflightStore>,
  access: Partial<Record<Kind, KindAccessMode>>,
  version: string | null = null,
): Promise<RoomReport> {
  const { plan, api } = deps;
  const capacity = plan.capacity;
  const several = plan.move.to.length > 1 || plan.move.until !== undefined;
  const pools = plan.move.kinds.includes('projects') && access.projects !== 'records' ? poolsOnMove(version) : null;
  const poolsAtRisk = pools === 'dropped' || pools === 'flag';
  if (!capacity && !several && !poolsAtRisk) {
    const to = plan.move.to[0]!;
    deps.log.warn({ storage: to }, 'the room on the destination was not checked: the plan has no capacity section');
    return { warnings: [notChecked(to)], notes: [] };
  }
  const selection = selectionOf(plan);
  const items: Sized[] = [];
  const forks: ItemRecord[] = [];
  const uncounted: Kind[] = [];
  for (const kind of plan.move.kinds) {
    if (access[kind] === 'unsupported') continue;
    if (access[kind] === 'records') {
      uncounted.push(kind);
      continue;
    }
    for (const source of plan.move.from) {
      for await (const page of api.listItemsOnStorage(kind, source)) {
        // Only what the run moves counts (move.select): what stays takes no room.
        const chosen = selection ? await chooseItems(deps, selection, kind, page) : null;
        for (const item of page) {
          if (chosen && !chosen.get(item.id)) continue;
          items.push({
            kind,
            source,
            id: item.id,
            bytes: bytesOf(kind, item.sizeBytes),
            byAllowance: item.sizeBytes === null || kind !== 'projects',
            ...(item.wikiBytes ? { wikiBytes: item.wikiBytes } : {}),
          });
          if (kind === 'projects' && inNetwork(item)) forks.push(item);
        }
      }
    }
  }
  const listed = await listNetworks(deps, forks);
  const unknownForks = listed.unknownForks;
  const networks = landedNetworks(items, listed.networks);
  const warnings: string[] = [];
  const notes: string[] = [];
  if (poolsAtRisk) warnings.push(...poolWarning(items, networks, version, pools));
  if (!capacity && !several) return { warnings: [...warnings, notChecked(plan.move.to[0]!)], notes };
  const frees = new Map<string, number | null>();
  for (const to of plan.move.to) frees.set(to, await freeOf(deps, to));
  const rooms = new Map([...frees].map(([d, f]) => [d, f === null ? null : f - (capacity?.keepFreeBytes ?? 0)]));
  const sourceFree = new Map<string, number | null>();
  if (plan.move.until && 'freeBytes' in plan.move.until)
    for (const s of plan.move.from) sourceFree.set(s, await freeOf(deps, s));
  const sim = simulatePlacement(items, plan, rooms, sourceFree, networks, copiesPools(version));
  const unfit: FitRow[] = [];
  for (const to of plan.move.to) {
    const p = sim.byDestination.get(to)!;
    const row: FitRow = {
      storage: to,
      neededBytes: p.bytes,
      keepFreeBytes: capacity?.keepFreeBytes ?? 0,
      freeBytes: frees.get(to) ?? null,
      byAllowance: p.byAllowance,
      uncounted,
      unknownForks,
      fits: null,
    };
    if (row.freeBytes !== null) row.fits = row.neededBytes + row.keepFreeBytes <= row.freeBytes;
    if (row.fits === false) unfit.push(row);
    deps.log.info({ fit: row }, 'room checked');
    // Room that is not known (no capacity for this destination) is a risk, and said as one.
    (row.fits === true ? notes : warnings).push(describeFit(row));
    deps.store.appendEvent(
      'placement.planned',
      { storage: to, items: p.items, bytes: p.bytes, freeBytes: row.freeBytes },
      deps.clock.now(),
    );
  }
  for (const s of sim.split) {
    warnings.push(
      `fork network of project ${s.network} (${formatBytes(s.bytes)}) fits on no single destination: it will be split, costing about ${formatBytes(s.extraBytes)} more for each extra pool copy`,
    );
  }
  if (!capacity) warnings.push(notChecked('the destinations'));
  const first = unfit[0];
  if (first) {
    const why =
      `the drain does not fit on ${first.storage}: it needs ${first.neededBytes} bytes (${formatBytes(first.neededBytes)}) plus capacity.keep_free ${first.keepFreeBytes} bytes, ` +
      `and ${first.storage} has ${first.freeBytes} bytes (${formatBytes(first.freeBytes!)}) free (capacity.storages.${first.storage}.free)` +
      splitNote(sim.split) +
      wikiNote(items);
    if (!deps.dryRun) throw new StepError(CAPACITY_EXCEEDED, `${why}. Nothing was written`);
    return { warnings, notes, refusal: why };
  }
  return { warnings, notes };
}

/**
 * For a refusal: what the project wikis and design repositories add to the bytes needed, since a
 * project move copies them beside the repository (docs/operations.md, "Room").
 */
export function wikiNote(items: readonly Sized[]): string {
  let wikis = 0;
  let withWiki = 0;
  let projects = 0;
  for (const i of items) {
    if (i.kind !== 'projects' || i.byAllowance) continue;
    projects += 1;
    if (i.wikiBytes) {
      wikis += i.wikiBytes;
      withWiki += 1;
    }
  }
  if (projects === 0) return '';
  const wiki =
    withWiki > 0
      ? `the wikis of ${withWiki} project(s), ${wikis} bytes (${formatBytes(wikis)}, statistics.wiki_size), and `
      : '';
  return `; the listed projects count with ${wiki}a design repository allowance of ${formatBytes(DESIGN_ALLOWANCE)} each (${projects} project(s)), which a project move copies beside the repository`;
}

/** For a refusal: the split networks whose pool copies count in the bytes needed. */
function splitNote(split: SimResult['split']): string {
  if (split.length === 0) return '';
  const names = split.slice(0, 5).map((s) => s.network);
  return (
    `; that counts a pool copy on each destination of the fork network(s) of project(s) ${names.join(', ')}${split.length > 5 ? ', ...' : ''}, ` +
    'split because they fit on no single destination'
  );
}

/**
 * On releases whose moves drop a fork's pool link (before 16.3; 16.3 to 16.5 unless
 * replicate_object_pool_on_move is on), every moving fork carries the pool's objects itself on its
 * destination: the networks affected and the extra bytes, estimated as one pool per moving fork.
 */
function poolWarning(
  items: readonly Sized[],
  networks: ReadonlyMap<number, SimNetwork>,
  version: string | null,
  pools: 'dropped' | 'flag',
): string[] {
  const moving = items.filter((i) => i.kind === 'projects' && i.network !== undefined && i.network !== i.id);
  if (moving.length === 0) return [];
  const names = [...new Set(moving.map((i) => i.network!))];
  const extra = moving.reduce((a, i) => a + (networks.get(i.network!)?.poolBytes ?? 0), 0);
  const why =
    pools === 'dropped'
      ? `GitLab ${version} drops a moved fork's pool link`
      : `GitLab ${version} drops a moved fork's pool link unless the feature flag replicate_object_pool_on_move is on`;
  return [
    `${why}: ${moving.length} fork(s) of ${names.length} network(s) will each carry the pool's objects themselves on their destination, ` +
      `about ${formatBytes(extra)} more than their own sizes (networks of projects ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', ...' : ''}; see docs/operations.md, "Fork networks")`,
  ];
}

/**
 * The room for a reviewed item list (`run --only`): its pending items, each on the destination it is
 * pinned to, counted by the same simulation as the dry run that wrote the list (simulatePlacement):
 * a fork network's members land with their pool's objects, and a destination without the pool gets
 * one copy of it, so the list's run needs the room its dry run said. The networks are those the
 * list's seed recorded (./given-list.ts); `unknownForks`, the listed projects without `forks_count`
 * the seed read (this process's: a resume does not read them again). Refuses (exit 1, before any write) as checkCapacity
 * does; without a capacity section the room is not checked, and said so.
 */
export async function checkGivenRoom(
  deps: ActorDeps<PreflightStore>,
  version: string | null = null,
  unknownForks = 0,
): Promise<RoomReport> {
  const { plan, store } = deps;
  const capacity = plan.capacity;
  const items: Sized[] = [];
  for (const kind of plan.move.kinds)
    for (const source of plan.move.from)
      for (const row of store.itemsInState(kind, source, 'pending', Number.MAX_SAFE_INTEGER))
        items.push({
          kind,
          source,
          id: row.id,
          bytes: bytesOf(kind, row.sizeBytes),
          byAllowance: row.sizeBytes === null || kind !== 'projects',
          destination: row.destination ?? plan.move.to[0]!,
          ...(kind === 'projects' && row.network != null ? { network: row.network } : {}),
        });
  const networks = new Map<number, SimNetwork>();
  for (const n of store.networks())
    networks.set(n.id, {
      bytes: n.bytes,
      poolBytes: n.poolBytes ?? SIZE_ALLOWANCE.projects,
      rootStorage: n.rootStorage,
    });
  const warnings: string[] = [];
  const notes: string[] = [];
  // As the dry run warns: a release that drops a moved fork's pool link.
  const pools = plan.move.kinds.includes('projects') ? poolsOnMove(version) : null;
  if (pools === 'dropped' || pools === 'flag') warnings.push(...poolWarning(items, networks, version, pools));
  if (!capacity) return { warnings: [...warnings, notChecked(plan.move.to.join(', '))], notes };
  const frees = new Map<string, number | null>();
  for (const to of plan.move.to) frees.set(to, await freeOf(deps, to));
  const rooms = new Map([...frees].map(([d, f]) => [d, f === null ? null : f - capacity.keepFreeBytes]));
  const sim = simulatePlacement(items, plan, rooms, new Map(), networks, copiesPools(version));
  for (const to of plan.move.to) {
    const p = sim.byDestination.get(to)!;
    const free = frees.get(to) ?? null;
    const row: FitRow = {
      storage: to,
      neededBytes: p.bytes,
      keepFreeBytes: capacity.keepFreeBytes,
      freeBytes: free,
      byAllowance: p.byAllowance,
      uncounted: [],
      unknownForks,
      fits: free === null ? null : p.bytes + capacity.keepFreeBytes <= free,
    };
    (row.fits === true ? notes : warnings).push(describeFit(row));
    if (row.fits === false && !deps.dryRun)
      throw new StepError(
        CAPACITY_EXCEEDED,
        `the reviewed list does not fit on ${to}: it needs ${row.neededBytes} bytes (${formatBytes(row.neededBytes)}) plus capacity.keep_free ${row.keepFreeBytes} bytes, ` +
          `and ${to} has ${free} bytes (${formatBytes(free!)}) free (capacity.storages.${to}.free)` +
          wikiNote(items) +
          '. Nothing was written',
      );
  }
  return { warnings, notes };
}
