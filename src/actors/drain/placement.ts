/**
 * Where each item goes, and how far a partial drain goes (many destinations, `move.until`).
 *
 * With one destination there is nothing to choose. With a list, each item's destination is chosen
 * when its first intent is recorded (before the POST, in the same transaction), so a resume never
 * changes a placement already made:
 * - when the plan gives the room of every destination (`capacity.storages`), the one with the most
 *   room left after the bytes already placed there;
 * - otherwise, bytes in proportion to the destinations' weights: the one whose share of the bytes
 *   placed so far, this item included, is furthest below its weight.
 * A row that already has a destination (pinned by a revert, or chosen by an earlier attempt) keeps it.
 * A fork network is one unit (`chooseUnit`): its members' bytes, each with its pool's objects, and
 * one pool copy where its pool is not (on releases that copy it: ./networks.ts, the release read by
 * pre-flight). Its destination is chosen for the whole unit when its first member is placed, the
 * whole unit is counted there from then on, and its other members follow; a resume counts it the
 * same way from the checkpoint. A network whose pool is on a destination with room for it goes
 * there (its members land beside their pool) and is counted there from the first choice on. A
 * network no destination has room for is split, member by member, each destination it lands on
 * paying its own pool copy. So that a network is weighed with all its members, a drain onto many
 * destinations lists its sources before it moves anything.
 *
 * `move.until` is a budget per source: `{moved: N}` allows N bytes to leave each source (counted
 * from the placements, so bytes in flight count); `{free: N}` allows the source's free space, read
 * when each drain of the source starts and advanced by the bytes placed since, to reach N. The item
 * that crosses the bound is the last one; the bound, once reached, is recorded and holds across
 * resumes.
 */
import type { Kind } from '../../plan/types.js';
import type { ItemRow, NetworkRow, PlacedRow } from '../../store/types.js';
import { PoolCharges, copiesPools, memberLanding } from './networks.js';
import { DESIGN_ALLOWANCE, SIZE_ALLOWANCE, bytesOf } from './sizes.js';
import type { ActorDeps } from '../types.js';
import { ActorError, FREE_UNREADABLE } from '../errors.js';
import type { PlacementStore } from '../../store/views.js';

export { SIZE_ALLOWANCE, bytesOf } from './sizes.js';

/**
 * A PromQL `free` whose answer is no free space: no sample, or a sample that is no size (negative,
 * infinite or NaN). The room, or the source's free space, cannot be known.
 */
export class UnreadableFreeError extends ActorError<typeof FREE_UNREADABLE> {
  constructor(message: string) {
    super(FREE_UNREADABLE, message);
  }
}

/**
 * A storage's free bytes from `capacity`: declared, or the lowest sample of its PromQL query; null
 * when the plan says nothing of it (or names no Prometheus). Throws what the query threw, or
 * UnreadableFreeError: pre-flight refuses on either, placement places by weights, and a partial
 * drain schedules nothing new from a source whose free space it cannot read. A negative free space
 * is unreadable like NaN: taken as a number it would make `move.until: {free}` drain everything.
 */
export async function freeBytesOf(
  deps: Pick<ActorDeps<PlacementStore>, 'plan'> & Partial<Pick<ActorDeps<PlacementStore>, 'prometheus'>>,
  storage: string,
): Promise<number | null> {
  const free = deps.plan.capacity?.storages[storage];
  if (!free) return null;
  if ('bytes' in free) return free.bytes;
  if (!deps.prometheus) return null;
  const values = (await deps.prometheus.query(free.query)).map((x) => x.value);
  if (values.length === 0) throw new UnreadableFreeError('the query answers no sample');
  const bad = values.find((v) => !Number.isFinite(v) || v < 0);
  if (bad !== undefined)
    throw new UnreadableFreeError(`the query answers ${formatSample(bad)}, which is not a number of free bytes`);
  return Math.min(...values);
}

/** A sample as Prometheus writes it. */
function formatSample(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  return Math.abs(v) >= 1e15 ? v.toExponential() : String(v);
}

/** A checkpoint's placed bytes of one (kind, source, destination): placed and arrived, allowances included. */
function rowBytes(r: PlacedRow): { bytes: number; moved: number } {
  const allowance = (n: number) => SIZE_ALLOWANCE[r.kind] * n;
  // As bytesOf: a sized project counts with its design allowance, an unsized one with the allowance.
  const design = (n: number) => DESIGN_ALLOWANCE * n;
  return r.kind === 'projects'
    ? {
        bytes: r.bytes + design(r.items - r.unsized) + allowance(r.unsized),
        moved: r.movedBytes + design(r.movedItems - r.movedUnsized) + allowance(r.movedUnsized),
      }
    : { bytes: allowance(r.items), moved: allowance(r.movedItems) };
}

type PlacementDeps = Pick<ActorDeps<PlacementStore>, 'plan' | 'store' | 'log' | 'clock'> &
  Partial<Pick<ActorDeps<PlacementStore>, 'prometheus' | 'instanceVersion'>>;

/** One destination as the policy sees it. */
export interface Candidate {
  name: string;
  /** Bytes placed on it so far. */
  placed: number;
  /** Room left before any of this run's placements since the room was read, or null when unknown. */
  room: number | null;
  /** Its weight in the plan (the share of bytes it should take when rooms are unknown). */
  weight: number;
}

/**
 * The policy, pure: the most room left after this item when every room is known, else the lowest
 * share of bytes against weight after this item. `size` is what the item lands with, the same
 * everywhere or per destination (a fork network brings no pool copy where its pool is). Ties go to
 * the first in the plan's order.
 */
export function pickDestination(candidates: readonly Candidate[], size: number | ((c: Candidate) => number)): string {
  if (candidates.length === 0) throw new Error('no destination to choose from');
  const sizeOf = typeof size === 'number' ? () => size : size;
  let best = candidates[0]!;
  if (candidates.every((c) => c.room !== null)) {
    const left = (c: Candidate) => (c.room as number) - c.placed - sizeOf(c);
    for (const c of candidates) if (left(c) > left(best)) best = c;
    return best.name;
  }
  const share = (c: Candidate) => (c.weight > 0 ? (c.placed + sizeOf(c)) / c.weight : Infinity);
  for (const c of candidates) if (share(c) < share(best)) best = c;
  return best.name;
}

/**
 * A unit of placement: an item, or a fork network kept together, whose size is its members' bytes,
 * each with its pool's objects, and one pool copy (none where the pool is: `anchor`).
 */
export interface Unit {
  /** The bytes the unit lands with on `destination`. */
  sizeOn: (destination: string) => number;
  /** Where its pool is already, when that is a destination (a network only). */
  anchor?: string | null;
}

/**
 * Where one unit goes, pure: its anchor when that has room for the whole unit (an unknown room has
 * room): a network's members land on the storage their pool is on, and no copy is made; else,
 * among the destinations with room for the whole unit, the policy (`pickDestination`) for the
 * unit's size on each. Null when no destination has room for it: a network is then split, its
 * members placed one by one.
 */
export function chooseUnit(candidates: readonly Candidate[], unit: Unit): string | null {
  const size = (c: Candidate) => unit.sizeOn(c.name);
  const left = (c: Candidate) => (c.room === null ? Infinity : c.room - c.placed);
  const fitting = candidates.filter((c) => left(c) >= size(c));
  if (fitting.length === 0) return null;
  const anchor = fitting.find((c) => c.name === unit.anchor);
  if (anchor) return anchor.name;
  return pickDestination(fitting, size);
}

/**
 * Places `units` one after the other as the drain does (pure: for tests and the placement
 * benchmark): those with an anchor first (they go there whatever the weights, so the rest is
 * weighed around them), then largest first. Returns each unit's destination (null: it fits nowhere
 * whole) and the bytes counted on each destination.
 */
export function placeUnits(
  candidates: readonly Candidate[],
  units: readonly Unit[],
): { destinations: (string | null)[]; bytes: Record<string, number> } {
  const placed = new Map(candidates.map((c) => [c.name, c.placed]));
  const largest = (u: Unit) => Math.max(...candidates.map((c) => u.sizeOn(c.name)));
  const anchored = (u: Unit) => (u.anchor && candidates.some((c) => c.name === u.anchor) ? 1 : 0);
  const order = units
    .map((u, i) => ({ u, i, size: largest(u), first: anchored(u) }))
    .sort((a, b) => b.first - a.first || b.size - a.size || a.i - b.i);
  const destinations: (string | null)[] = units.map(() => null);
  for (const { u, i } of order) {
    const now = candidates.map((c) => ({ ...c, placed: placed.get(c.name) ?? 0 }));
    const d = chooseUnit(now, u);
    destinations[i] = d;
    if (d !== null) placed.set(d, (placed.get(d) ?? 0) + u.sizeOn(d));
  }
  return { destinations, bytes: Object.fromEntries(placed) };
}

/** Per-run placement state, built from the checkpoint once and kept up to date in memory. */
export class Placement {
  private readonly placed = new Map<string, number>();
  private readonly fromSource = new Map<string, number>();
  private readonly networks = new Map<number, string>();
  /** Networks no destination had room for: placed member by member. */
  private readonly split = new Set<number>();
  /** The pool copies charged so far, per network and destination (on releases that copy pools). */
  private readonly pools: PoolCharges;
  /**
   * Networks kept together: what their placed members landed with so far (pool copy included), and
   * what is counted on their destination, the whole network's bytes from its first placement on.
   */
  private readonly together = new Map<number, { landed: number; counted: number }>();
  /** Whether the networks anchored on a destination were counted yet (`reserveAnchored`). */
  private scanned = false;
  /** Room per destination when read, minus what was already placed then (so room - placed = room left). */
  private readonly roomBase = new Map<string, number | null>();
  /** The sources' free space when read, minus what had already left them then. */
  private readonly freeBase = new Map<string, number | null>();

  private constructor(private readonly deps: PlacementDeps) {
    this.pools = new PoolCharges(copiesPools(deps.instanceVersion?.() ?? null));
  }

  /** Builds the state: bytes placed per destination and per source from the checkpoint, rooms read now. */
  static async create(deps: PlacementDeps): Promise<Placement> {
    const p = new Placement(deps);
    // One destination and no bound: nothing to weigh, so no read of every placed row (resume stays quick).
    if (deps.plan.move.to.length === 1 && !deps.plan.move.until) return p;
    // Every row ever placed counts, whatever became of it since (quarantined, left): the same
    // figures in one process and after a resume.
    const movedTo = new Map<string, number>();
    const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
    for (const r of deps.store.placedBytes()) {
      const { bytes, moved } = rowBytes(r);
      add(p.placed, r.destination, bytes);
      add(p.fromSource, r.source, bytes);
      add(movedTo, r.destination, moved);
    }
    const { networks, split } = deps.store.networkPlacements();
    for (const [network, d] of networks) p.networks.set(network, d);
    for (const network of split) p.split.add(network);
    // What placed network members land with beyond their own bytes: the pool's objects each, and a
    // pool copy once per destination (charged again here, so a later member does not pay twice).
    for (const m of deps.store.placedNetworkMembers()) {
      const net = deps.store.getNetwork(m.network);
      if (!net) continue;
      const extra = m.members * memberLanding(0, net.poolBytes) + p.pools.charge(m.network, m.destination, net);
      add(p.placed, m.destination, extra);
    }
    p.countNetworksWhole();
    const { plan } = deps;
    // A declared size knows nothing of this run: everything placed comes off it. A reading from
    // Prometheus already shows what arrived (moved): only the rest comes off it.
    const declared = (storage: string) => {
      const f = plan.capacity?.storages[storage];
      return f !== undefined && 'bytes' in f;
    };
    if (plan.move.to.length > 1) {
      for (const d of plan.move.to) {
        const free = await p.readFree(d);
        const seen = declared(d) ? 0 : (movedTo.get(d) ?? 0);
        p.roomBase.set(d, free === null ? null : free - (plan.capacity?.keepFreeBytes ?? 0) + seen);
      }
      // A resume counts the anchored networks the checkpoint knows now, as the first process did.
      p.reserveAnchored();
    }
    return p;
  }

  /**
   * Reads `source`'s free space for `move.until: {free}`, when a drain of it starts (the one
   * schedule's, every source at once; or each kind's with `move.order: by-kind`; and again in a
   * resumed process): the budget follows the source as it is then, not as it was when the run began. A reading from Prometheus already shows what has left the source (moved);
   * a declared size knows nothing of this run. Nothing to do for any other bound.
   */
  async readSource(source: string): Promise<void> {
    const until = this.deps.plan.move.until;
    if (!until || !('freeBytes' in until)) return;
    const f = this.deps.plan.capacity?.storages[source];
    let moved = 0;
    if (f !== undefined && !('bytes' in f))
      for (const r of this.deps.store.placedBytes()) if (r.source === source) moved += rowBytes(r).moved;
    const free = await this.readFree(source);
    this.freeBase.set(source, free === null ? null : free - moved);
    this.deps.log.info(
      { source, freeBytes: free, movedBytes: moved },
      "move.until: the source's free space read as its drain starts",
    );
  }

  /** A storage's free bytes for placement; null when unknown, said in the log when it could not be read. */
  private async readFree(storage: string): Promise<number | null> {
    try {
      return await freeBytesOf(this.deps, storage);
    } catch (err) {
      this.deps.log.warn(
        { storage, err: (err as Error).message },
        'the free space could not be read for placement; placing by weights',
      );
      return null;
    }
  }

  private candidates(): Candidate[] {
    return this.deps.plan.move.to.map((name) => {
      const base = this.roomBase.get(name);
      return {
        name,
        placed: this.placed.get(name) ?? 0,
        room: base === undefined ? null : base,
        weight: this.deps.plan.weights[name] ?? 0,
      };
    });
  }

  /**
   * Counts each network kept together whole on its destination, as `note` does from its first
   * placement on: a resume starts from the same figures as the process that placed it. What its
   * placed members landed with is counted already (their rows and pool charges).
   */
  private countNetworksWhole(): void {
    if (this.networks.size === 0) return;
    const landed = new Map<number, number>();
    for (const m of this.deps.store.networkMembers()) {
      if (m.destination === null || this.networks.get(m.network) !== m.destination) continue;
      const net = this.deps.store.getNetwork(m.network);
      const b = bytesOf('projects', m.sizeBytes) + memberLanding(0, net?.poolBytes ?? null);
      landed.set(m.network, (landed.get(m.network) ?? 0) + b);
    }
    for (const [network, destination] of this.networks) {
      const net = this.deps.store.getNetwork(network);
      if (!net) continue;
      const mine =
        (landed.get(network) ?? 0) + (this.pools.charged(network, destination) ? this.copyOn(net, destination) : 0);
      const counted = Math.max(this.unitBytes(net, destination), mine);
      this.placed.set(destination, (this.placed.get(destination) ?? 0) + counted - mine);
      this.together.set(network, { landed: mine, counted });
    }
  }

  /**
   * Counts, whole on their anchor, the networks whose pool is on a destination with room for them:
   * their members go there whatever the weights, so every placement weighs around them from the
   * start, not from whenever their first member comes in the order. Done on the first choice and
   * again when a network not seen yet comes (listed since); a resume does the same, so it counts
   * what the first process counted.
   */
  private reserveAnchored(): void {
    this.scanned = true;
    const to = this.deps.plan.move.to;
    for (const net of this.deps.store.networks()) {
      if (this.networks.has(net.id) || this.split.has(net.id)) continue;
      const anchor = net.rootStorage;
      if (anchor === null || !to.includes(anchor)) continue;
      const size = this.unitBytes(net, anchor);
      const c = this.candidates().find((x) => x.name === anchor);
      if (!c || (c.room !== null && c.room - c.placed < size)) continue;
      this.networks.set(net.id, anchor);
      this.placed.set(anchor, c.placed + size);
      this.together.set(net.id, { landed: 0, counted: size });
    }
  }

  /** The pool copy `net` brings to `destination`. */
  private copyOn(net: NetworkRow, destination: string): number {
    return this.pools.copyOn(destination, { poolBytes: net.poolBytes, rootStorage: net.rootStorage });
  }

  /**
   * A network's bytes on `destination` when kept together: its members', each with the pool's
   * objects, and the pool copy where its pool is not (on releases that copy it).
   */
  private unitBytes(net: NetworkRow, destination: string): number {
    return net.bytes - (net.poolBytes ?? 0) + this.copyOn(net, destination);
  }

  /**
   * The destination of `row`: the one it has; its network's, once a member is placed; for a
   * network's first member, the unit policy's choice (`chooseUnit`) for the whole network, its
   * bytes counted on each destination as they would land there. A network no destination has room
   * for is split (said once): its members are then placed one by one.
   */
  choose(kind: Kind, row: Pick<ItemRow, 'sizeBytes' | 'destination' | 'network'>): string {
    if (row.destination) return row.destination;
    const to = this.deps.plan.move.to;
    if (to.length === 1) return to[0]!;
    if (!this.scanned) this.reserveAnchored();
    const own = bytesOf(kind, row.sizeBytes);
    const network = row.network ?? null;
    if (network === null || this.split.has(network)) return pickDestination(this.candidates(), own);
    if (!this.networks.has(network)) this.reserveAnchored();
    const placed = this.networks.get(network);
    if (placed) return placed;
    const net = this.deps.store.getNetwork(network);
    if (!net) return pickDestination(this.candidates(), own);
    const candidates = this.candidates();
    const whole = chooseUnit(candidates, {
      sizeOn: (d) => Math.max(this.unitBytes(net, d), own),
      anchor: net.rootStorage,
    });
    if (whole !== null) return whole;
    this.split.add(network);
    const extra = this.pools.copyBytes(net);
    const bytes = Math.max(net.bytes - (net.poolBytes ?? 0) + extra, own);
    this.deps.store.appendEvent('network.split', { network, bytes, extraBytes: extra }, this.deps.clock.now());
    this.deps.log.warn(
      { network, bytes, extraBytes: extra },
      'no destination has room for the whole fork network: it is split, and each extra destination gets its own copy of the pool',
    );
    return pickDestination(candidates, memberLanding(own, net.poolBytes));
  }

  /**
   * Accounts a placement just recorded in the checkpoint. A network kept together is counted whole
   * on its destination from its first member on (members listed later add what they grow it by);
   * a split one member by member, each with its pool's objects and a pool copy per destination.
   */
  note(kind: Kind, row: Pick<ItemRow, 'source' | 'sizeBytes' | 'network'>, destination: string): void {
    // One destination and no bound: nothing is weighed, so nothing to keep (the hot path of most runs).
    if (this.deps.plan.move.to.length === 1 && !this.deps.plan.move.until) return;
    const b = bytesOf(kind, row.sizeBytes);
    this.fromSource.set(row.source, (this.fromSource.get(row.source) ?? 0) + b);
    const network = row.network ?? null;
    if (network !== null && !this.split.has(network) && !this.networks.has(network))
      this.networks.set(network, destination);
    const net = network === null ? null : this.deps.store.getNetwork(network);
    if (network === null || !net) {
      this.placed.set(destination, (this.placed.get(destination) ?? 0) + b);
      return;
    }
    // The member lands with its pool's objects; the pool follows its members: a copy on each
    // destination they land on (one for a network kept together, one per destination for a split
    // one), unless the pool is there already or the release copies none.
    const lands = b + memberLanding(0, net.poolBytes) + this.pools.charge(network, destination, net);
    const whole = this.networks.get(network) === destination && !this.split.has(network);
    if (!whole) {
      this.placed.set(destination, (this.placed.get(destination) ?? 0) + lands);
      return;
    }
    const t = this.together.get(network) ?? { landed: 0, counted: 0 };
    t.landed += lands;
    const counted = Math.max(this.unitBytes(net, destination), t.landed);
    this.placed.set(destination, (this.placed.get(destination) ?? 0) + counted - t.counted);
    t.counted = counted;
    this.together.set(network, t);
  }

  /** Bytes counted on `destination` so far: what is placed there, networks kept together counted whole. */
  placedOn(destination: string): number {
    return this.placed.get(destination) ?? 0;
  }

  /** Bytes placed so far from `source` (scheduled or moved, by this run). */
  placedFrom(source: string): number {
    return this.fromSource.get(source) ?? 0;
  }

  /**
   * What may still leave `source` under `move.until`: Infinity without a bound, otherwise bytes
   * (0 or less: the bound is reached), or null when a `free` bound's free space is unknown: then
   * nothing new is scheduled from the source, and the bound is not called reached either.
   */
  budget(source: string): number | null {
    const until = this.deps.plan.move.until;
    if (!until) return Infinity;
    const gone = this.fromSource.get(source) ?? 0;
    if ('movedBytes' in until) return until.movedBytes - gone;
    const base = this.freeBase.get(source);
    if (base === null || base === undefined) return null;
    return until.freeBytes - (base + gone);
  }
}

const BUILDING = new WeakMap<PlacementStore, Promise<Placement>>();
const READY = new WeakMap<PlacementStore, Placement>();

/**
 * Builds the run's placement state (one per checkpoint store) if it is not built yet; with
 * `source`, the drain of that source is starting: its free space is read now (`move.until: {free}`).
 */
export async function preparePlacement(deps: PlacementDeps, source?: string): Promise<Placement> {
  let p = READY.get(deps.store);
  if (!p) {
    let building = BUILDING.get(deps.store);
    if (!building) {
      building = Placement.create(deps).then((built) => {
        READY.set(deps.store, built);
        return built;
      });
      BUILDING.set(deps.store, building);
    }
    p = await building;
  }
  if (source !== undefined) await p.readSource(source);
  return p;
}

/**
 * The run's placement state, synchronously: scheduling commits its intents before its first await
 * (the cap counts them), so the drain prepares the state before it schedules anything.
 */
export function placementOf(deps: Pick<ActorDeps<PlacementStore>, 'store'>): Placement {
  const p = READY.get(deps.store);
  if (!p) throw new Error('placement used before preparePlacement()');
  return p;
}
