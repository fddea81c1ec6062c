/**
 * Pre-flight's simulation of where items go follows the drain's own order: one largest-first
 * order across kinds and sources (`move.order: together`), or source by source, kind by kind.
 */
import { describe, expect, it } from 'vitest';
import { testPlan } from '../../test/support/drain-harness.js';
import { simulatePlacement } from './capacity.js';
import type { Sized } from './capacity.js';

const MB = 1_000_000;
const MIB = 2 ** 20;

const items: Sized[] = [
  { kind: 'projects', source: 'nfs-1', id: 1, bytes: 300 * MB, byAllowance: false },
  { kind: 'projects', source: 'nfs-1', id: 2, bytes: 10 * MB, byAllowance: false },
  { kind: 'groups', source: 'nfs-1', id: 5, bytes: 100 * MIB, byAllowance: true },
  { kind: 'snippets', source: 'nfs-1', id: 6, bytes: 10 * MIB, byAllowance: true },
];
const rooms = new Map([['cluster', null]]);
const placed = (order: 'together' | 'by-kind') =>
  simulatePlacement(items, testPlan({ move: { order, until: { movedBytes: 350 * MB } } }), rooms).byDestination.get(
    'cluster',
  );

describe('the room check simulates the drain in its own order', () => {
  it("together: a source's budget goes to the largest items of all its kinds", () => {
    // 300 MB, then the group wiki's allowance crosses the bound: the last one.
    expect(placed('together')).toMatchObject({ items: 2, bytes: 300 * MB + 100 * MIB });
  });

  it('by kind: projects, then snippets, then group wikis, as a drain per kind spends it', () => {
    expect(placed('by-kind')).toMatchObject({ items: 4, bytes: 310 * MB + 110 * MIB });
  });
});

describe('a reviewed list: each item on its pinned destination', () => {
  const net = new Map([[1, { bytes: 0, poolBytes: 50 * MB, rootStorage: 'nfs-1' }]]);
  const listed: Sized[] = [
    { kind: 'projects', source: 'nfs-1', id: 1, bytes: 50 * MB, byAllowance: false, network: 1, destination: 'a' },
    { kind: 'projects', source: 'nfs-1', id: 2, bytes: 5 * MB, byAllowance: false, network: 1, destination: 'b' },
    { kind: 'projects', source: 'nfs-1', id: 3, bytes: 7 * MB, byAllowance: false, destination: 'b' },
    // Not one of the plan's destinations: counted nowhere.
    { kind: 'projects', source: 'nfs-1', id: 4, bytes: 9 * MB, byAllowance: false, destination: 'elsewhere' },
  ];
  const plan = testPlan({ move: { to: ['a', 'b'], until: { movedBytes: 1 } } });
  const rooms2 = new Map<string, number | null>([
    ['a', null],
    ['b', null],
  ]);

  it('counts each member with its pool and a pool copy on every destination it lands on, outside move.until', () => {
    const sim = simulatePlacement(listed, plan, rooms2, new Map(), net, true).byDestination;
    expect(sim.get('a')).toMatchObject({ items: 1, bytes: 50 * MB + 50 * MB + 50 * MB });
    expect(sim.get('b')).toMatchObject({ items: 2, bytes: 5 * MB + 50 * MB + 50 * MB + 7 * MB });
  });

  it('makes no pool copy on a release that does not copy pools', () => {
    const sim = simulatePlacement(listed, plan, rooms2, new Map(), net, false).byDestination;
    expect(sim.get('a')!.bytes).toBe(100 * MB);
    expect(sim.get('b')!.bytes).toBe(62 * MB);
  });
});
