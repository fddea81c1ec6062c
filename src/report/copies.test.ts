import { describe, expect, it } from 'vitest';
import type { FailedMove, OrphanCopy } from '../store/types.js';
import { CLUSTER_NOTE_LINES, copiesLines, copiesOf, pathsInWords } from './copies.js';

const orphan = (id: number, source = 'nfs-1', moveState = 'cleanup failed'): OrphanCopy => ({
  kind: 'projects',
  id,
  name: `g/p${id}`,
  source,
  moveId: id * 10,
  moveState,
});

const failed = (id: number, over: Partial<FailedMove> = {}): FailedMove => ({
  kind: 'projects',
  id,
  name: `g/p${id}`,
  source: 'nfs-1',
  destination: 'cluster',
  moveId: id * 10,
  moveState: 'started',
  stuck: false,
  state: 'quarantined',
  reason: `move ${id * 10} failed without an error message`,
  ...over,
});

const where = (v: ReturnType<typeof copiesOf>) => v.left.map((c) => `${c.id}@${c.source}:${c.known}`);

describe('copies left behind (one decision for every output)', () => {
  it('lists the source copies of moved items as the run recorded them, with their hashed paths', () => {
    const v = copiesOf({ orphans: [orphan(7), orphan(8, 'nfs-2', 'failed')] });
    expect(v.live).toEqual([]);
    expect(v.left.map((c) => [c.id, c.source, c.side, c.cause, c.known])).toEqual([
      [7, 'nfs-1', 'source', 'move 70 cleanup failed', 'checkpoint'],
      [8, 'nfs-2', 'source', 'move 80 failed after the switch', 'checkpoint'],
    ]);
    expect(v.left[0]!.diskPaths[0]).toMatch(/^@hashed\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}\.git$/);
  });

  it("lists a possible destination copy for a project move out of room (its wiki or design copy may be what failed), not a snippet's", () => {
    const room =
      '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar: exit status 2. (shardmove: the destination cluster has 10.0MiB free, less than the 41.0MiB this copy needs)';
    const v = copiesOf({
      failedMoves: [
        failed(1, { reason: room }),
        failed(2, { reason: 'Cannot write: No space left on device' }),
        failed(3, { kind: 'snippets', reason: room }),
      ],
    });
    expect(where(v)).toEqual(['1@cluster:unknown', '2@cluster:unknown']);
    expect(v.left[0]).toMatchObject({ possible: true, side: 'destination' });
    expect(v.left[0]!.cause).toMatch(/ran out of room: if its wiki or design repository was being copied/);
  });

  it('lists a destination copy only for a failure that may have copied: no message, a later repository, a move stuck running', () => {
    const v = copiesOf({
      failedMoves: [
        failed(1),
        failed(2, { reason: 'Failed to verify wiki repository checksum from abc to 000' }),
        failed(3, { reason: '13:could not create repository from snapshot: ... wait for tar: exit status 2.' }),
        failed(4, { reason: 'Failed to verify project repository checksum from abc to 000' }),
        failed(5, { stuck: true, moveState: 'started', reason: 'stuck: move 50 still started' }),
        failed(6, { stuck: true, moveState: 'scheduled', reason: 'stuck: move 60 still scheduled' }),
        failed(7, { reason: 'repository is read-only but no move is running for it' }),
        failed(8, { destination: null }),
        failed(9, { state: 'left', reason: 'not on the source: on nfs-2' }),
      ],
    });
    // 2 copied its project repository before its wiki failed: the item is certainly on its source.
    expect(where(v)).toEqual(['1@cluster:unknown', '2@cluster:checkpoint', '5@cluster:unknown', '9@cluster:unknown']);
    expect(v.left.find((c) => c.id === 2)).toMatchObject({ possible: false, itemStorage: 'nfs-1' });
    expect(v.left.find((c) => c.id === 1)).toMatchObject({ possible: true, moveState: 'failed' });
    // A row without its destination takes the run's.
    expect(where(copiesOf({ failedMoves: [failed(8, { destination: null })] }, { destination: 'gitaly-2' }))).toEqual([
      '8@gitaly-2:unknown',
    ]);
  });

  it('takes a copy on the storage its item lives on as live: by the re-check, by a later checkpoint, or one being moved onto it', () => {
    const checks = {
      at: Date.parse('2026-01-02T03:04:05Z'),
      checks: [
        { kind: 'projects' as const, id: 1, storage: 'nfs-1', itemStorage: 'nfs-1', gone: false, why: null },
        { kind: 'projects' as const, id: 2, storage: 'nfs-1', itemStorage: 'cluster', gone: false, why: null },
        { kind: 'projects' as const, id: 3, storage: 'nfs-1', itemStorage: null, gone: true, why: null },
        { kind: 'projects' as const, id: 4, storage: 'nfs-1', itemStorage: null, gone: false, why: 'timeout' },
      ],
    };
    const v = copiesOf({ orphans: [1, 2, 3, 4].map((id) => orphan(id)) }, { checks });
    expect(v.live).toEqual([
      expect.objectContaining({ id: 1, storage: 'nfs-1', why: expect.stringContaining('2026-01-02T03:04:05.000Z') }),
    ]);
    expect(v.left.map((c) => [c.id, c.known, c.itemStorage])).toEqual([
      [2, 'instance', 'cluster'],
      [3, 'instance', null],
      [4, 'unknown', null],
    ]);
    expect(v.left[2]!.note).toBe('could not be re-checked: timeout');

    // A later checkpoint wins over the re-check: moved back, being moved back, or moved off the copy's storage.
    const later = copiesOf(
      { orphans: [orphan(1), orphan(2)], failedMoves: [failed(3)] },
      {
        checks,
        later: (_k, id) =>
          id === 1
            ? { storage: 'nfs-1', moving: false, tookOff: 'cluster', what: 'moved back' }
            : id === 2
              ? { storage: 'nfs-1', moving: true, what: 'being moved back' }
              : { storage: 'nfs-1', moving: false, tookOff: 'cluster', what: 'moved back' },
      },
    );
    expect(later.left).toEqual([]);
    expect(later.live.map((c) => `${c.id}:${c.why}`)).toEqual(['1:moved back', '2:being moved back']);
  });

  it('prints each group under its own heading, the Gitaly Cluster note once, and nothing when there is nothing', () => {
    expect(copiesLines(copiesOf({}))).toEqual([]);
    const text = copiesLines(copiesOf({ orphans: [orphan(7)], failedMoves: [failed(1)] })).join('\n');
    expect(text).toContain('Source copies left behind (1)');
    expect(text).toContain('  projects 7 g/p7: copy left on nfs-1 (move 70 cleanup failed)');
    expect(text).toContain('Copies left on the destination by failed moves (1)');
    expect(text).toContain('  projects 1 g/p1: possible copy on cluster (move 10 failed without an error message');
    expect(text).toContain('where the item lives: NOT KNOWN');
    expect(text.split(CLUSTER_NOTE_LINES[0]!)).toHaveLength(2);
    const live = copiesLines({
      left: [],
      live: [
        { kind: 'projects', id: 7, name: 'g/p7', storage: 'nfs-1', side: 'source', moveId: 70, why: 'moved back' },
      ],
    });
    expect(live.join('\n')).toContain('Copies that are live (1)');
    expect(live.join('\n')).not.toContain(CLUSTER_NOTE_LINES[0]!);
  });
});

describe('pathsInWords', () => {
  it('names the first path whole and the others that share its stem by their ending', () => {
    expect(pathsInWords(['@hashed/ab/cd/x.git', '@hashed/ab/cd/x.wiki.git', '@hashed/ab/cd/x.design.git'])).toBe(
      '@hashed/ab/cd/x.git, with its .wiki.git and .design.git beside it',
    );
    expect(pathsInWords(['@snippets/ab/cd/y.git'])).toBe('@snippets/ab/cd/y.git');
    expect(pathsInWords(['a.git', 'b.wiki.git'])).toBe('a.git, b.wiki.git');
  });
});
