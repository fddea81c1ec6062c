import { FakeClock } from '../../../test/support/fake-clock.js';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { testPlan } from '../../../test/support/fake-runtime-deps.js';
import type { Plan } from '../../plan/types.js';
import { openCheckpoint } from '../../store/checkpoint.js';
import type { DrainCtx } from './context.js';
import { boundReached, dueItems, nextDueAt } from './until.js';
import { placementOf, preparePlacement } from './placement.js';

const GIB = 2 ** 30;

/** A drain of nfs-1's projects over a fresh in-memory checkpoint with four 4 GiB items listed. */
async function drainOf(plan: Plan, free: number | 'down') {
  const store = openCheckpoint(':memory:');
  store.startRound('projects', 'nfs-1', 1);
  store.recordPage(
    'projects',
    'nfs-1',
    1,
    [1, 2, 3, 4].map((id) => ({ kind: 'projects' as const, id, storage: 'nfs-1', name: `p${id}`, sizeBytes: 4 * GIB })),
    0,
  );
  const prometheus = {
    query: () =>
      free === 'down'
        ? Promise.reject(new Error('Prometheus did not answer'))
        : Promise.resolve([{ value: free, labels: {} }]),
    close: () => Promise.resolve(),
  };
  const deps = {
    plan,
    store,
    log: pino({ level: 'silent' }),
    clock: new FakeClock(0),
    prometheus,
  };
  await preparePlacement(deps, 'nfs-1');
  const ctx = {
    deps,
    store,
    kind: 'projects',
    source: 'nfs-1',
    destination: 'cluster',
    destinations: ['cluster'],
  } as unknown as DrainCtx;
  /** What scheduleBatch does before its POSTs: the intent with its destination, accounted. */
  const intend = (ids: number[]) => {
    for (const id of ids) {
      store.markIntent('projects', id, 0, 'cluster');
      placementOf(deps).note('projects', { source: 'nfs-1', sizeBytes: 4 * GIB, network: null }, 'cluster');
    }
  };
  return { store, ctx, intend };
}

const bounded = (until: Plan['move']['until']): Plan => {
  const base = testPlan();
  return {
    ...base,
    move: { ...base.move, from: ['nfs-1'], until },
    capacity: { keepFreeBytes: 0, storages: { cluster: { bytes: 100 * GIB }, 'nfs-1': { query: 'free' } } },
    prometheus: { url: 'http://p', token: null, timeoutMs: 1000, onError: 'pause' },
  } as Plan;
};

describe('a partial drain seen from the drain loop', () => {
  it('takes new items while the budget lasts, and records the bound only once their intents spent it', async () => {
    const { store, ctx, intend } = await drainOf(bounded({ movedBytes: 6 * GIB }), 0);
    const first = dueItems(ctx, 0, 10);
    // 6 GiB: the second 4 GiB item crosses the bound and is the last one.
    expect(first.map((r) => r.id)).toEqual([1, 2]);
    expect(boundReached(ctx)).toBe(false);
    intend([1, 2]);
    expect(nextDueAt(ctx)).toBe(0);
    // The next turn finds the budget spent with unplaced items pending: now the bound is recorded.
    expect(dueItems(ctx, 0, 10)).toEqual([]);
    expect(boundReached(ctx)).toBe(true);
    expect(store.getBound('nfs-1')).toMatchObject({ note: `move.until moved: ${6 * GIB} bytes` });
    expect(nextDueAt(ctx)).toBeNull();
    // A retry of a placed item still comes after the bound.
    store.markPending('projects', 1, 5, 'boom', false);
    expect(dueItems(ctx, 5, 10).map((r) => r.id)).toEqual([1]);
  });

  it('an unreadable free space schedules nothing new and never records the bound', async () => {
    const { store, ctx } = await drainOf(bounded({ freeBytes: 50 * GIB }), 'down');
    expect(dueItems(ctx, 0, 10)).toEqual([]);
    expect(nextDueAt(ctx)).toBeNull();
    expect(boundReached(ctx)).toBe(false);
    expect(store.countUnplaced('projects', 'nfs-1')).toBe(4);
  });

  it('a readable one allows what brings the source to the free space asked for', async () => {
    const { ctx } = await drainOf(bounded({ freeBytes: 10 * GIB }), 3 * GIB);
    // 7 GiB to free: two 4 GiB items, the second crossing.
    expect(dueItems(ctx, 0, 10).map((r) => r.id)).toEqual([1, 2]);
  });
});
