// The disk bandwidth model on its own: the max-min fair shares as a table, then exact end times as
// copies come and go, other tenants' windows, and the counters the exporters read.
import { describe, expect, it } from 'vitest';
import type { DiskBusyWindow } from '../seed-disks.js';
import type { DiskCopy, DiskSetup } from './disks.js';
import { MAX_TENANT_SHARE, createDiskModel, shareRates } from './disks.js';

/** `id:source>destination`, so a table row reads as the copies it shares. */
function copy(spec: string): DiskCopy {
  const m = /^(\d+):([^>]+)>(.+)$/.exec(spec);
  if (!m) throw new Error(`bad copy ${spec}`);
  return { id: Number(m[1]), source: m[2] as string, destination: m[3] as string };
}

describe('shareRates', () => {
  const cases: {
    name: string;
    capacity: Record<string, number>;
    copies: string[];
    rates: Record<number, number>;
  }[] = [
    { name: 'one copy has the whole disk', capacity: { a: 100 }, copies: ['1:a>u'], rates: { 1: 100 } },
    {
      name: 'one disk shared by four copies',
      capacity: { a: 100 },
      copies: ['1:a>u', '2:a>v', '3:a>w', '4:a>u'],
      rates: { 1: 25, 2: 25, 3: 25, 4: 25 },
    },
    {
      name: 'a copy limited by the busier of its two disks; the others take what it leaves',
      capacity: { a: 100, b: 30 },
      copies: ['1:a>b', '2:a>u', '3:a>u'],
      rates: { 1: 30, 2: 35, 3: 35 },
    },
    {
      name: 'the destination limits when it is the busier one',
      capacity: { a: 100, b: 40 },
      copies: ['1:a>b', '2:u>b', '3:a>v'],
      rates: { 1: 20, 2: 20, 3: 80 },
    },
    {
      name: 'two levels of filling: each disk fixes the copies it limits most',
      capacity: { a: 120, b: 20, c: 50 },
      copies: ['1:a>b', '2:a>c', '3:a>c', '4:a>u'],
      // b: 20 for its one copy; then c: 25 each for two; a: 120 - 20 - 50 = 50 for the last.
      rates: { 1: 20, 2: 25, 3: 25, 4: 50 },
    },
    {
      name: 'a storage without a bandwidth does not limit',
      capacity: { a: 100 },
      copies: ['1:u>v', '2:a>u'],
      rates: { 1: Number.POSITIVE_INFINITY, 2: 100 },
    },
    {
      name: 'a copy from a disk to itself reads and writes every byte on it',
      capacity: { a: 100 },
      copies: ['1:a>a'],
      rates: { 1: 50 },
    },
    {
      name: 'a copy within one disk beside a copy out of it',
      capacity: { a: 90 },
      copies: ['1:a>a', '2:a>u'],
      rates: { 1: 30, 2: 30 },
    },
    { name: 'a disk with no bandwidth left gives 0', capacity: { a: 0 }, copies: ['1:a>u'], rates: { 1: 0 } },
    { name: 'no copies', capacity: { a: 100 }, copies: [], rates: {} },
  ];
  it.each(cases)('$name', ({ capacity, copies, rates }) => {
    const got = shareRates(copies.map(copy), (d) => capacity[d]);
    expect(Object.fromEntries(got)).toEqual(Object.fromEntries(Object.entries(rates)));
  });

  it('never gives a disk more than its capacity and leaves none unused while a copy could take it', () => {
    const capacity: Record<string, number> = { a: 70, b: 20, c: 55 };
    const copies = ['1:a>b', '2:b>c', '3:c>a', '4:a>u', '5:c>c', '6:u>b'].map(copy);
    const rates = shareRates(copies, (d) => capacity[d]);
    for (const [disk, cap] of Object.entries(capacity)) {
      const used = copies.reduce(
        (sum, c) =>
          sum + (rates.get(c.id) as number) * ((c.source === disk ? 1 : 0) + (c.destination === disk ? 1 : 0)),
        0,
      );
      expect(used).toBeLessThanOrEqual(cap + 1e-9);
    }
    // Max-min fairness: every copy is at its share of some disk that is full.
    for (const c of copies) {
      const full = [c.source, c.destination].some((disk) => {
        const cap = capacity[disk];
        if (cap === undefined) return false;
        const on = copies.filter((o) => o.source === disk || o.destination === disk);
        const used = on.reduce(
          (sum, o) =>
            sum + (rates.get(o.id) as number) * ((o.source === disk ? 1 : 0) + (o.destination === disk ? 1 : 0)),
          0,
        );
        const most = Math.max(...on.map((o) => rates.get(o.id) as number));
        return Math.abs(used - cap) < 1e-9 && (rates.get(c.id) as number) >= most - 1e-9;
      });
      expect(full, `copy ${c.id}`).toBe(true);
    }
  });
});

/** A model of disks `a` (1000 B/s: 1 byte per ms) and `b` (2000 B/s), windows counted from 0. */
function model(windows: DiskBusyWindow[] = [], change: Partial<DiskSetup> = {}) {
  return createDiskModel({ bandwidth: { a: 1000, b: 2000 }, windows, origin: 0, speed: 1, ...change });
}

describe('the disk model over time', () => {
  it('ends a lone copy after its bytes over the whole bandwidth', () => {
    const m = model();
    m.add(copy('1:a>u'), 1000, 0);
    expect(m.endOf(1)).toBe(1000);
    expect(m.nextEvent()).toBe(1000);
    expect(m.transferred(1, 400)).toBe(400);
  });

  it('integrates between events as copies come and go, and gives the bandwidth back when one ends', () => {
    const m = model();
    m.add(copy('1:a>u'), 1000, 0);
    // At 200 ms the first has 800 bytes left; from now on each gets half a byte per ms.
    m.add(copy('2:a>v'), 500, 200);
    expect(m.endOf(2)).toBe(1200);
    expect(m.endOf(1)).toBe(200 + 1600);
    expect(m.transferred(1, 1000)).toBe(600);
    m.advanceTo(1200);
    // The second ended with 300 bytes of the first left: the whole disk again.
    expect(m.endOf(2)).toBe(1200);
    expect(m.transferred(2, 1200)).toBe(500);
    expect(m.endOf(1)).toBe(1500);
    expect(m.nextEvent()).toBe(1500);
  });

  it('speeds the others up when a copy is forgotten mid-way', () => {
    const m = model();
    m.add(copy('1:a>u'), 1000, 0);
    m.add(copy('2:a>v'), 1000, 0);
    expect(m.endOf(1)).toBe(2000);
    m.forget(2, 400);
    // 200 bytes done at half speed, 800 left at full speed.
    expect(m.endOf(1)).toBe(1200);
  });

  it('rounds an end up to the next whole ms, so no copy ends before its last byte', () => {
    const m = createDiskModel({ bandwidth: { a: 3000 }, windows: [], origin: 0, speed: 1 });
    m.add(copy('1:a>u'), 10, 0);
    expect(m.endOf(1)).toBe(4);
    expect(m.transferred(1, 3)).toBe(9);
    m.add(copy('2:a>u'), 7, 1);
    // 3 bytes of the first by 1 ms, then 1.5 bytes per ms each: 7 bytes left of both take 4.67 ms.
    expect(m.endOf(2)).toBe(6);
    m.advanceTo(6);
    expect(m.transferred(2, 6)).toBe(7);
    expect(m.transferred(1, 6)).toBe(10);
  });

  it('counts what was copied before a resumed copy into its transferred bytes', () => {
    const m = model();
    m.add(copy('1:a>u'), 600, 100, 400);
    expect(m.endOf(1)).toBe(700);
    expect(m.transferred(1, 100)).toBe(400);
    expect(m.transferred(1, 400)).toBe(700);
    expect(m.transferred(1, Number.POSITIVE_INFINITY)).toBe(1000);
  });

  it('follows the time compression: at speed 10 a second carries ten seconds of bytes', () => {
    const m = model([], { speed: 10 });
    m.add(copy('1:a>u'), 10_000, 0);
    expect(m.endOf(1)).toBe(1000);
  });

  it('ends a copy of nothing at once', () => {
    const m = model();
    m.add(copy('1:a>u'), 0, 50);
    expect(m.endOf(1)).toBe(50);
    expect(m.transferred(1, 50)).toBe(0);
  });
});

describe("other tenants' windows", () => {
  it('take their share inside the window only: the copy slows in it and speeds up after it', () => {
    const m = model([busy(0.5, 1000, 2000)]);
    m.add(copy('1:a>u'), 3000, 0);
    expect(m.endOf(1)).toBe(3000);
    m.advanceTo(1000);
    // 1000 bytes done; at half a byte per ms the rest would take 4 s, but the window closes first.
    expect(m.endOf(1)).toBe(5000);
    expect(m.nextEvent()).toBe(2000);
    m.advanceTo(2000);
    expect(m.transferred(1, 2000)).toBe(1500);
    expect(m.endOf(1)).toBe(3500);
  });

  it('add up where they overlap', () => {
    const m = model([busy(0.5, 1000, 2000), busy(0.25, 1500, 2000)]);
    m.add(copy('1:a>u'), 3000, 0);
    m.advanceTo(5000);
    // 1000 + 500 ms at 0.5 + 500 ms at 0.25, then the rest at full speed.
    expect(m.endOf(1)).toBe(2000 + (3000 - 1000 - 250 - 125));
  });

  it(`take at most ${MAX_TENANT_SHARE} of a disk together, so a copy on it still progresses`, () => {
    const m = model([busy(0.6, 0, 1000), busy(0.6, 0, 1000)]);
    m.add(copy('1:a>u'), 1000, 0);
    m.advanceTo(1000);
    expect(m.transferred(1, 1000)).toBeCloseTo(1000 * (1 - MAX_TENANT_SHARE), 9);
    expect(m.endOf(1)).toBe(1000 + 950);
  });

  it('count from the origin and touch only their own disk', () => {
    const m = model([busy(0.5, 1000, 2000, 'b')], { origin: 10_000 });
    m.add(copy('1:a>u'), 1000, 10_000);
    m.add(copy('2:u>b'), 4000, 10_000);
    expect(m.endOf(1)).toBe(11_000);
    m.advanceTo(13_000);
    // b writes 2 bytes per ms, 1 in the window: 2000 + 1000 bytes by 12 000, 1000 left.
    expect(m.endOf(2)).toBe(12_500);
  });

  it('change the shares between copies as well', () => {
    // b (2 B/ms) limits the copy into it until a tenant takes 75% of a (1 B/ms): then a does.
    const m = model([busy(0.75, 0, 1000)]);
    m.add(copy('1:a>b'), 1000, 0);
    m.add(copy('2:u>b'), 1000, 0);
    // a gives 0.25 to copy 1; b's other 1.75 go to copy 2, whose 1000 bytes take 572 ms (571.4).
    expect(m.endOf(2)).toBe(572);
    m.advanceTo(2000);
    expect(m.transferred(1, 2000)).toBe(1000);
  });
});

describe('the counters', () => {
  it('count busy seconds from the copies and the tenants, at most the whole disk', () => {
    const m = model([busy(0.5, 1000, 3000)]);
    m.add(copy('1:a>b'), 500, 0);
    m.advanceTo(4000);
    // a: busy 0.5 s with the copy (0..500), 1 s of the tenant's half (1000..3000).
    expect(m.counters('a', 4000).busySeconds).toBeCloseTo(0.5 + 1, 9);
    // b writes at up to 2 B/ms: a limits the copy to 1, half of b.
    expect(m.counters('b', 4000).busySeconds).toBeCloseTo(0.25, 9);
    m.add(copy('2:a>u'), 1500, 4000);
    m.add(copy('3:a>u'), 1500, 4000);
    m.advanceTo(10_000);
    expect(m.counters('a', 10_000).busySeconds).toBeCloseTo(1.5 + 3, 9);
  });

  it('count a tenant inside its window while no copy runs', () => {
    const m = model([busy(0.25, 1000, 3000)]);
    m.advanceTo(4000);
    expect(m.counters('a', 4000).busySeconds).toBeCloseTo(0.5, 9);
    // Asked before anything moved the model, from its origin on.
    expect(model([busy(0.25, 1000, 3000)]).counters('a', 2000).busySeconds).toBeCloseTo(0.25, 9);
  });

  it("count a window that closed before the first copy started, from the model's origin", () => {
    const m = model([busy(0.5, 1000, 2000)], { origin: 0 });
    m.add(copy('1:a>u'), 1000, 5000);
    expect(m.endOf(1)).toBe(6000);
    expect(m.counters('a', 5000).busySeconds).toBeCloseTo(0.5, 9);
  });

  it('count bytes read on the source and written on the destination, limited or not', () => {
    const m = model();
    m.add(copy('1:a>b'), 500, 0);
    m.add(copy('2:a>u'), 300, 0);
    m.add(copy('3:v>b'), 700, 0);
    m.advanceTo(5000);
    expect(bytes(m.counters('a', 5000))).toEqual({ read: 800, written: 0 });
    expect(bytes(m.counters('b', 5000))).toEqual({ read: 0, written: 1200 });
    expect(bytes(m.counters('u', 5000))).toEqual({ read: 0, written: 300 });
    expect(bytes(m.counters('v', 5000))).toEqual({ read: 700, written: 0 });
    expect(m.counters('u', 5000).busySeconds).toBe(0);
  });

  it('count a read up to the moment asked, without moving the model', () => {
    const m = model();
    m.add(copy('1:a>u'), 1000, 0);
    expect(m.counters('a', 250)).toEqual({ busySeconds: 0.25, readBytes: 250, writtenBytes: 0 });
    expect(m.counters('a', 250)).toEqual({ busySeconds: 0.25, readBytes: 250, writtenBytes: 0 });
    m.advanceTo(1000);
    expect(m.counters('a', 1000)).toEqual({ busySeconds: 1, readBytes: 1000, writtenBytes: 0 });
  });

  it('count no byte or busy time in the slack of an end rounded up', () => {
    const m = createDiskModel({ bandwidth: { a: 3000 }, windows: [], origin: 0, speed: 1 });
    m.add(copy('1:a>u'), 10, 0);
    m.advanceTo(4);
    expect(m.counters('a', 4).readBytes).toBeCloseTo(10, 9);
    expect(m.counters('a', 4).busySeconds).toBeCloseTo(10 / 3 / 1000, 9);
    expect(m.counters('u', 4).writtenBytes).toBeCloseTo(10, 9);
  });

  it('keep their counts when the transfers are cleared', () => {
    const m = model();
    m.add(copy('1:a>u'), 1000, 0);
    m.clear(500);
    expect(m.nextEvent()).toBe(Number.POSITIVE_INFINITY);
    expect(m.counters('a', 2000)).toEqual({ busySeconds: 0.5, readBytes: 500, writtenBytes: 0 });
  });

  it('count a copy within one disk as reads and writes on it, the disk busy at its full bandwidth', () => {
    const m = model();
    m.add(copy('1:a>a'), 500, 0);
    expect(m.endOf(1)).toBe(1000);
    m.advanceTo(1000);
    expect(m.counters('a', 1000)).toEqual({ busySeconds: 1, readBytes: 500, writtenBytes: 500 });
  });
});

function busy(share: number, fromMs: number, toMs: number, storage = 'a'): DiskBusyWindow {
  return { storage, share, fromMs, toMs };
}

/** Bytes read and written, to the byte (the integration adds floating-point rates). */
function bytes(c: { readBytes: number; writtenBytes: number }) {
  return { read: Math.round(c.readBytes), written: Math.round(c.writtenBytes) };
}
