import { describe, expect, it } from 'vitest';
import { createFakeApi, createManualClock, silentLogger, testPlan } from '../../test/support/fake-runtime-deps.js';
import type { ActorDeps } from '../actors/index.js';
import type { ItemRecord } from '../api/types.js';
import { openCheckpoint } from '../store/checkpoint.js';
import { restoreForwardWeights, verifyReverted } from './revert.js';
import { seedRevert } from './revert-items.js';

function depsWith(api: ReturnType<typeof createFakeApi>): ActorDeps & { store: ReturnType<typeof openCheckpoint> } {
  const plan = testPlan();
  return {
    api,
    store: openCheckpoint(':memory:'),
    plan: { ...plan, move: { ...plan.move, from: ['cluster'], to: ['nfs-1', 'nfs-2'], kinds: ['projects'] } },
    clock: createManualClock(),
    log: silentLogger,
    signal: new AbortController().signal,
    dryRun: false,
  };
}

/** No later change to guard against: the forward run left what the instance has. */
const GUARD = { left: [], overwrite: false, command: 'shardmove revert plan.yaml' };

describe('revert weights', () => {
  it('puts back the weights recorded before the forward run, zeroing what they did not name, and logs it', async () => {
    const api = createFakeApi({ weights: { default: 0, cluster: 100 } });
    const deps = depsWith(api);
    const out = await restoreForwardWeights(deps, { default: 100 }, GUARD);
    expect(out).toMatchObject({ written: true, current: { default: 100, cluster: 0 } });
    expect(api.state.weights).toEqual({ default: 100, cluster: 0 });
    expect(deps.store.readEvents().map((e) => e.type)).toEqual(['weights.restored']);
  });

  it('writes nothing when they are already in force, or when the forward run recorded none', async () => {
    const api = createFakeApi({ weights: { default: 100, cluster: 0 } });
    expect(await restoreForwardWeights(depsWith(api), { default: 100 }, GUARD)).toMatchObject({ written: false });
    const none = await restoreForwardWeights(depsWith(api), null, GUARD);
    expect(none).toMatchObject({ written: false });
    expect(none.warnings[0]).toContain('recorded no weights');
    expect(api.state.mutating).toBe(0);
  });
});

describe('revert weights over a later change', () => {
  it('reads the weights again before its PUT and refuses a change made since the forward run, unless told to overwrite it', async () => {
    // The forward run left cluster 100; another run set nfs-2 100 after the revert's preview.
    const later = { default: 0, cluster: 0, 'nfs-2': 100 };
    const api = createFakeApi({ weights: { ...later } });
    const guard = { left: [{ default: 0, cluster: 100 }], overwrite: false, command: 'shardmove revert plan.yaml' };
    await expect(restoreForwardWeights(depsWith(api), { default: 100 }, guard)).rejects.toMatchObject({
      code: 'SHARDMOVE_WEIGHTS_CHANGED',
      message: expect.stringContaining('shardmove revert plan.yaml --overwrite-weights'),
    });
    expect(api.state.weights).toEqual(later);
    expect(api.state.mutating).toBe(0);
    const out = await restoreForwardWeights(depsWith(api), { default: 100 }, { ...guard, overwrite: true });
    expect(out).toMatchObject({ written: true });
    expect(api.state.weights).toEqual({ default: 100, cluster: 0, 'nfs-2': 0 });
  });
});

describe('revert verification', () => {
  it('passes when every item the revert moved is back on its own storage, and names each that is not', async () => {
    const api = createFakeApi();
    const where: Record<number, string | null> = { 1: 'nfs-1', 2: 'nfs-2', 3: 'cluster', 4: 'nfs-2' };
    api.getItem = async (_kind, id): Promise<ItemRecord | null> =>
      where[id] === undefined
        ? null
        : { kind: 'projects', id, storage: where[id] ?? null, name: `p${id}`, sizeBytes: null };
    const deps = depsWith(api);
    const s = deps.store;
    const it = (id: number, to: string) => ({
      kind: 'projects' as const,
      id,
      name: `p${id}`,
      sizeBytes: null,
      from: 'cluster',
      to,
      forwardMoveId: id,
      forwardState: 'moved' as const,
    });
    seedRevert(
      s,
      { items: [it(1, 'nfs-1'), it(2, 'nfs-2'), it(3, 'nfs-1'), it(4, 'nfs-1'), it(5, 'nfs-1')], skipped: [] },
      { kinds: ['projects'], sources: ['cluster'] },
      { forward: 'f.db', readAt: 0, now: 0 },
    );
    // Item 5 is hidden (GET answers 404): its move list says its last move took it to nfs-1.
    api.listItemMoves = async (kind, id) =>
      id === 5
        ? [
            {
              id: 55,
              kind,
              itemId: 5,
              state: 'finished',
              sourceStorage: 'cluster',
              destinationStorage: 'nfs-1',
              errorMessage: null,
              createdAt: '',
            },
          ]
        : [];
    for (const id of [1, 2, 5]) {
      s.markIntent('projects', id, 0);
      s.markMoved('projects', id, 50 + id, 'finished', 1, null);
    }
    expect(await verifyReverted(deps)).toMatchObject({ ok: true, problems: [] });

    // Item 3's move finished but it is still on cluster; item 4 went to the wrong storage.
    for (const id of [3, 4]) {
      s.markIntent('projects', id, 0);
      s.markMoved('projects', id, 50 + id, 'finished', 1, null);
    }
    const bad = await verifyReverted(deps);
    expect(bad.ok).toBe(false);
    expect(bad.problems).toEqual([
      'projects 3 (p3): on cluster, not back on nfs-1',
      'projects 4 (p4): on nfs-2, not back on nfs-1',
    ]);
  });
});
