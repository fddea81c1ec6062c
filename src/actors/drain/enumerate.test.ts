/**
 * Enumeration: listings in GitLab's order (snippets newest first, offset only), that
 * shift while they are read, that hide projects, or that break on one item. Nothing may be skipped,
 * doubled, or called gone because a listing did not show it.
 */
import { describe, expect, it } from 'vitest';
import { CodedError } from '../../../test/support/coded-error.js';
import { createHarness, range, resumed, testPlan } from '../../../test/support/drain-harness.js';
import { createDrainCtx } from './context.js';
import { runDrain } from './run.js';
import { enumerateRound } from './enumerate.js';
import { runVerify } from '../verify.js';

const onlyPlan = (kinds: ('projects' | 'snippets' | 'groups')[]) => testPlan({ move: { kinds } });

describe('enumeration without order or absence assumptions', () => {
  it('a snippet listing served newest first, resumed after a kill mid-round, loses nothing', async () => {
    const h = createHarness(onlyPlan(['snippets']), { perPage: 20, durationMs: 60_000 });
    h.fake.addItems('snippets', 'nfs-1', range(1, 90));
    let pages = 0;
    h.fake.onRequest = (name) => {
      if (name === 'listItemsOnStorage' && ++pages === 3) throw new CodedError('TEST_CRASH', 'killed');
    };
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'snippets' })).rejects.toThrow('killed');
    // The first two pages held the newest snippets (90..51): an id cursor would skip everything below.
    expect(h.store.getItem('snippets', 51)).not.toBeNull();
    expect(h.store.getItem('snippets', 50)).toBeNull();
    h.fake.onRequest = null;
    const r = await runDrain(resumed(h).deps, { source: 'nfs-1', kind: 'snippets' });
    expect(r).toEqual({ moved: 90, quarantined: 0, remaining: 0 });
    for (const id of range(1, 90)) {
      expect(h.fake.item('snippets', id)?.storage).toBe('cluster');
      expect(h.fake.movesOf('snippets', id)).toHaveLength(1);
    }
    expect(h.store.countStates('snippets', 'nfs-1').left).toBe(0);
    expect(h.fake.violations).toEqual([]);
  });

  it('a listing that shifts while paged (new snippets at the front, moved ones vanish) neither skips nor doubles', async () => {
    const h = createHarness(onlyPlan(['snippets']), { perPage: 10, startDelayMs: 0, durationMs: 0 });
    h.fake.addItems('snippets', 'nfs-1', range(1, 60));
    let pages = 0;
    h.fake.onRequest = (name) => {
      if (name !== 'listItemsOnStorage') return;
      pages++;
      // Before page 3: two new snippets appear at the front, and the ten of page 3 finish moving
      // (someone else's moves) before it is read: every later offset page shifts by eight.
      if (pages === 3) {
        h.fake.addItems('snippets', 'nfs-1', [61, 62]);
        for (const id of range(31, 40)) h.fake.startForeignMove('snippets', id, 'cluster');
        h.fake.inFlightCount();
      }
    };
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets' });
    expect(r.remaining).toBe(0);
    for (const id of range(1, 62)) {
      expect(h.fake.item('snippets', id)?.storage).toBe('cluster');
      expect(h.fake.movesOf('snippets', id)).toHaveLength(1);
    }
    expect(h.fake.violations).toEqual([]);
  });

  it('an item absent from a round but still on the source stays pending (confirmed per item), one that went elsewhere leaves', async () => {
    const h = createHarness(onlyPlan(['projects']), { listsHidden: false });
    h.fake.addItems('projects', 'nfs-1', range(1, 5));
    const ctx = createDrainCtx(h.deps, 'nfs-1', 'projects');
    await enumerateRound(ctx);
    // Project 2 becomes hidden (GET /projects/2 answers 404, the listing leaves it out); project 3
    // is moved by someone else; project 4 is deleted.
    h.fake.hide(2);
    h.fake.startForeignMove('projects', 3, 'other');
    h.clock.t += 10_000;
    h.fake.inFlightCount();
    h.fake.items.delete('projects:4');
    const res = await enumerateRound(ctx, 2);
    expect(res?.left).toBe(2);
    expect(h.store.getItem('projects', 2)).toMatchObject({ state: 'pending', seenRound: 2 });
    expect(h.store.getItem('projects', 3)).toMatchObject({ state: 'left', lastError: 'now on other' });
    expect(h.store.getItem('projects', 4)).toMatchObject({ state: 'left', lastError: 'deleted from the instance' });
    // The hidden project is still moved (the move API finds it), exactly once.
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(h.fake.item('projects', 2)?.storage).toBe('cluster');
    expect(h.fake.movesOf('projects', 2)).toHaveLength(1);
  });

  it('hidden and pending-delete projects are enumerated and moved; verify counts one the listing cannot show', async () => {
    const h = createHarness(onlyPlan(['projects']));
    h.fake.addItems('projects', 'nfs-1', range(1, 6));
    h.fake.hide(3);
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 6, quarantined: 0, remaining: 0 });
    expect(h.fake.item('projects', 3)?.storage).toBe('cluster');
    expect((await runVerify(h.deps)).ok).toBe(true);

    // An instance that does not list hidden projects: the drain knows project 9 is on the source.
    const g = createHarness(onlyPlan(['projects']), { listsHidden: false });
    g.fake.addItems('projects', 'nfs-1', [9]);
    await enumerateRound(createDrainCtx(g.deps, 'nfs-1', 'projects'));
    g.fake.hide(9);
    const v = await runVerify(g.deps);
    expect(v.ok).toBe(false);
    expect(v.problems).toEqual([
      'projects 9 (projects/9) is still on nfs-1 (pending) but the listing does not show it (hidden, pending deletion or unlistable)',
    ]);
  });
});

describe('a kind whose storage the instance does not expose (CE snippets)', () => {
  it('stops before any move: a listing without repository_storage is not taken as "on the source"', async () => {
    const h = createHarness(onlyPlan(['snippets']), { unexposed: ['snippets'] });
    h.fake.addItems('snippets', 'other', [1, 2]);
    h.fake.addItems('snippets', 'nfs-1', [3]);
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'snippets' })).rejects.toMatchObject({
      code: 'SHARDMOVE_STORAGE_NOT_EXPOSED',
    });
    expect(h.fake.moves).toEqual([]);
  });
});

describe('a listing page that keeps answering 500', () => {
  it('narrows a project page to the item that breaks it, moves that item by id and the rest', async () => {
    const h = createHarness(onlyPlan(['projects']), { perPage: 10 });
    h.fake.addItems('projects', 'nfs-1', range(1, 30));
    h.fake.unrenderable.add('projects:14');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 30, quarantined: 0, remaining: 0 });
    for (const id of range(1, 30)) expect(h.fake.item('projects', id)?.storage).toBe('cluster');
    expect(h.store.unlistable('projects', 'nfs-1', 1)).toEqual([
      { kind: 'projects', id: 14, afterId: 13, beforeId: 15, reason: 'this item breaks the listing (HTTP 500)' },
    ]);
    expect(h.fake.violations).toEqual([]);
  });

  it('skips and reports an unlistable snippet, moves the rest, and verification does not call the storage empty', async () => {
    const h = createHarness(onlyPlan(['snippets']), { perPage: 10 });
    h.fake.addItems('snippets', 'nfs-1', range(1, 30));
    h.fake.unrenderable.add('snippets:17');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets' });
    for (const id of range(1, 30)) if (id !== 17) expect(h.fake.item('snippets', id)?.storage).toBe('cluster');
    expect(r.moved).toBe(29);
    // Its id is unknown to an offset listing: never counted as moved.
    expect(h.store.getItem('snippets', 17)).toBeNull();
    expect(h.store.unlistable('snippets', 'nfs-1', 1)[0]).toMatchObject({ id: null, afterId: 18, beforeId: 16 });
    const v = await runVerify(h.deps);
    expect(v.ok).toBe(false);
    expect(v.problems.join('\n')).toMatch(
      /snippets on nfs-1 could not be fully listed: .*the storage is not proven empty/,
    );
  });
});
