import { describe, expect, it } from 'vitest';
import { createHarness, range, testPlan } from '../../../test/support/drain-harness.js';
import { runDrain } from './run.js';

/** A revert's drain: rows 1-6 given on cluster, each pinned back to nfs-1 or nfs-2; 100-119 also on cluster, not given. */
function given() {
  const h = createHarness(testPlan({ move: { from: ['cluster'], to: ['nfs-1', 'nfs-2'], kinds: ['projects'] } }));
  h.fake.addItems('projects', 'cluster', [...range(1, 6), ...range(100, 119)]);
  const s = h.store;
  s.batch(() => {
    s.startRound('projects', 'cluster', 1);
    s.recordPage(
      'projects',
      'cluster',
      1,
      range(1, 6).map((id) => ({ kind: 'projects' as const, id, storage: 'cluster', name: `p${id}`, sizeBytes: id })),
      h.clock.now(),
    );
    for (const id of range(1, 6)) s.pinDestination('projects', id, id % 2 ? 'nfs-1' : 'nfs-2');
    s.finishRound('projects', 'cluster', 1);
  });
  return h;
}

describe('drain of given items (shardmove revert)', () => {
  it('moves only the given rows, each to its pinned storage, and never lists the source whole', async () => {
    const h = given();
    const r = await runDrain({ ...h.deps, itemsGiven: true }, { source: 'cluster', kind: 'projects' });
    expect(r).toEqual({ moved: 6, quarantined: 0, remaining: 0 });
    for (const id of range(1, 6)) expect(h.fake.item('projects', id)?.storage).toBe(id % 2 ? 'nfs-1' : 'nfs-2');
    for (const id of range(100, 119)) expect(h.fake.item('projects', id)?.storage, `project ${id}`).toBe('cluster');
    expect(h.fake.moves.map((m) => m.itemId).sort((a, b) => a - b)).toEqual(range(1, 6));
    expect(h.fake.violations).toEqual([]);
  });

  it('sends a row whose move finished but which is still on the source back to pending, and moves it again (GitLab 345591)', async () => {
    const h = given();
    h.fake.script('projects', 3, 'finished-not-moved', 'ok');
    const r = await runDrain({ ...h.deps, itemsGiven: true }, { source: 'cluster', kind: 'projects' });
    expect(r).toEqual({ moved: 6, quarantined: 0, remaining: 0 });
    expect(h.fake.movesOf('projects', 3).map((m) => m.state)).toEqual(['finished', 'finished']);
    expect(h.fake.item('projects', 3)?.storage).toBe('nfs-1');
    expect(h.store.readEvents(0, 10_000).some((e) => e.type === 'item.still_on_source')).toBe(true);
    expect(h.fake.moves.every((m) => m.itemId <= 6)).toBe(true);
  });

  it('leaves a row someone else started moving after it was read to that move: no POST of ours, skipped, never followed as ours', async () => {
    const h = given();
    const theirs = h.fake.startForeignMove('projects', 2, 'nfs-3');
    const r = await runDrain({ ...h.deps, itemsGiven: true }, { source: 'cluster', kind: 'projects' });
    expect(r).toMatchObject({ quarantined: 0, remaining: 0 });
    expect(h.fake.movesOf('projects', 2).map((m) => m.id)).toEqual([theirs.id]);
    expect(h.store.getItem('projects', 2)).toMatchObject({ state: 'left', moveId: null });
    expect(h.store.getItem('projects', 2)?.lastError).toContain(`being moved by someone else (move ${theirs.id}`);
    const skipped = h.store.readEvents(0, 10_000).filter((e) => e.type === 'revert.skipped');
    expect(skipped.map((e) => e.data)).toMatchObject([{ kind: 'projects', source: 'cluster', id: 2 }]);
  });

  it('refuses bulk mode and dry runs: either would take in everything on the source', async () => {
    const bulk = given();
    bulk.deps.plan = { ...bulk.deps.plan, move: { ...bulk.deps.plan.move, mode: 'bulk' } };
    await expect(runDrain({ ...bulk.deps, itemsGiven: true }, { source: 'cluster', kind: 'projects' })).rejects.toThrow(
      /throttled mode by a real run only/,
    );
    const dry = given();
    await expect(
      runDrain({ ...dry.deps, itemsGiven: true, dryRun: true }, { source: 'cluster', kind: 'projects' }),
    ).rejects.toThrow(/throttled mode by a real run only/);
    expect([...bulk.fake.moves, ...dry.fake.moves]).toEqual([]);
  });
});
