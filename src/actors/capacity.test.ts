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
