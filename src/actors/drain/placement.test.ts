import { FakeClock } from '../../../test/support/fake-clock.js';
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../../store/checkpoint.js';
import { testPlan } from '../../../test/support/fake-runtime-deps.js';
import type { Plan } from '../../plan/types.js';
import { Placement, UnreadableFreeError, freeBytesOf, pickDestination } from './placement.js';
import { codeOf } from '../../shared/errors.js';
import { DESIGN_ALLOWANCE } from './sizes.js';
import pino from 'pino';

const GIB = 2 ** 30;

/** Destinations a and b at equal weights, with `a` and `b` bytes of room. */
function twoRooms(a: number, b: number): Plan {
  const base = testPlan();
  return {
    ...base,
    move: { ...base.move, to: ['a', 'b'] },
    weights: { a: 100, b: 100 },
    capacity: { keepFreeBytes: 0, storages: { a: { bytes: a }, b: { bytes: b } } },
  } as Plan;
}

function placementFor(plan: Plan, free: Record<string, number> = {}) {
  const store = openCheckpoint(':memory:');
  const prometheus = {
    query: (q: string) => Promise.resolve(q in free ? [{ value: free[q]!, labels: {} }] : []),
    close: () => Promise.resolve(),
  };
  return {
    store,
    make: () =>
      Placement.create({
        plan,
        store,
        log: pino({ level: 'silent' }),
        clock: new FakeClock(0),
        prometheus,
      }),
  };
}

describe('the placement policy (many destinations)', () => {
  it('takes the most room left when every room is known, else the lowest share of bytes against weight; ties go to the first', () => {
    expect(
      pickDestination(
        [
          { name: 'a', placed: 5, room: 10, weight: 1 },
          { name: 'b', placed: 0, room: 12, weight: 1 },
        ],
        1,
      ),
    ).toBe('b');
    expect(
      pickDestination(
        [
          { name: 'a', placed: 2, room: 10, weight: 1 },
          { name: 'b', placed: 0, room: 8, weight: 1 },
        ],
        1,
      ),
    ).toBe('a');
    // One room unknown: by weight. b has weight 3, so it takes three times a's bytes.
    expect(
      pickDestination(
        [
          { name: 'a', placed: 10, room: null, weight: 1 },
          { name: 'b', placed: 20, room: 100, weight: 3 },
        ],
        5,
      ),
    ).toBe('b');
    expect(
      pickDestination(
        [
          { name: 'a', placed: 10, room: null, weight: 1 },
          { name: 'b', placed: 40, room: 100, weight: 3 },
        ],
        5,
      ),
    ).toBe('a');
    expect(
      pickDestination(
        [
          { name: 'a', placed: 0, room: null, weight: 1 },
          { name: 'b', placed: 0, room: null, weight: 1 },
        ],
        5,
      ),
    ).toBe('a');
    // A destination weighted 0 takes nothing while another can.
    expect(
      pickDestination(
        [
          { name: 'a', placed: 0, room: null, weight: 0 },
          { name: 'b', placed: 99, room: null, weight: 1 },
        ],
        5,
      ),
    ).toBe('b');
  });

  it('spreads bytes in proportion to the weights, and by room when the plan gives it', async () => {
    const base = testPlan();
    const byWeight = { ...base, move: { ...base.move, to: ['a', 'b'] }, weights: { a: 100, b: 50 } };
    const { make } = placementFor(byWeight);
    const p = await make();
    const placed = { a: 0, b: 0 } as Record<string, number>;
    for (let i = 0; i < 300; i++) {
      const d = p.choose('projects', { sizeBytes: GIB, destination: null, network: null });
      p.note('projects', { source: 'nfs-1', sizeBytes: GIB, network: null }, d);
      placed[d]! += 1;
    }
    expect(placed).toEqual({ a: 200, b: 100 });

    const byRoom = {
      ...byWeight,
      capacity: { keepFreeBytes: 10 * GIB, storages: { a: { bytes: 100 * GIB }, b: { query: 'free_b' } } },
      prometheus: { url: 'http://p', token: null, timeoutMs: 1000, onError: 'pause' as const },
    };
    const room = placementFor(byRoom as Plan, { free_b: 60 * GIB });
    const q = await room.make();
    const got: string[] = [];
    for (let i = 0; i < 50; i++) {
      const d = q.choose('projects', { sizeBytes: GIB, destination: null, network: null });
      q.note('projects', { source: 'nfs-1', sizeBytes: GIB, network: null }, d);
      got.push(d);
    }
    // a has 90 GiB of room, b 50: a takes the first 40, then they alternate.
    expect(got.slice(0, 40).every((d) => d === 'a')).toBe(true);
    expect(got.filter((d) => d === 'a').length).toBe(45);
  });

  it("keeps a row's recorded destination, and a network where its first member went", async () => {
    const base = testPlan();
    const plan = { ...base, move: { ...base.move, to: ['a', 'b'] }, weights: { a: 100, b: 100 } };
    const { make } = placementFor(plan);
    const p = await make();
    expect(p.choose('projects', { sizeBytes: GIB, destination: 'b', network: null })).toBe('b');
    const first = p.choose('projects', { sizeBytes: GIB, destination: null, network: 7 });
    p.note('projects', { source: 'nfs-1', sizeBytes: GIB, network: 7 }, first);
    for (let i = 0; i < 5; i++)
      expect(p.choose('projects', { sizeBytes: GIB, destination: null, network: 7 })).toBe(first);
  });

  it('charges a split network a pool copy on every destination a member lands on, except where its pool is', async () => {
    const MIB = 2 ** 20;
    const plan = twoRooms(900 * MIB, 1400 * MIB);
    const { store, make } = placementFor(plan);
    store.startRound('projects', 'nfs-1', 1);
    store.recordPage(
      'projects',
      'nfs-1',
      1,
      [2, 3].map((id) => ({ kind: 'projects' as const, id, storage: 'nfs-1', name: `p${id}`, sizeBytes: 300 * MIB })),
      0,
    );
    // Root 1 sits on a with its 500 MiB pool; its forks 2 and 3 move, each landing with the pool's
    // objects: 1600 MiB on a, 2100 MiB on b with a pool copy, more than either has room for, so the
    // network is split.
    store.noteNetwork('projects', [2, 3], 1, 'a', 500 * MIB);
    const p = await make();
    const place = () => {
      const row = { source: 'nfs-1', sizeBytes: 300 * MIB, destination: null, network: 1 };
      const d = p.choose('projects', row);
      p.note('projects', row, d);
      return d;
    };
    // Fork 2 goes to b (the most room) with the pool's objects and a pool copy: 1300 MiB of b's
    // 1400. Fork 3 then goes to a, beside the pool it shares (800 of 900 MiB); counted by the forks'
    // own sizes, b would look emptier (1100 left) and fork 3 would run b out of space.
    expect([place(), place()]).toEqual(['b', 'a']);
    expect(store.readEvents(0, 100).find((e) => e.type === 'network.split')?.data).toMatchObject({ network: 1 });
  });

  it("counts each member with its pool's objects on every release, and the pool copy only on releases that make one", async () => {
    const MIB = 2 ** 20;
    const plan = twoRooms(2000 * MIB, 1000 * MIB);
    for (const [version, expected] of [
      // 16.2 copies no pool: the network (root 500 and fork 300 MiB, each with the pool's 500 MiB)
      // lands with 1800 MiB, which a takes whole.
      ['16.2.0', ['a', 'a']],
      // 17.11 adds the pool copy (2300 MiB): no destination takes it whole, so it is split, each
      // member where the most room is left.
      ['17.11.0', ['a', 'b']],
    ] as const) {
      const store = openCheckpoint(':memory:');
      store.startRound('projects', 'nfs-1', 1);
      store.recordPage(
        'projects',
        'nfs-1',
        1,
        [
          { kind: 'projects' as const, id: 1, storage: 'nfs-1', name: 'root', sizeBytes: 500 * MIB },
          { kind: 'projects' as const, id: 2, storage: 'nfs-1', name: 'fork', sizeBytes: 300 * MIB },
        ],
        0,
      );
      store.noteNetwork('projects', [1, 2], 1, 'nfs-1', 500 * MIB);
      // What the network lands with on one destination: 1000 + 800 MiB, and one pool copy.
      expect(store.getNetwork(1)?.bytes).toBe(2300 * MIB);
      const p = await Placement.create({
        plan,
        store,
        log: pino({ level: 'silent' }),
        clock: new FakeClock(0),
        instanceVersion: () => version,
      });
      const got = [500, 300].map((mb) => {
        const row = { source: 'nfs-1', sizeBytes: mb * MIB, destination: null, network: 1 };
        const d = p.choose('projects', row);
        p.note('projects', row, d);
        return d;
      });
      expect(got, version).toEqual(expected);
      const split = store.readEvents(0, 100).find((e) => e.type === 'network.split')?.data as
        { bytes: number; extraBytes: number } | undefined;
      expect(split, version).toEqual(
        version === '16.2.0' ? undefined : { network: 1, bytes: 2300 * MIB, extraBytes: 500 * MIB },
      );
      store.close();
    }
  });

  it("budgets a partial drain: moved bytes per source, or the source's free space from capacity", async () => {
    const base = testPlan();
    const moved = { ...base, move: { ...base.move, until: { movedBytes: 3 * GIB } } };
    const a = await placementFor(moved).make();
    expect(a.budget('nfs-1')).toBe(3 * GIB);
    a.note('projects', { source: 'nfs-1', sizeBytes: 2 * GIB, network: null }, 'cluster');
    // A project counts with its design repository's allowance beside its reported size.
    expect(a.budget('nfs-1')).toBe(GIB - DESIGN_ALLOWANCE);
    expect(a.budget('nfs-2')).toBe(3 * GIB);

    const free = {
      ...base,
      move: { ...base.move, until: { freeBytes: 10 * GIB } },
      capacity: { keepFreeBytes: 0, storages: { cluster: { bytes: 100 * GIB }, 'nfs-1': { query: 'free_nfs1' } } },
      prometheus: { url: 'http://p', token: null, timeoutMs: 1000, onError: 'pause' as const },
    };
    const b = await placementFor(free as Plan, { free_nfs1: 4 * GIB }).make();
    // Read when the source's drain starts.
    expect(b.budget('nfs-1')).toBeNull();
    await b.readSource('nfs-1');
    // 4 GiB free now: 6 GiB may leave before the source has 10 GiB free.
    expect(b.budget('nfs-1')).toBe(6 * GIB);
    b.note('projects', { source: 'nfs-1', sizeBytes: 5 * GIB, network: null }, 'cluster');
    expect(b.budget('nfs-1')).toBe(GIB - DESIGN_ALLOWANCE);
    // A source whose free space cannot be read has no budget at all (null): nothing new is
    // scheduled from it, and the bound is never guessed to be reached.
    expect(b.budget('nfs-2')).toBeNull();
  });

  it("reads a source's free space when its drain starts, not once per process", async () => {
    const base = testPlan();
    const plan = {
      ...base,
      move: { ...base.move, from: ['nfs-1', 'nfs-2'], until: { freeBytes: 10 * GIB } },
      capacity: {
        keepFreeBytes: 0,
        storages: { cluster: { bytes: 100 * GIB }, 'nfs-1': { query: 'free_nfs1' }, 'nfs-2': { query: 'free_nfs2' } },
      },
      prometheus: { url: 'http://p', token: null, timeoutMs: 1000, onError: 'pause' as const },
    } as Plan;
    // When the run starts, nfs-2 already has the free space asked for.
    const free = { free_nfs1: 4 * GIB, free_nfs2: 10 * GIB };
    const { make } = placementFor(plan, free);
    const p = await make();
    await p.readSource('nfs-1');
    expect(p.budget('nfs-1')).toBe(6 * GIB);
    // While nfs-1 drains, users fill nfs-2: its drain, starting now, must see that.
    free.free_nfs2 = 3 * GIB;
    await p.readSource('nfs-2');
    expect(p.budget('nfs-2')).toBe(7 * GIB);
    // Read again at a later drain of the same source (the next kind): what it has now.
    free.free_nfs1 = 8 * GIB;
    await p.readSource('nfs-1');
    expect(p.budget('nfs-1')).toBe(2 * GIB);
  });

  it('takes a negative, infinite or NaN free space as unreadable: no budget, nothing new scheduled', async () => {
    const base = testPlan();
    const plan = {
      ...base,
      move: { ...base.move, to: ['a', 'b'], until: { freeBytes: 2.3e9 } },
      weights: { a: 100, b: 100 },
      capacity: {
        keepFreeBytes: 0,
        storages: { a: { query: 'free_a' }, b: { query: 'free_b' }, 'nfs-1': { query: 'f' } },
      },
      prometheus: { url: 'http://p', token: null, timeoutMs: 1000, onError: 'pause' as const },
    } as Plan;
    for (const bad of [-5e18, -1, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, Number.NaN]) {
      const p = await placementFor(plan, { f: bad, free_a: -5e18, free_b: 10 * GIB }).make();
      await p.readSource('nfs-1');
      expect(p.budget('nfs-1'), String(bad)).toBeNull();
      // A destination whose room reads negative is unknown room, not a bottomless one: by weights.
      const d = p.choose('projects', { sizeBytes: GIB, destination: null, network: null });
      p.note('projects', { source: 'nfs-1', sizeBytes: GIB, network: null }, d);
      expect(p.choose('projects', { sizeBytes: GIB, destination: null, network: null })).not.toBe(d);
    }
  });

  it('after a resume, counts what was placed before: off declared rooms and bounds whole, off read ones only what had not arrived', async () => {
    const base = testPlan();
    const plan = {
      ...base,
      move: { ...base.move, to: ['a', 'b'], until: { movedBytes: 20 * GIB } },
      weights: { a: 100, b: 100 },
      capacity: { keepFreeBytes: 0, storages: { a: { bytes: 20 * GIB }, b: { query: 'free_b' } } },
      prometheus: { url: 'http://p', token: null, timeoutMs: 1000, onError: 'pause' as const },
    } as Plan;
    const { store, make } = placementFor(plan, { free_b: 10 * GIB });
    store.startRound('projects', 'nfs-1', 1);
    store.recordPage(
      'projects',
      'nfs-1',
      1,
      [1, 2, 3, 4].map((id) => ({
        kind: 'projects' as const,
        id,
        storage: 'nfs-1',
        name: `p${id}`,
        sizeBytes: 4 * GIB,
      })),
      0,
    );
    const first = await make();
    const placed: string[] = [];
    for (const id of [1, 2, 3]) {
      const d = first.choose('projects', { sizeBytes: 4 * GIB, destination: null, network: null });
      store.markIntent('projects', id, 0, d);
      first.note('projects', { source: 'nfs-1', sizeBytes: 4 * GIB, network: null }, d);
      placed.push(d);
    }
    // Item 3 is quarantined since: it still counts, in this process and after a resume.
    store.markQuarantined('projects', 3, 'boom', null);
    // a: 20 GiB declared, b: 10 GiB read: a keeps the most room left for three 4 GiB items.
    expect(placed).toEqual(['a', 'a', 'a']);
    const again = await make();
    // The bound: 20 GiB minus the 12 placed (and three design allowances), quarantined included,
    // as before the "kill".
    expect(again.budget('nfs-1')).toBe(first.budget('nfs-1'));
    expect(again.budget('nfs-1')).toBe(8 * GIB - 3 * DESIGN_ALLOWANCE);
    // Rooms: a declared 20 GiB minus its 12 placed = 8 (a resume that forgot them would say 20);
    // b read at 10 with nothing placed there: b.
    expect(again.choose('projects', { sizeBytes: 4 * GIB, destination: null, network: null })).toBe('b');
  });
});

describe('a free space that cannot be read', () => {
  it('throws UnreadableFreeError with its code, for no sample and for a sample that is no size', async () => {
    const base = testPlan();
    const plan = { ...base, capacity: { keepFreeBytes: 0, storages: { a: { query: 'free_a' } } } } as Plan;
    const answers: Record<string, number[]> = { none: [], negative: [-1] };
    const errors = await Promise.all(
      Object.values(answers).map((values) =>
        freeBytesOf(
          {
            plan,
            prometheus: {
              query: () => Promise.resolve(values.map((value) => ({ value, labels: {} }))),
              close: () => Promise.resolve(),
            },
          },
          'a',
        ).catch((err: unknown) => err),
      ),
    );
    expect(errors.map((e) => [e instanceof UnreadableFreeError, codeOf(e), (e as Error).name])).toEqual([
      [true, 'SHARDMOVE_FREE_UNREADABLE', 'UnreadableFreeError'],
      [true, 'SHARDMOVE_FREE_UNREADABLE', 'UnreadableFreeError'],
    ]);
  });
});
