import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { MoveRecord } from '../../api/types.js';
import type { Plan } from '../../plan/types.js';
import { classifyFailure } from '../../events/failure-class.js';
import type { ItemRow } from '../../store/types.js';
import { createHarness, testPlan } from '../../../test/support/drain-harness.js';
import { runDrain } from './run.js';
import { confirmNoSpace } from './no-space.js';

const MIB = 1024 * 1024;
const TAR =
  '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar: exit status 2.';

const row = (id: number, moveId: number, sizeBytes: number) => ({ id, moveId, sizeBytes }) as unknown as ItemRow;
const failed = (id: number, destination: string, errorMessage: string | null): MoveRecord => ({
  id,
  kind: 'projects',
  itemId: id,
  state: 'failed',
  sourceStorage: 'nfs-1',
  destinationStorage: destination,
  errorMessage,
  createdAt: '2026-01-01T00:00:00Z',
});

function deps(storages: Record<string, { bytes: number } | { query: string }> | null, free: number[] = []) {
  const plan = { capacity: storages ? { storages, keepFreeBytes: 0 } : undefined } as unknown as Plan;
  return {
    plan,
    log: pino({ level: 'silent' }),
    prometheus: {
      query: async () => {
        if (free.length === 0) throw new Error('down');
        return free.map((value) => ({ value }));
      },
    } as never,
  };
}

describe('confirmNoSpace', () => {
  it('notes a tar failure when the destination has less free space than the copy needs, and only then', async () => {
    const rows = [row(1, 11, 40 * MIB), row(2, 12, 5 * MIB), row(3, 13, 40 * MIB)];
    const found = new Map([
      [11, failed(11, 'cluster', TAR)],
      [12, failed(12, 'cluster', TAR)],
      [13, failed(13, 'cluster', '5:invalid source repository.')],
    ]);
    const notes = await confirmNoSpace(deps({ cluster: { bytes: 10 * MIB } }), 'projects', rows, found);
    expect([...notes.keys()]).toEqual([11]);
    expect(notes.get(11)).toBe(
      `${TAR} (shardmove: the destination cluster has 10.0MiB free, less than the 41.0MiB this copy needs)`,
    );
    expect(classifyFailure(notes.get(11) ?? null)).toBe('no-space');
    expect(classifyFailure(TAR)).toBe('tar-failed');
  });

  it('confirms nothing without a capacity for the destination, or when its free space cannot be read', async () => {
    const rows = [row(1, 11, 40 * MIB)];
    const found = new Map([[11, failed(11, 'cluster', TAR)]]);
    expect((await confirmNoSpace(deps(null), 'projects', rows, found)).size).toBe(0);
    expect((await confirmNoSpace(deps({ other: { bytes: 0 } }), 'projects', rows, found)).size).toBe(0);
    expect((await confirmNoSpace(deps({ cluster: { query: 'x' } }), 'projects', rows, found)).size).toBe(0);
    const read = await confirmNoSpace(deps({ cluster: { query: 'x' } }, [3 * MIB, 2 * MIB]), 'projects', rows, found);
    expect(read.get(11)).toContain('has 2.0MiB free');
  });
});

describe('a drain whose moves end in a tar failure', () => {
  const run = async (capacity: Plan['capacity']) => {
    const h = createHarness({ ...testPlan({ retry: { maxAttempts: 1 } }), capacity }, { failMessage: TAR });
    h.fake.addItems('projects', 'nfs-1', [1]);
    h.fake.setSize('projects', 1, 40 * MIB);
    h.fake.script('projects', 1, 'fail');
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    return h.store.summary(h.clock.now()).quarantined[0]?.reason ?? null;
  };

  it("records no space when the destination's declared free space is below the copy, a tar failure otherwise", async () => {
    const full = await run({ keepFreeBytes: 0, storages: { cluster: { bytes: 10 * MIB } } });
    expect(full).toBe(
      `${TAR} (shardmove: the destination cluster has 10.0MiB free, less than the 41.0MiB this copy needs)`,
    );
    expect(classifyFailure(full)).toBe('no-space');
    const roomy = await run({ keepFreeBytes: 0, storages: { cluster: { bytes: 1024 * MIB } } });
    expect(roomy).toBe(TAR);
    expect(classifyFailure(roomy)).toBe('tar-failed');
    expect(classifyFailure(await run(undefined))).toBe('tar-failed');
  });
});
