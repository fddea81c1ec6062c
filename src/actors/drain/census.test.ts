import { describe, expect, it } from 'vitest';
import { createHarness, range } from '../../../test/support/drain-harness.js';
import { runDrain } from './run.js';

/** The flags the checkpoint now holds per project id (only ids with a flag or an unknown). */
function flagsOf(h: ReturnType<typeof createHarness>) {
  const out: Record<number, string> = {};
  for (const it of h.store.shape.items()) {
    if (it.kind !== 'projects') continue;
    const f = [
      it.hidden === null ? 'hidden?' : it.hidden ? 'hidden' : '',
      it.pendingDelete === null ? 'pending?' : it.pendingDelete ? 'pending' : '',
    ]
      .filter(Boolean)
      .join('+');
    if (f) out[it.id] = f;
  }
  return out;
}

describe("the dry run's census of hidden and pending-delete projects", () => {
  it('tells hidden from pending-delete projects by listing the source once without each flag', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 250));
    h.fake.addItems('projects', 'nfs-2', [251, 252]);
    for (const id of [3, 101, 250]) h.fake.hide(id, 'hidden');
    for (const id of [7, 200]) h.fake.hide(id, 'pending_delete');
    h.fake.hide(252, 'hidden');
    const r = await runDrain({ ...h.deps, dryRun: true }, { source: 'nfs-1', kind: 'projects' });
    expect(r.remaining).toBe(250);
    expect(h.fake.stats().mutating).toBe(0);
    // nfs-2 had no census: its flags are unknown, not "none".
    expect(flagsOf(h)).toEqual({ 3: 'hidden', 101: 'hidden', 250: 'hidden', 7: 'pending', 200: 'pending' });
    expect(h.store.shape.censusOf('projects', 'nfs-1', 'hidden')).toMatchObject({ round: 1, flagged: 3 });
    expect(h.store.shape.censusOf('projects', 'nfs-1', 'pending_delete')).toMatchObject({ round: 1, flagged: 2 });
  });

  it('knows on a Community Edition instance that nothing is hidden without listing for it', async () => {
    const h = createHarness(undefined, { enterprise: false });
    h.fake.addItems('projects', 'nfs-1', range(1, 20));
    h.fake.hide(5, 'pending_delete');
    await runDrain({ ...h.deps, dryRun: true }, { source: 'nfs-1', kind: 'projects' });
    expect(flagsOf(h)).toEqual({ 5: 'pending' });
    // The enumeration and one listing without include_pending_delete.
    expect(h.fake.listings.filter((l) => l.startsWith('id_after=0'))).toHaveLength(2);
  });

  it('leaves a flag unknown when part of its listing cannot be read, rather than taking the unread items as flagged', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 30));
    h.fake.hide(4, 'pending_delete');
    // Project 12 breaks the listings from the census on (the enumeration read it).
    h.fake.onRequest = (name) => {
      if (name === 'version') h.fake.unrenderable.add('projects:12');
    };
    await runDrain({ ...h.deps, dryRun: true }, { source: 'nfs-1', kind: 'projects' });
    const flags = flagsOf(h);
    expect(Object.keys(flags)).toHaveLength(30);
    expect(new Set(Object.values(flags))).toEqual(new Set(['hidden?+pending?']));
    expect(h.store.shape.censusOf('projects', 'nfs-1', 'hidden')).toMatchObject({ doneAt: null, flagged: 0 });
  });

  it('is taken again by the next dry run, for the new enumeration round', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 10));
    h.fake.hide(2, 'hidden');
    await runDrain({ ...h.deps, dryRun: true }, { source: 'nfs-1', kind: 'projects' });
    expect(flagsOf(h)).toEqual({ 2: 'hidden' });
    const item = h.fake.items.get('projects:2')!;
    item.hidden = false;
    h.fake.hide(9, 'hidden');
    await runDrain({ ...h.deps, dryRun: true }, { source: 'nfs-1', kind: 'projects' });
    expect(flagsOf(h)).toEqual({ 9: 'hidden' });
    expect(h.store.shape.censusOf('projects', 'nfs-1', 'hidden')).toMatchObject({ round: 2, flagged: 1 });
  });
});
