/**
 * The disks' bandwidth, as a model of time: each storage with a seeded `instance.storage_bandwidth`
 * has a disk that reads and writes at most that many bytes per second (times `speed`, the sandbox's
 * time compression). A copy reads its source's disk and writes its destination's, and the copies on
 * a disk share it max-min fairly (progressive filling): every copy gets the same share of a disk
 * unless another disk it uses limits it to less, and what it leaves is shared by the others. A
 * storage without a bandwidth does not limit. Another tenant (`instance.disk_busy`) takes its share
 * of a disk's bandwidth inside its window; the shares of overlapping windows add up, to at most
 * MAX_TENANT_SHARE.
 *
 * Between events (a copy starting or ending, a window opening or closing) every rate is constant,
 * so progress is integrated exactly, and the rates are recomputed at each event. Event times are
 * whole milliseconds (a copy's end is rounded up), so an end is never early.
 */
import type { DiskBusyWindow } from '../seed-disks.js';

/** The most of a disk that other tenants take, so that copies on it always progress. */
export const MAX_TENANT_SHARE = 0.95;

/** A copy as the model shares bandwidth between them. */
export interface DiskCopy {
  id: number;
  source: string;
  destination: string;
}

/** How much of a disk a copy uses per byte it copies: it reads its source and writes its destination. */
function weightOn(copy: DiskCopy, disk: string): number {
  return (copy.source === disk ? 1 : 0) + (copy.destination === disk ? 1 : 0);
}

/**
 * Each copy's rate (bytes per ms), max-min fair over the disks with a capacity (`capacity`, bytes
 * per ms; undefined: not limited). A copy limited by no disk gets Infinity. A copy from a disk to
 * itself reads and writes every byte on it, so it takes twice its rate of that disk.
 */
export function shareRates(
  copies: readonly DiskCopy[],
  capacity: (disk: string) => number | undefined,
): Map<number, number> {
  const rates = new Map<number, number>();
  const left = new Map<string, number>();
  /** Each limited disk's unfixed copies, with the weight each has on it. */
  const users = new Map<string, Map<number, number>>();
  const disksOf = new Map<number, string[]>();
  for (const c of copies) {
    const disks = [...new Set([c.source, c.destination])].filter((d) => capacity(d) !== undefined);
    disksOf.set(c.id, disks);
    if (disks.length === 0) rates.set(c.id, Number.POSITIVE_INFINITY);
    for (const d of disks) {
      if (!left.has(d)) left.set(d, Math.max(0, capacity(d) as number));
      (users.get(d) ?? users.set(d, new Map()).get(d))?.set(c.id, weightOn(c, d));
    }
  }
  const weightOf = (set: Map<number, number>) => [...set.values()].reduce((a, b) => a + b, 0);
  // Progressive filling: the disk offering the least per copy fixes its copies at that share.
  while (users.size > 0) {
    let tightest = '';
    let share = Number.POSITIVE_INFINITY;
    for (const [d, set] of users) {
      const s = (left.get(d) as number) / weightOf(set);
      if (s < share || tightest === '') {
        share = s;
        tightest = d;
      }
    }
    for (const id of (users.get(tightest) as Map<number, number>).keys()) {
      rates.set(id, share);
      for (const d of disksOf.get(id) as string[]) {
        const set = users.get(d);
        left.set(d, Math.max(0, (left.get(d) as number) - share * (set?.get(id) ?? 0)));
        set?.delete(id);
        if (d !== tightest && set?.size === 0) users.delete(d);
      }
    }
    users.delete(tightest);
  }
  return rates;
}

/** What the model is given. */
export interface DiskSetup {
  /** Bytes per second of each limited storage's disk. */
  bandwidth: Readonly<Record<string, number>>;
  windows: readonly DiskBusyWindow[];
  /** Sandbox time the windows count from (ms). */
  origin: number;
  /** Time compression: a second of the sandbox's clock carries `speed` seconds of bytes. */
  speed: number;
}

interface Transfer extends DiskCopy {
  left: number;
  rate: number;
  endedAt?: number;
}

interface DiskCounters {
  busySeconds: number;
  readBytes: number;
  writtenBytes: number;
}

/** The running transfers on the disks, integrated over time. */
export interface DiskModel {
  /** Whether `storage`'s disk has a bandwidth. */
  limits(storage: string): boolean;
  /** A copy of `bytes` from `source` to `destination` starts at `at` (`done` bytes of it were copied before). */
  add(copy: DiskCopy, bytes: number, at: number, done?: number): void;
  /** When the copy's transfer ends (or ended), at the rates now. */
  endOf(id: number): number;
  /** Bytes the copy has transferred by `t` (t not before the last event). */
  transferred(id: number, t: number): number;
  /** Forgets a copy (its move went on, or the engine reloads). */
  forget(id: number, at: number): void;
  /** Integrates up to `t`, handling every event on the way. */
  advanceTo(t: number): void;
  /** The next event after the last one: a transfer's end or a window's edge (Infinity when none). */
  nextEvent(): number;
  /**
   * Busy seconds of a limited disk, and bytes read and written by the copies the model times on any
   * storage (a limited disk's copies touch unlimited ones too), up to `t`.
   */
  counters(storage: string, t: number): DiskCounters;
  /** Forgets every transfer (counters stay, as an exporter's do). */
  clear(at: number): void;
}

export function createDiskModel(setup: DiskSetup): DiskModel {
  const transfers = new Map<number, Transfer>();
  const sizes = new Map<number, number>();
  const counters = new Map<string, DiskCounters>();
  /** Integrated up to here: from the origin, so a window before the first copy counts too. */
  let lastAt = setup.origin;
  const perMs = (storage: string) => {
    const bw = setup.bandwidth[storage];
    return bw === undefined ? undefined : (bw * setup.speed) / 1000;
  };
  const tenantShare = (storage: string, t: number) => {
    let share = 0;
    for (const w of setup.windows)
      if (w.storage === storage && t >= setup.origin + w.fromMs && t < setup.origin + w.toMs) share += w.share;
    return Math.min(MAX_TENANT_SHARE, share);
  };
  const capacityAt = (t: number) => (storage: string) => {
    const full = perMs(storage);
    return full === undefined ? undefined : full * (1 - tenantShare(storage, t));
  };
  const active = () => [...transfers.values()].filter((x) => x.endedAt === undefined);
  const recompute = (t: number) => {
    const rates = shareRates(active(), capacityAt(t));
    for (const x of active()) x.rate = rates.get(x.id) ?? 0;
  };
  const projectedEnd = (x: Transfer) => (x.rate > 0 ? Math.ceil(lastAt + x.left / x.rate) : Number.POSITIVE_INFINITY);
  const windowEdgeAfter = (t: number) => {
    let next = Number.POSITIVE_INFINITY;
    for (const w of setup.windows)
      for (const edge of [setup.origin + w.fromMs, setup.origin + w.toMs]) if (edge > t && edge < next) next = edge;
    return next;
  };
  const nextEvent = () => {
    let next = windowEdgeAfter(lastAt);
    for (const x of active()) next = Math.min(next, projectedEnd(x));
    return next;
  };
  /**
   * Adds what each disk did from `from` to `to` (rates constant): bytes read and written on every
   * storage a copy touches, limited or not, and busy time on the limited ones (their copies' use
   * and the other tenants' share, at most all of it).
   */
  const accrue = (from: number, to: number, into?: Map<string, DiskCounters>, left?: Map<number, number>) => {
    const dt = to - from;
    if (!(dt > 0)) return;
    const target = into ?? counters;
    const cap = capacityAt(from);
    const running = active();
    const storages = new Set([...Object.keys(setup.bandwidth), ...running.flatMap((x) => [x.source, x.destination])]);
    for (const storage of storages) {
      if (into && !into.has(storage)) continue;
      const c = target.get(storage) ?? { busySeconds: 0, readBytes: 0, writtenBytes: 0 };
      let used = 0;
      for (const x of running) {
        if (x.source !== storage && x.destination !== storage) continue;
        // A copy's last ms is rounded up: it moves no more than it has left.
        const moved = Math.min(left?.get(x.id) ?? x.left, x.rate * dt);
        used += moved * weightOn(x, storage);
        if (x.source === storage) c.readBytes += moved;
        if (x.destination === storage) c.writtenBytes += moved;
      }
      const full = perMs(storage);
      if (full !== undefined) {
        const busy = Math.min(1, (used / dt + (full - (cap(storage) as number))) / full);
        c.busySeconds += (busy * dt) / 1000;
      }
      target.set(storage, c);
    }
    if (left) for (const x of running) left.set(x.id, Math.max(0, (left.get(x.id) ?? x.left) - x.rate * dt));
  };
  const integrate = (to: number) => {
    if (to <= lastAt) return;
    accrue(lastAt, to);
    for (const x of active()) x.left = Math.max(0, x.left - x.rate * (to - lastAt));
    lastAt = to;
  };
  const advanceTo = (t: number) => {
    for (let e = nextEvent(); e <= t; e = nextEvent()) {
      const ending = active().filter((x) => projectedEnd(x) <= e);
      integrate(e);
      for (const x of ending) {
        x.left = 0;
        x.endedAt = e;
      }
      recompute(e);
    }
    integrate(t);
  };

  return {
    limits: (storage) => setup.bandwidth[storage] !== undefined,
    add(copy, bytes, at, done = 0) {
      advanceTo(at);
      const x: Transfer = { ...copy, left: Math.max(0, bytes), rate: 0 };
      if (x.left === 0) x.endedAt = Math.max(at, lastAt);
      transfers.set(copy.id, x);
      sizes.set(copy.id, Math.max(0, bytes) + Math.max(0, done));
      recompute(lastAt);
    },
    endOf(id) {
      const x = transfers.get(id);
      if (!x) return lastAt;
      return x.endedAt ?? projectedEnd(x);
    },
    transferred(id, t) {
      const x = transfers.get(id);
      const size = sizes.get(id) ?? 0;
      if (!x || x.endedAt !== undefined) return size;
      if (t === Number.POSITIVE_INFINITY) return size;
      return Math.min(size, size - x.left + x.rate * Math.max(0, t - lastAt));
    },
    forget(id, at) {
      advanceTo(at);
      if (transfers.delete(id)) recompute(lastAt);
      sizes.delete(id);
    },
    advanceTo,
    nextEvent,
    counters(storage, t) {
      const now = new Map([
        [storage, { ...(counters.get(storage) ?? { busySeconds: 0, readBytes: 0, writtenBytes: 0 }) }],
      ]);
      // A read between events, without moving the model: the windows' edges on the way count
      // (the copies keep their rates; one ending on the way only stops moving bytes).
      const left = new Map(active().map((x) => [x.id, x.left]));
      for (let from = lastAt; from < t;) {
        const to = Math.min(t, windowEdgeAfter(from));
        accrue(from, to, now, left);
        from = to;
      }
      return now.get(storage) as DiskCounters;
    },
    clear(at) {
      advanceTo(at);
      transfers.clear();
      sizes.clear();
    },
  };
}
