import { describe, expect, it } from 'vitest';
import type { NetworkMemberRow, NetworkRow } from '../store/types.js';
import { networkLines, networksView } from './networks.js';

const MIB = 2 ** 20;
const member = (network: number, id: number, o: Partial<NetworkMemberRow> = {}): NetworkMemberRow => ({
  network,
  id,
  name: `g/p${id}`,
  source: 'nfs-1',
  destination: null,
  state: 'pending',
  sizeBytes: MIB,
  ...o,
});
const net = (id: number, bytes: number, o: Partial<NetworkRow> = {}): NetworkRow => ({
  id,
  rootStorage: 'nfs-1',
  poolBytes: 10 * MIB,
  bytes,
  ...o,
});

describe('fork networks for people', () => {
  it('names each network largest first: its root, members, pool and where it goes', () => {
    const v = networksView(
      [net(1, 50 * MIB), net(5, 900 * MIB, { rootStorage: 'archive', poolBytes: 300 * MIB }), net(9, 1)],
      [
        member(1, 1),
        member(1, 2, { destination: 'gitaly-1' }),
        member(1, 3, { destination: 'gitaly-2' }),
        member(5, 6),
      ],
      { destination: null },
    );
    // Network 9 has no member on the sources: it is not shown.
    expect(v).toMatchObject({ count: 2, members: 4, poolBytes: 310 * MIB });
    expect(v.networks.map((n) => [n.root, n.rootPath, n.members, n.destinations])).toEqual([
      [5, null, 1, []],
      [1, 'g/p1', 3, ['gitaly-1', 'gitaly-2']],
    ]);
    expect(v.networks[0]).not.toHaveProperty('memberList');
    expect(networkLines(v)).toEqual([
      '',
      'Fork networks (2, 4 members on the sources, pools 310 MiB in all):',
      // Beyond 80 columns: the name on a line of its own, the rest wrapped under it.
      '  project 5 (root not on the sources):',
      '    1 member, pool 300 MiB on archive, not placed yet',
      '  project 1 g/p1:',
      '    3 members, pool 10 MiB on nfs-1, split over gitaly-1, gitaly-2 (a pool copy',
      '    on each)',
      "  (each member lands with its pool's objects: the room counts them)",
    ]);
  });

  it('sends unplaced members to the one destination, lists members when asked, and shows control characters', () => {
    const v = networksView([net(1, 5)], [member(1, 1, { name: 'g/\u202eevil' }), member(1, 2)], {
      destination: 'cluster',
      memberList: true,
    });
    expect(v.networks[0]!.destinations).toEqual(['cluster']);
    expect(v.networks[0]!.rootPath).toBe('g/\\u202eevil');
    expect(v.networks[0]!.memberList).toEqual([
      { id: 1, path: 'g/\\u202eevil', source: 'nfs-1', destination: 'cluster', state: 'pending' },
      { id: 2, path: 'g/p2', source: 'nfs-1', destination: 'cluster', state: 'pending' },
    ]);
  });

  it('lists ten and says where the rest are, a command on a line of its own', () => {
    const many = Array.from({ length: 12 }, (_, i) => net(i + 1, 100 - i));
    const v = networksView(
      many,
      many.map((n) => member(n.id, n.id)),
      { destination: 'cluster' },
    );
    const lines = networkLines(v, { moreCommand: "shardmove status 'my plan.yaml' --state x.db --json --items" });
    expect(lines.filter((l) => l.startsWith('  project '))).toHaveLength(10);
    expect(lines.slice(-3)).toEqual([
      '  ... and 2 more, each with its members in:',
      "    shardmove status 'my plan.yaml' --state x.db --json --items",
      "  (each member lands with its pool's objects: the room counts them)",
    ]);
    expect(networkLines(v, { more: 'status --json lists every one' })).toContain(
      '  ... and 2 more: status --json lists every one',
    );
    expect(networkLines(networksView([], [], { destination: null }))).toEqual([]);
  });
});
