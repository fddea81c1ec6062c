import { describe, expect, it } from 'vitest';
import { testPlan } from '../../../test/support/fake-runtime-deps.js';
import type { Plan } from '../../plan/types.js';
import { simulatePlacement } from '../capacity.js';
import type { Sized } from '../capacity.js';
import { PoolCharges, copiesPools, inNetwork, isPoolMember, memberLanding, placeInNetwork } from './networks.js';
import type { NetNode } from './networks.js';

const MIB = 2 ** 20;

describe('fork networks: who is in one, and what a member lands with', () => {
  it('takes a missing forks_count as unknown (a possible root), not 0', () => {
    expect(inNetwork({ forkedFromId: null, forksCount: null })).toBe(true);
    expect(inNetwork({ forkedFromId: null })).toBe(false);
    expect(inNetwork({ forkedFromId: null, forksCount: 2 })).toBe(true);
    expect(inNetwork({ forkedFromId: 7 })).toBe(true);
  });

  it('makes the root and its direct forks pool members, a fork of a fork standalone, reading parents it was not shown', async () => {
    const known = new Map<number, NetNode>([
      [2, { parent: 1, storage: 'nfs-1', sizeBytes: 10 }],
      [3, { parent: 2, storage: 'nfs-1', sizeBytes: 10 }],
      [9, { parent: 8, storage: 'nfs-1', sizeBytes: 10 }],
    ]);
    const reads: number[] = [];
    const read = async (id: number) => {
      reads.push(id);
      return id === 1 ? { forkedFromId: null, storage: 'default', sizeBytes: 500 } : null;
    };
    expect(await placeInNetwork(2, known, read)).toEqual({ root: 1, depth: 1 });
    expect(await placeInNetwork(3, known, read)).toEqual({ root: 1, depth: 2 });
    // The root was read once, then known.
    expect(reads).toEqual([1]);
    expect(isPoolMember({ root: 1, depth: 1 })).toBe(true);
    expect(isPoolMember({ root: 1, depth: 2 })).toBe(false);
    // A parent that cannot be read: its child is taken as the root.
    expect(await placeInNetwork(9, known, read)).toEqual({ root: 9, depth: 0 });
  });

  it('lands each member with the pool, and copies the pool once per destination where it is not, on releases that copy it', () => {
    expect(memberLanding(300, 500)).toBe(800);
    expect(memberLanding(300, null)).toBe(300);
    expect([null, '15.11.0', '16.2.9', '16.3.0', '16.6.0', '17.11.0'].map(copiesPools)).toEqual([
      true,
      false,
      false,
      true,
      true,
      true,
    ]);
    const pool = { poolBytes: 500, rootStorage: 'a' };
    const charges = new PoolCharges(true);
    expect([charges.charge(1, 'a', pool), charges.charge(1, 'b', pool), charges.charge(1, 'b', pool)]).toEqual([
      0, 500, 0,
    ]);
    expect(new PoolCharges(false).charge(1, 'b', pool)).toBe(0);
  });

  it("pre-flight's simulation counts what lands on a single destination too", () => {
    const base = testPlan();
    const plan = { ...base, move: { ...base.move, to: ['cluster'] } } as Plan;
    const items: Sized[] = [
      { kind: 'projects', source: 'nfs-1', id: 1, bytes: 500 * MIB, byAllowance: false, network: 1 },
      { kind: 'projects', source: 'nfs-1', id: 2, bytes: 300 * MIB, byAllowance: false, network: 1 },
      { kind: 'projects', source: 'nfs-1', id: 3, bytes: 100 * MIB, byAllowance: false },
    ];
    const networks = new Map([[1, { bytes: 1800 * MIB, poolBytes: 500 * MIB, rootStorage: 'nfs-1' }]]);
    const at = (copies: boolean) =>
      simulatePlacement(items, plan, new Map([['cluster', null]]), new Map(), networks, copies).byDestination.get(
        'cluster',
      )?.bytes;
    expect(at(true)).toBe((1000 + 800 + 100 + 500) * MIB);
    expect(at(false)).toBe((1000 + 800 + 100) * MIB);
  });
});
