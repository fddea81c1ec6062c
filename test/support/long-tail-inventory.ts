/**
 * A long-tailed inventory with fork networks, for placement tests and the placement benchmark: a
 * few large projects and many small ones (sizes log-normal), and networks of 2 to 12 members (a root
 * and its direct forks, who share a pool). Drawn from a fixed seed, so every run sees the same
 * inventory. It can be given to the fake instance (the in-process drain on a fake clock) or written
 * into a sandbox seed (`inventory.projects`, sizes in MiB), and `landedBytes` says what a final
 * placement put on each destination, counted as GitLab lands it: each project's bytes, each pool
 * member with its pool's objects, and one pool copy per network and destination where the pool is
 * not yet.
 */
import type { Document } from 'yaml';
import type { FakeInstance } from './fake-instance.js';

const MIB = 2 ** 20;

export interface TailProject {
  id: number;
  /** Where it is before the drain. */
  storage: string;
  /** Reported size (`statistics.repository_size`), bytes. */
  sizeBytes: number;
  /** The root it is a direct fork of, or null. */
  forkedFrom: number | null;
}

export interface TailNetwork {
  root: number;
  members: number[];
  /** The pool's objects: the root's size, as the drain estimates it. */
  poolBytes: number;
}

export interface LongTailInventory {
  projects: TailProject[];
  networks: TailNetwork[];
  /** Where the projects are before the drain (but roots put on `rootsOn`). */
  source: string;
}

export interface LongTailOptions {
  projects?: number;
  networks?: number;
  seed?: number;
  /** Median project size, bytes (default 8 MiB). */
  medianBytes?: number;
  /** Spread of the log of the sizes (default 1.4: the largest are a few hundred times the median). */
  sigma?: number;
  /** How much larger a network's root is drawn than other projects (default 8: roots are the popular ones). */
  rootScale?: number;
  source?: string;
  /** A storage that holds the roots of every other network (their pools are there already), or none. */
  rootsOn?: string;
}

/** mulberry32: a small, fixed PRNG (the draw must not change with the platform). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * 400 projects (ids 1..400) on `nfs-1` by default, 30 networks of 2 to 12 members; each size a
 * whole number of MiB, at least 1. A network's root is drawn like any project; its forks are
 * smaller (a fork holds little beyond its pool).
 */
export function longTailInventory(opts: LongTailOptions = {}): LongTailInventory {
  const count = opts.projects ?? 400;
  const nets = opts.networks ?? 30;
  const rand = prng(opts.seed ?? 41);
  const median = opts.medianBytes ?? 8 * MIB;
  const sigma = opts.sigma ?? 1.4;
  const normal = () => {
    const u = Math.max(rand(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
  };
  const size = (scale: number) => Math.max(1, Math.round((median * scale * Math.exp(sigma * normal())) / MIB)) * MIB;
  const projects: TailProject[] = [];
  const source = opts.source ?? 'nfs-1';
  for (let id = 1; id <= count; id++) projects.push({ id, storage: source, sizeBytes: size(1), forkedFrom: null });
  const networks: TailNetwork[] = [];
  const free = projects.map((p) => p.id);
  const take = () => free.splice(Math.floor(rand() * free.length), 1)[0] as number;
  for (let n = 0; n < nets && free.length >= 2; n++) {
    const members = Math.min(free.length, 2 + Math.floor(rand() * 11));
    const root = take();
    const r = projects[root - 1] as TailProject;
    r.sizeBytes = size(opts.rootScale ?? 8);
    if (opts.rootsOn !== undefined && n % 2 === 1) r.storage = opts.rootsOn;
    const forks = Array.from({ length: members - 1 }, take);
    for (const f of forks) {
      const p = projects[f - 1] as TailProject;
      p.forkedFrom = root;
      p.sizeBytes = size(0.25);
    }
    networks.push({ root, members: [root, ...forks], poolBytes: (projects[root - 1] as TailProject).sizeBytes });
  }
  return { projects, networks, source };
}

/** Puts the inventory on the fake instance: the projects on their source, with sizes and forks. */
export function addToFake(fake: FakeInstance, inv: LongTailInventory): void {
  for (const p of inv.projects) {
    fake.addItems('projects', p.storage, [p.id]);
    fake.setSize('projects', p.id, p.sizeBytes);
    if (p.forkedFrom !== null) fake.fork(p.id, p.forkedFrom);
  }
}

/** Writes the inventory into a sandbox seed (`inventory.projects`), sizes in MiB. */
export function seedSandbox(seed: Document, inv: LongTailInventory): void {
  seed.setIn(
    ['inventory', 'projects'],
    inv.projects.map((p) => ({
      id: p.id,
      name: `tail-${p.id}`,
      namespace: 'tail',
      visibility: 'private',
      storage: p.storage,
      size_mb: p.sizeBytes / MIB,
      ...(p.forkedFrom === null ? {} : { forked_from: p.forkedFrom }),
    })),
  );
}

/**
 * Bytes landed per destination once every project is where `storageOf` says: its own bytes, its
 * pool's objects for a pool member, and one pool copy per network on each destination a member of
 * it landed on (the pool starts on the source). Projects still on the source count nowhere.
 */
export function landedBytes(
  inv: LongTailInventory,
  storageOf: (id: number) => string | null,
  destinations: readonly string[],
): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(destinations.map((d) => [d, 0]));
  const poolOf = new Map<number, TailNetwork>();
  for (const n of inv.networks) for (const m of n.members) poolOf.set(m, n);
  const copies = new Set<string>();
  const before = new Map(inv.projects.map((p) => [p.id, p.storage]));
  for (const n of inv.networks) copies.add(`${n.root}:${before.get(n.root) ?? ''}`);
  for (const p of inv.projects) {
    const d = storageOf(p.id);
    // What did not move lands nowhere (a root left on a destination holds its pool already).
    if (d === null || !(d in out) || d === p.storage) continue;
    const net = poolOf.get(p.id);
    let bytes = p.sizeBytes;
    if (net) {
      bytes += net.poolBytes;
      if (!copies.has(`${net.root}:${d}`)) {
        copies.add(`${net.root}:${d}`);
        bytes += net.poolBytes;
      }
    }
    out[d] = (out[d] ?? 0) + bytes;
  }
  return out;
}

/** (largest - smallest) / smallest of the destinations' bytes. */
export function spreadOf(bytes: Record<string, number>): number {
  const v = Object.values(bytes);
  const lo = Math.min(...v);
  return lo > 0 ? (Math.max(...v) - lo) / lo : Infinity;
}

/** `name`'s share of all the bytes. */
export function shareOf(bytes: Record<string, number>, name: string): number {
  const total = Object.values(bytes).reduce((a, b) => a + b, 0);
  return total > 0 ? (bytes[name] ?? 0) / total : 0;
}
