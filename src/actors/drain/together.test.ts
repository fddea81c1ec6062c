/**
 * The one schedule (`move.order: together`) on the fake clock: every kind on every source in one
 * largest-first order, each pair verified on its own, a partial drain's budget shared by a source's
 * kinds, a kill and a resume, a dry run's placement in the run's order, and a kind moved by move
 * records on its own path after the schedule. Judged from the fake instance's records.
 */
import { describe, expect, it } from 'vitest';
import type { DrainPair } from '../../machine/types.js';
import { KINDS } from '../../plan/types.js';
import type { Kind } from '../../plan/types.js';
import type { Harness } from '../../../test/support/drain-harness.js';
import { createHarness, range, resumed, testPlan, withDelays } from '../../../test/support/drain-harness.js';
import { runDrain } from './run.js';

const MB = 1_000_000;

const pairsOf = (sources: string[], kinds: readonly Kind[] = KINDS, access: DrainPair['access'] = 'listing') =>
  sources.flatMap((source) => kinds.map((kind): DrainPair => ({ source, kind, access })));

/** The drain step as the machine invokes it for the one schedule. */
const together = (h: Harness, pairs: DrainPair[]) => runDrain(h.deps, { ...pairs[0]!, pairs });

/** `kind:id` of every move, in the order the instance received them. */
const posted = (h: Harness) => h.fake.moves.map((m) => `${m.kind}:${m.itemId}`);

describe('one schedule across kinds and sources', () => {
  it('moves every item of every kind on every source, and returns each pair as its own drain would', async () => {
    const h = createHarness(testPlan({ move: { from: ['nfs-1', 'nfs-2'] } }));
    h.fake.addItems('projects', 'nfs-1', range(1, 120));
    h.fake.addItems('snippets', 'nfs-1', range(1, 30));
    h.fake.addItems('groups', 'nfs-2', range(1, 12));
    h.fake.addItems('projects', 'nfs-2', range(200, 230));
    h.fake.addItems('projects', 'other', range(500, 510));
    const r = await together(h, pairsOf(['nfs-1', 'nfs-2']));
    expect(r).toMatchObject({ moved: 193, quarantined: 0, remaining: 0 });
    expect(r.perPair).toEqual([
      { source: 'nfs-1', kind: 'projects', moved: 120, quarantined: 0, remaining: 0 },
      { source: 'nfs-1', kind: 'snippets', moved: 30, quarantined: 0, remaining: 0 },
      { source: 'nfs-1', kind: 'groups', moved: 0, quarantined: 0, remaining: 0 },
      { source: 'nfs-2', kind: 'projects', moved: 31, quarantined: 0, remaining: 0 },
      { source: 'nfs-2', kind: 'snippets', moved: 0, quarantined: 0, remaining: 0 },
      { source: 'nfs-2', kind: 'groups', moved: 12, quarantined: 0, remaining: 0 },
    ]);
    for (const it of h.fake.items.values()) expect(it.storage).toBe(it.id >= 500 ? 'other' : 'cluster');
    expect(h.fake.violations).toEqual([]);
    expect(h.fake.peakInFlight).toBeLessThanOrEqual(10);
    // Each pair's source was listed again after its last move, independently of the others.
    const finished = h.store.readEvents(0, 100_000).filter((e) => e.type === 'drain.finished');
    expect(finished).toHaveLength(6);
  });

  it('takes the items of every kind and source in one largest-first order, sizeless kinds by their allowance', async () => {
    const h = createHarness(testPlan({ move: { from: ['nfs-1', 'nfs-2'], concurrency: 1 } }), { startDelayMs: 0 });
    h.fake.addItems('projects', 'nfs-1', [1, 2]);
    h.fake.setSize('projects', 1, 200 * MB);
    h.fake.setSize('projects', 2, 1 * MB);
    h.fake.addItems('groups', 'nfs-1', [7]);
    h.fake.addItems('projects', 'nfs-2', [3]);
    h.fake.setSize('projects', 3, 50 * MB);
    h.fake.addItems('snippets', 'nfs-2', [9]);
    await together(h, pairsOf(['nfs-1', 'nfs-2']));
    // 200 MB (class 27), a group wiki's 100 MiB allowance (26), 50 MB (25), a snippet's 10 MiB (23), 1 MB (19);
    // a drain per kind and source would have taken projects:2 second and the group wiki third.
    expect(posted(h)).toEqual(['projects:1', 'groups:7', 'projects:3', 'snippets:9', 'projects:2']);
  });

  it('ends with one tail: small items of the first kind wait behind larger ones of the last', async () => {
    const inventory = (h: Harness) => {
      h.fake.addItems('projects', 'nfs-1', range(1, 8));
      // Four large projects (40 to 70 s) and four small ones (1 to 4 MB, 5 s each).
      for (const id of range(1, 4)) h.fake.setSize('projects', id, id * MB, 5_000);
      for (const id of range(5, 8)) h.fake.setSize('projects', id, id * 100 * MB, id * 10_000);
      // Eight snippets of 10 s (their 10 MiB allowance ranks them above the small projects).
      h.fake.addItems('snippets', 'nfs-1', range(1, 8));
    };
    const plan = testPlan({ move: { concurrency: 4, kinds: ['projects', 'snippets'] } });
    const h = createHarness(plan, { startDelayMs: 0, durationMs: 10_000 });
    inventory(h);
    const t0 = h.clock.now();
    await together(h, pairsOf(['nfs-1'], ['projects', 'snippets']));
    const span = h.clock.now() - t0;
    const firstSnippet = h.fake.moves.find((m) => m.kind === 'snippets')!.createdMs;
    const smallProjects = h.fake.moves.filter((m) => m.kind === 'projects' && m.itemId <= 4).map((m) => m.createdMs);
    expect(firstSnippet).toBeLessThan(Math.min(...smallProjects));
    // The same inventory drained kind by kind (the next kind's items filling the first one's tail).
    const k = createHarness(plan, { startDelayMs: 0, durationMs: 10_000 });
    inventory(k);
    const k0 = k.clock.now();
    const next = { source: 'nfs-1', kind: 'snippets' as const, access: 'listing' as const };
    await runDrain(k.deps, { source: 'nfs-1', kind: 'projects', access: 'listing', ahead: next });
    await runDrain(k.deps, { ...next, ahead: null });
    expect(span).toBeLessThanOrEqual(k.clock.now() - k0);
    expect(h.fake.violations).toEqual([]);
  });

  it('verifies each pair on its own: a move that finished but left the item listed is moved again', async () => {
    const h = createHarness(testPlan({ move: { from: ['nfs-1', 'nfs-2'], kinds: ['projects', 'groups'] } }));
    h.fake.addItems('projects', 'nfs-1', range(1, 20));
    h.fake.addItems('groups', 'nfs-2', range(1, 5));
    h.fake.script('projects', 4, 'finished-not-moved', 'ok');
    const r = await together(h, pairsOf(['nfs-1', 'nfs-2'], ['projects', 'groups']));
    expect(r).toMatchObject({ moved: 25, remaining: 0 });
    expect(h.fake.movesOf('projects', 4).map((m) => m.state)).toEqual(['finished', 'finished']);
    expect(h.fake.item('projects', 4)!.storage).toBe('cluster');
    const rounds = (kind: Kind, source: string) =>
      h.store
        .readEvents(0, 100_000)
        .filter((e) => e.type === 'enumerate.finished' && e.data.kind === kind && e.data.source === source).length;
    // Listed, re-listed (item 4 still there), moved again and re-listed: three rounds; the group wikis two.
    expect(rounds('projects', 'nfs-1')).toBe(3);
    expect(rounds('groups', 'nfs-2')).toBe(2);
    expect(h.fake.violations).toEqual([]);
  });

  it("spends a partial drain's budget per source on the largest items of all its kinds", async () => {
    const plan = testPlan({ move: { from: ['nfs-1'], until: { movedBytes: 350 * MB } } });
    const h = createHarness(plan, { startDelayMs: 0 });
    h.fake.addItems('projects', 'nfs-1', [1, 2]);
    h.fake.setSize('projects', 1, 300 * MB);
    h.fake.setSize('projects', 2, 10 * MB);
    h.fake.addItems('groups', 'nfs-1', [5]);
    h.fake.addItems('snippets', 'nfs-1', [6]);
    const r = await together(h, pairsOf(['nfs-1']));
    // 300 MB, then the group wiki's 100 MiB allowance crosses the bound: the last one. The 10 MB
    // project a drain per kind would have taken second stays, and so does the snippet.
    expect(posted(h).sort()).toEqual(['groups:5', 'projects:1']);
    expect(r).toMatchObject({ moved: 2, remaining: 0, kept: 2 });
    expect(h.store.getBound('nfs-1')).not.toBeNull();
    expect(h.fake.item('projects', 2)!.storage).toBe('nfs-1');
  });

  it('resumes after a kill without scheduling any item twice', async () => {
    const h = createHarness(testPlan({ move: { from: ['nfs-1', 'nfs-2'], concurrency: 5 } }), { durationMs: 20_000 });
    h.fake.addItems('projects', 'nfs-1', range(1, 30));
    h.fake.addItems('snippets', 'nfs-2', range(1, 20));
    h.fake.addItems('groups', 'nfs-1', range(1, 6));
    let posts = 0;
    h.fake.onRequest = (name) => {
      if (name === 'scheduleMove' && ++posts === 12) h.abort.abort(new Error('SIGKILL'));
    };
    const pairs = pairsOf(['nfs-1', 'nfs-2']);
    await expect(together(h, pairs)).rejects.toMatchObject({ code: 'SHARDMOVE_ABORTED' });
    h.fake.onRequest = null;
    const r = await together(resumed(h), pairs);
    expect(r).toMatchObject({ moved: 56, remaining: 0 });
    for (const [k, n] of h.fake.postsPerItem) expect(n, k).toBe(1);
    expect(h.fake.violations).toEqual([]);
  });

  it("places a dry run's items in the order the run takes them", async () => {
    const plan = testPlan({
      move: { from: ['nfs-1'], to: ['cluster', 'gitaly-2'], until: { movedBytes: 350 * MB } },
    });
    const dry = createHarness(plan);
    const real = createHarness(plan, { startDelayMs: 0 });
    for (const h of [dry, real]) {
      h.fake.addItems('projects', 'nfs-1', [1, 2]);
      h.fake.setSize('projects', 1, 300 * MB);
      h.fake.setSize('projects', 2, 10 * MB);
      h.fake.addItems('groups', 'nfs-1', [5]);
      h.fake.addItems('snippets', 'nfs-1', [6]);
    }
    const pairs = pairsOf(['nfs-1']);
    const planned = await runDrain({ ...dry.deps, dryRun: true }, { ...pairs[0]!, pairs });
    const moved = await together(real, pairs);
    expect(planned.perPair?.map((p) => [p.kind, p.remaining, p.kept ?? 0])).toEqual(
      moved.perPair?.map((p) => [p.kind, p.moved, p.kept ?? 0]),
    );
    const placed = (h: Harness) =>
      KINDS.flatMap((kind) => h.store.itemsByIds(kind, [1, 2, 5, 6])).map((r) => `${r.kind}:${r.id}:${r.destination}`);
    expect(placed(dry)).toEqual(placed(real));
    expect(dry.fake.moves).toEqual([]);
  });

  it('moves a kind found by move records on its own path, after the one schedule', async () => {
    const h = createHarness(testPlan({ move: { kinds: ['projects', 'snippets'] } }), {
      unexposed: ['snippets'],
      enterprise: false,
    });
    h.fake.addItems('projects', 'nfs-1', range(1, 10));
    h.fake.addItems('snippets', 'nfs-1', range(1, 4));
    const pairs: DrainPair[] = [
      { source: 'nfs-1', kind: 'projects', access: 'listing' },
      { source: 'nfs-1', kind: 'snippets', access: 'records' },
    ];
    const r = await together(h, pairs);
    expect(r.perPair?.map((p) => [p.kind, p.moved, p.byRecords ?? false])).toEqual([
      ['projects', 10, false],
      ['snippets', 4, true],
    ]);
    // Two sweeps: the first moves the four, the second finds nothing left (./records.ts).
    expect(h.fake.bulkPosts).toBe(2);
    for (const it of h.fake.items.values()) expect(it.storage).toBe('cluster');
  });
  it("asks for every due kind's move list at once, so a poll is one round trip, not one per kind", async () => {
    const base = createHarness(testPlan({ move: { concurrency: 8 } }), { startDelayMs: 0 });
    for (const kind of ['projects', 'snippets'] as const) {
      base.fake.addItems(kind, 'nfs-1', range(1, 4));
      for (const id of range(1, 4)) base.fake.setSize(kind, id, MB, 10_000);
    }
    // Each move list takes 400 ms to answer; when each was asked for is noted as it is asked.
    const asked: { kind: string; at: number }[] = [];
    const h = withDelays(base, {
      listMoves: (kind) => {
        asked.push({ kind: kind as string, at: base.clock.now() });
        return 400;
      },
    });
    const r = await together(h, pairsOf(['nfs-1'], ['projects', 'snippets']));
    expect(r).toMatchObject({ moved: 8, quarantined: 0, remaining: 0 });
    const at = (kind: string) => new Set(asked.filter((a) => a.kind === kind).map((a) => a.at));
    const both = [...at('projects')].filter((t) => at('snippets').has(t));
    // Read one after another, the snippets' list was asked for 400 ms after the projects', every time.
    expect(both.length).toBeGreaterThan(0);
    expect(h.fake.violations).toEqual([]);
  });
});
