/**
 * Placement that weighs what lands, through the real drain on the fake clock: a long-tailed
 * inventory of 400 projects with 30 fork networks (test/support/long-tail-inventory.ts) drained
 * onto two destinations by the one schedule, each network placed as one unit of its members' bytes,
 * their pool objects and one pool copy. Judged from where the fake instance says every project
 * ended, counted as GitLab lands it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { DrainPair } from '../../machine/types.js';
import type { Plan } from '../../plan/types.js';
import { openCheckpoint } from '../../store/checkpoint.js';
import type { Harness } from '../../../test/support/drain-harness.js';
import { createHarness, resumed, testPlan, withDelays } from '../../../test/support/drain-harness.js';
import {
  addToFake,
  landedBytes,
  longTailInventory,
  shareOf,
  spreadOf,
} from '../../../test/support/long-tail-inventory.js';
import type { LongTailInventory } from '../../../test/support/long-tail-inventory.js';
import pino from 'pino';
import { runDrain } from './run.js';
import { Placement, chooseUnit, placeUnits, placementOf, preparePlacement } from './placement.js';
import type { Candidate } from './placement.js';
import { DESIGN_ALLOWANCE } from './sizes.js';
import { simulatePlacement } from '../capacity.js';
import type { Sized } from '../capacity.js';
import { FakeClock } from '../../../test/support/fake-clock.js';

const MIB = 2 ** 20;
const TO = ['a', 'b'];
const pair: DrainPair = { source: 'nfs-1', kind: 'projects', access: 'listing' };
const pairs = [pair];

function planOf(
  weights: Record<string, number>,
  over: Partial<Plan> = {},
  order: 'together' | 'by-kind' = 'together',
): Plan {
  const plan = testPlan({ move: { to: TO, kinds: ['projects'], order } as Partial<Plan['move']> });
  return { ...plan, weights: { ...weights, 'nfs-1': 0 }, ...over };
}

const drain = (h: Harness) => runDrain(h.deps, { ...pair, pairs });

/** Bytes landed per destination, from where the fake instance has every project now. */
const landed = (h: Harness, inv: LongTailInventory) =>
  landedBytes(inv, (id) => h.fake.item('projects', id)?.storage ?? null, TO);

/** Bytes per destination a dry run planned, from the destinations recorded in its checkpoint. */
const planned = (h: Harness, inv: LongTailInventory) => {
  const rows = new Map(
    h.store
      .itemsByIds(
        'projects',
        inv.projects.map((p) => p.id),
      )
      .map((r) => [r.id, r]),
  );
  return landedBytes(inv, (id) => rows.get(id)?.destination ?? null, TO);
};

const where = (h: Harness, inv: LongTailInventory) =>
  inv.projects.map((p) => `${p.id}:${h.fake.item('projects', p.id)?.storage ?? '?'}`);

/** Drains `inv`, killed after 60 POSTs and resumed over the reopened checkpoint, against a drain never killed. */
async function killedAndResumed(inv: LongTailInventory): Promise<void> {
  const straight = createHarness(planOf({ a: 100, b: 100 }));
  addToFake(straight.fake, inv);
  await drain(straight);

  const dir = mkdtempSync(join(tmpdir(), 'placement-units-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'run.db');
  const h = createHarness(planOf({ a: 100, b: 100 }), {}, file);
  addToFake(h.fake, inv);
  let posts = 0;
  h.fake.onRequest = (name) => {
    if (name === 'scheduleMove' && ++posts === 60) h.abort.abort(new Error('SIGKILL'));
  };
  await expect(drain(h)).rejects.toMatchObject({ code: 'SHARDMOVE_ABORTED' });
  h.fake.onRequest = null;
  const counted = TO.map((d) => placementOf(h.deps).placedOn(d));
  h.store.close();
  // Another process: the checkpoint opened again, the placement state rebuilt from it.
  const store = openCheckpoint(file);
  onTestFinished(() => store.close());
  const again = resumed({ ...h, store, deps: { ...h.deps, store } });
  // The rebuilt figures are the killed process's own.
  const rebuilt = await preparePlacement(again.deps);
  expect(TO.map((d) => rebuilt.placedOn(d))).toEqual(counted);
  const r = await drain(again);
  expect(r.remaining).toBe(0);
  expect(where(again, inv)).toEqual(where(straight, inv));
  expect(landed(again, inv)).toEqual(landed(straight, inv));
  expect(counted.every((n) => n > 0)).toBe(true);
  for (const [key, n] of again.fake.postsPerItem) expect(n, key).toBe(1);
}

describe('placement of fork networks as units (long-tailed inventory)', () => {
  it('ends two destinations of equal weights within 10% of each other, and the dry run plans the same bytes', async () => {
    // Seed 6 draws networks large enough that placing them member by member, while the listing
    // still came in, ended 48% apart (bench/bench-placement.ts, docs/benchmarks.md).
    for (const seed of [6, 7, 41]) {
      const inv = longTailInventory({ seed });
      // A listing page takes 2 s, as an admin listing with statistics does on a large instance.
      const bare = createHarness(planOf({ a: 100, b: 100 }));
      const h = withDelays(bare, { listItemsOnStorage: 2000 });
      const dry = createHarness(planOf({ a: 100, b: 100 }));
      addToFake(h.fake, inv);
      addToFake(dry.fake, inv);
      const r = await drain(h);
      expect(r.remaining, `seed ${seed}`).toBe(0);
      const bytes = landed(h, inv);
      expect(spreadOf(bytes), `seed ${seed}: ${JSON.stringify(bytes)}`).toBeLessThanOrEqual(0.1);
      await runDrain({ ...dry.deps, dryRun: true }, { ...pair, pairs });
      expect(planned(dry, inv)).toEqual(bytes);
      expect(dry.fake.moves).toEqual([]);
      // Every network kept together: one destination for all its members.
      for (const n of inv.networks) {
        const on = new Set(n.members.map((m) => h.fake.item('projects', m)!.storage));
        expect(on.size, `seed ${seed} network ${n.root}`).toBe(1);
      }
      expect(h.fake.violations).toEqual([]);
    }
  });

  it('gives a destination weighted twice the other two thirds of the bytes (±5 points)', async () => {
    const inv = longTailInventory();
    const h = createHarness(planOf({ a: 100, b: 50 }));
    addToFake(h.fake, inv);
    await drain(h);
    const share = shareOf(landed(h, inv), 'a');
    expect(share).toBeGreaterThanOrEqual(2 / 3 - 0.05);
    expect(share).toBeLessThanOrEqual(2 / 3 + 0.05);
  });

  it('keeps a network whose root sits on a destination there, whatever the weights, and weighs the rest around it', async () => {
    for (const seed of [41, 7]) {
      const inv = longTailInventory({ seed, rootsOn: 'a' });
      const h = createHarness(planOf({ a: 100, b: 100 }));
      addToFake(h.fake, inv);
      await drain(h);
      const anchored = new Set(
        inv.networks.filter((x) => inv.projects[x.root - 1]!.storage === 'a').flatMap((n) => n.members),
      );
      for (const m of anchored) expect(h.fake.item('projects', m)!.storage, `seed ${seed} project ${m}`).toBe('a');
      const bytes = landed(h, inv);
      const forced = landedBytes(inv, (id) => (anchored.has(id) ? 'a' : null), ['a']).a!;
      const total = bytes.a! + bytes.b!;
      // Counted on a from the first choice on, the anchored networks are weighed around: within
      // 10% when they hold less than half; when they hold more (seed 7), a gets nothing else.
      if (forced < total / 2) expect(spreadOf(bytes), `seed ${seed}`).toBeLessThanOrEqual(0.1);
      else expect(bytes.a, `seed ${seed}`).toBe(forced);
    }
  });

  it('places the same with move.order: by-kind (the drain of one pair calls the same placement)', async () => {
    const inv = longTailInventory({ seed: 6 });
    const together = createHarness(planOf({ a: 100, b: 100 }));
    const byKind = createHarness(planOf({ a: 100, b: 100 }, {}, 'by-kind'));
    for (const h of [together, byKind]) addToFake(h.fake, inv);
    await drain(together);
    await runDrain(byKind.deps, pair);
    expect(spreadOf(landed(byKind, inv))).toBeLessThanOrEqual(0.1);
    expect(where(byKind, inv)).toEqual(where(together, inv));
  });

  it('ends a drain killed midway and resumed in another process where one never killed ends', async () => {
    for (const rootsOn of [undefined, 'a']) await killedAndResumed(longTailInventory({ rootsOn }));
  });

  it('splits a network bigger than any destination has room for, and says so', async () => {
    const inv = longTailInventory();
    const big = [...inv.networks].sort((x, y) => y.members.length * y.poolBytes - x.members.length * x.poolBytes)[0]!;
    const bytesOf = (id: number) => inv.projects[id - 1]!.sizeBytes;
    const whole = big.members.reduce((n, m) => n + bytesOf(m) + big.poolBytes, big.poolBytes);
    // Each destination has room for a little less than the whole network (the drain places the
    // rest by the most room left all the same: pre-flight is what refuses a plan that does not fit).
    const room = whole - MIB;
    const plan = planOf(
      { a: 100, b: 100 },
      { capacity: { keepFreeBytes: 0, storages: { a: { bytes: room }, b: { bytes: room } } } },
    );
    const h = createHarness(plan);
    addToFake(h.fake, inv);
    await drain(h);
    const on = new Set(big.members.map((m) => h.fake.item('projects', m)!.storage));
    expect([...on].sort()).toEqual(['a', 'b']);
    const split = h.store.readEvents(0, 100_000).filter((e) => e.type === 'network.split');
    expect(split.map((e) => (e.data as { network: number }).network)).toContain(big.root);
  });
});

describe('the unit policy, pure', () => {
  const none = (name: string, placed = 0, weight = 100): Candidate => ({ name, placed, room: null, weight });
  it('takes each unit where the bytes stay closest to the weights, its size counted as it lands on each', () => {
    // b is lighter, but the unit brings a pool copy there that a saves.
    const unit = { sizeOn: (d: string) => (d === 'a' ? 100 : 160) };
    expect(chooseUnit([none('a', 50), none('b', 0)], unit)).toBe('a');
    expect(chooseUnit([none('a', 70), none('b', 0)], unit)).toBe('b');
    // Its pool's storage (the anchor) whenever it has room, whatever the weights: the members land
    // beside their pool. A unit that fits nowhere is null.
    expect(chooseUnit([none('a', 900), none('b', 0)], { ...unit, anchor: 'a' })).toBe('a');
    const room = (name: string, r: number): Candidate => ({ name, placed: 0, room: r, weight: 100 });
    expect(chooseUnit([room('a', 100), room('b', 1000)], { ...unit, anchor: 'a' })).toBe('a');
    expect(chooseUnit([room('a', 99), room('b', 1000)], { ...unit, anchor: 'a' })).toBe('b');
    expect(chooseUnit([room('a', 99), room('b', 159)], unit)).toBeNull();
  });

  it('places units largest first, in proportion to the weights', () => {
    const sizes = [900, 5, 40, 300, 300, 120, 7, 64, 1, 250, 33, 80];
    const units = sizes.map((n) => ({ sizeOn: () => n }));
    const equal = placeUnits([none('a'), none('b')], units);
    // Greedy, largest first: 900 on a, then b takes the next four until it passes a, and so on.
    expect(equal.bytes).toEqual({ a: 1053, b: 1047 });
    const twice = placeUnits([none('a', 0, 200), none('b', 0, 100)], units);
    expect(twice.bytes.a! / (twice.bytes.a! + twice.bytes.b!)).toBeCloseTo(2 / 3, 1);
    expect(twice.destinations[0]).toBe('a');
  });
});

describe('a fork network counted whole', () => {
  const GIB = 2 ** 30;
  it('counts the whole network on its destination from its first member on, and the same after a resume', async () => {
    const base = testPlan();
    const plan = { ...base, move: { ...base.move, to: TO }, weights: { a: 100, b: 100 } };
    const store = openCheckpoint(':memory:');
    store.startRound('projects', 'nfs-1', 1);
    const rec = (id: number, sizeBytes: number) => ({
      kind: 'projects' as const,
      id,
      storage: 'nfs-1',
      name: `p${id}`,
      sizeBytes,
    });
    store.recordPage('projects', 'nfs-1', 1, [rec(1, 4 * GIB), rec(2, GIB), rec(3, GIB), rec(9, 15 * GIB)], 0);
    // Root 1 and forks 2, 3: 6 GiB of their own, each with the 4 GiB pool, and a pool copy: 22 GiB.
    store.noteNetwork('projects', [1, 2, 3], 1, 'nfs-1', 4 * GIB);
    const make = () =>
      Placement.create({
        plan,
        store,
        log: pino({ level: 'silent' }),
        clock: new FakeClock(0),
      });
    const p = await make();
    // 15 GiB on a first: the network goes to b.
    const first = { source: 'nfs-1', sizeBytes: 15 * GIB, destination: null, network: null };
    expect(p.choose('projects', first)).toBe('a');
    p.note('projects', first, 'a');
    store.pinDestination('projects', 9, 'a');
    const root = { source: 'nfs-1', sizeBytes: 4 * GIB, destination: null, network: 1 };
    expect(p.choose('projects', root)).toBe('b');
    p.note('projects', root, 'b');
    store.pinDestination('projects', 1, 'b');
    expect(p.placedOn('b')).toBe(22 * GIB);
    // A project placed before the rest of the network sees b as holding all of it: it goes to a
    // (counted by the root alone, 12 GiB, b would look the emptier).
    const other = { source: 'nfs-1', sizeBytes: 2 * GIB, destination: null, network: null };
    expect(p.choose('projects', other)).toBe('a');
    // Another process over the same checkpoint counts the same.
    const q = await make();
    expect(q.placedOn('b')).toBe(22 * GIB);
    // The members that follow add nothing beyond the network's bytes but their design allowances.
    for (const id of [2, 3]) {
      const row = { source: 'nfs-1', sizeBytes: GIB, destination: null, network: 1 };
      const d = q.choose('projects', row);
      expect(d).toBe('b');
      q.note('projects', row, d);
      store.pinDestination('projects', id, d);
    }
    const afterAll = 22 * GIB + 3 * DESIGN_ALLOWANCE;
    expect(q.placedOn('b')).toBe(afterAll);
    expect((await make()).placedOn('b')).toBe(afterAll);
    store.close();
  });
});

describe("pre-flight's simulation of the placement", () => {
  // Not to the byte: pre-flight counts a network's bytes with each member's design allowance, the
  // checkpoint without, which can turn a near tie the other way. Before the simulation ranked a
  // network as the checkpoint does (one pool copy included) and counted it whole, seed 7 with
  // roots on a was 1.1% off.
  it('puts on each destination the bytes the drain lands there, within 0.5%', async () => {
    for (const [seed, rootsOn] of [6, 7].flatMap((x) => [undefined, 'a'].map((r) => [x, r] as const))) {
      const inv = longTailInventory({ seed, rootsOn });
      const h = createHarness(planOf({ a: 100, b: 100 }));
      addToFake(h.fake, inv);
      await drain(h);
      const bytes = landed(h, inv);
      const inNet = new Map(inv.networks.flatMap((n) => n.members.map((m) => [m, n] as const)));
      const moving = inv.projects.filter((p) => p.storage === 'nfs-1');
      const items: Sized[] = moving.map((p) => ({
        kind: 'projects',
        source: 'nfs-1',
        id: p.id,
        bytes: p.sizeBytes + DESIGN_ALLOWANCE,
        byAllowance: false,
        ...(inNet.has(p.id) ? { network: inNet.get(p.id)!.root } : {}),
      }));
      const networks = new Map(
        inv.networks.map((n) => [
          n.root,
          {
            bytes: n.members
              .filter((m) => inv.projects[m - 1]!.storage === 'nfs-1')
              .reduce((x, m) => x + inv.projects[m - 1]!.sizeBytes + DESIGN_ALLOWANCE + n.poolBytes, 0),
            poolBytes: n.poolBytes,
            rootStorage: inv.projects[n.root - 1]!.storage,
          },
        ]),
      );
      const rooms = new Map<string, number | null>(TO.map((d) => [d, null]));
      const sim = simulatePlacement(items, planOf({ a: 100, b: 100 }), rooms, new Map(), networks, true);
      for (const d of TO) {
        const s = sim.byDestination.get(d)!;
        const got = s.bytes - s.items * DESIGN_ALLOWANCE;
        expect(
          Math.abs(got - bytes[d]!) / bytes[d]!,
          `seed ${seed} ${rootsOn} ${d}: ${got} against ${bytes[d]}`,
        ).toBeLessThan(0.005);
      }
    }
  });
});
