import { describe, expect, it } from 'vitest';
import { createHarness, range } from '../../../test/support/drain-harness.js';
import { runDrain } from './run.js';

/** The flags the checkpoint now holds per project id (only ids with a flag or an unknown). */
/** A dry run over projects 1 to 30 on nfs-1 (4 pending deletion), project `broken` unrenderable from the census on. */
async function censusBrokenBy(broken: number) {
  const h = createHarness();
  h.fake.addItems('projects', 'nfs-1', range(1, 30));
  h.fake.hide(4, 'pending_delete');
  h.fake.onRequest = (name) => {
    if (name === 'version') h.fake.unrenderable.add(`projects:${broken}`);
  };
  await runDrain({ ...h.deps, dryRun: true }, { source: 'nfs-1', kind: 'projects' });
  return h;
}

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
  it('tells hidden from pending-delete projects by what a listing without each flag leaves out', async () => {
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
    // The enumeration, then counts (with both flags and without include_pending_delete), and the
    // range they differ in listed without the flag.
    expect(h.fake.listings.filter((l) => l.startsWith('id_after=0'))).toHaveLength(2);
    expect(h.fake.listings.filter((l) => l.startsWith('count'))).toEqual([
      'count id_after=0 id_before= without=',
      'count id_after=0 id_before= without=pending_delete',
    ]);
  });

  it('leaves a flag unknown when part of its listing cannot be read, rather than taking the unread items as flagged', async () => {
    // Project 12 breaks the listings from the census on (the enumeration read it).
    const h = await censusBrokenBy(12);
    const flags = flagsOf(h);
    expect(Object.keys(flags)).toHaveLength(30);
    // The counts (a page of one project each, not project 12) say no project is hidden; finding the
    // pending-delete one takes a listing, which project 12 breaks: that flag stays unknown.
    expect(new Set(Object.values(flags))).toEqual(new Set(['pending?']));
    expect(h.store.shape.censusOf('projects', 'nfs-1', 'hidden')).toMatchObject({ flagged: 0 });
    expect(h.store.shape.censusOf('projects', 'nfs-1', 'hidden')?.doneAt).not.toBeNull();
    expect(h.store.shape.censusOf('projects', 'nfs-1', 'pending_delete')).toMatchObject({ doneAt: null, flagged: 0 });
  });

  it('leaves a flag unknown when a count cannot be read either', async () => {
    // Project 1 is the one project of every count's page, and of the listing's first page.
    const h = await censusBrokenBy(1);
    expect(new Set(Object.values(flagsOf(h)))).toEqual(new Set(['hidden?+pending?']));
  });

  it('counts ranges of the source instead of listing it twice more, and lists only where a flag is', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 40_000));
    h.fake.hide(12_345, 'hidden');
    h.fake.hide(31_000, 'pending_delete');
    h.fake.hide(31_001, 'pending_delete');
    await runDrain({ ...h.deps, dryRun: true }, { source: 'nfs-1', kind: 'projects' });
    expect(flagsOf(h)).toEqual({ 12345: 'hidden', 31000: 'pending', 31001: 'pending' });
    const enumeration = 401; // 400 pages of 100 and the empty one that ends the walk
    const census = h.fake.stats().requests - enumeration - 1; // and the version
    // Five ranges of 9,000 known ids, three counts each, then the two flagged ranges narrowed:
    // far from the 800 requests of two more listings.
    expect(census).toBeLessThan(100);
  });

  it('finds many flagged projects by listing their range rather than counting each one down', async () => {
    const h = createHarness();
    h.fake.addItems('projects', 'nfs-1', range(1, 2_000));
    for (let id = 5; id <= 2_000; id += 10) h.fake.hide(id, 'hidden');
    await runDrain({ ...h.deps, dryRun: true }, { source: 'nfs-1', kind: 'projects' });
    expect(Object.keys(flagsOf(h))).toHaveLength(200);
    expect(h.store.shape.censusOf('projects', 'nfs-1', 'hidden')).toMatchObject({ flagged: 200 });
    // One count of all, one without each flag, and one listing of the range without `hidden` (20 pages + 1).
    expect(h.fake.listings.filter((l) => l.startsWith('count'))).toHaveLength(3);
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
