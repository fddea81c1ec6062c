/**
 * Move records: a kind whose storage the instance does not expose (CE snippets) is
 * moved by bulk POSTs and followed through the move records they create; verification reads those
 * records. Every assertion is about what the fake instance holds, not what the drain says.
 */
import { describe, expect, it } from 'vitest';
import { createHarness, range, resumed, testPlan } from '../../../test/support/drain-harness.js';
import { runDrain } from './run.js';
import { runVerify } from '../verify.js';

const ce = { unexposed: ['snippets' as const], enterprise: false, groupMoves: false };

describe('drain by move records (storage not exposed)', () => {
  it('moves every snippet on the source with one bulk POST and leaves other storages alone', async () => {
    const h = createHarness(testPlan(), ce);
    h.fake.addItems('snippets', 'nfs-1', range(1, 30));
    h.fake.addItems('snippets', 'nfs-2', range(100, 110));
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets', access: 'records' });
    expect(r).toEqual({ moved: 30, quarantined: 0, remaining: 0, byRecords: true });
    for (const id of range(1, 30)) expect(h.fake.item('snippets', id)?.storage).toBe('cluster');
    for (const id of range(100, 110)) expect(h.fake.item('snippets', id)?.storage).toBe('nfs-2');
    // The first bulk POST moved everything; the second found nothing and confirmed it.
    expect(h.fake.bulkPosts).toBe(2);
    expect(h.fake.postsPerItem.size).toBe(0);
    expect(h.store.getBulk('snippets', 'nfs-1')?.confirmedAt).not.toBeNull();
    expect(h.fake.violations).toEqual([]);
    const v = await runVerify(h.deps, { kinds: ['snippets'], access: { snippets: 'records' } });
    expect(v.ok).toBe(true);
    expect(v.perKindAndSource).toEqual([
      expect.objectContaining({ kind: 'snippets', by: 'records', moved: 30, quarantined: 0 }),
    ]);
  });

  it('never uses the listing, which on CE would name snippets of every storage', async () => {
    const h = createHarness(testPlan(), ce);
    h.fake.addItems('snippets', 'nfs-2', range(100, 105));
    const seen: string[] = [];
    h.fake.onRequest = (name) => seen.push(name);
    await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets', access: 'records' });
    expect(seen).not.toContain('listItemsOnStorage');
    for (const id of range(100, 105)) expect(h.fake.movesOf('snippets', id)).toHaveLength(0);
  });

  it('retries a failed move by id, quarantines one that keeps failing, and still confirms the source', async () => {
    const h = createHarness(testPlan(), ce);
    h.fake.addItems('snippets', 'nfs-1', range(1, 10));
    h.fake.script('snippets', 3, 'fail', 'ok');
    h.fake.script('snippets', 4, 'fail', 'fail', 'fail', 'fail', 'fail', 'fail', 'fail', 'fail');
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets', access: 'records' });
    expect(r).toMatchObject({ moved: 9, quarantined: 1, remaining: 0 });
    expect(h.fake.item('snippets', 3)?.storage).toBe('cluster');
    expect(h.fake.item('snippets', 4)?.storage).toBe('nfs-1');
    expect(h.store.getItem('snippets', 4)?.state).toBe('quarantined');
    // The confirming sweep's job moved snippet 4 again (it is still on the source): not a new item.
    expect(h.store.getBulk('snippets', 'nfs-1')?.confirmedAt).not.toBeNull();
    const v = await runVerify(h.deps, { kinds: ['snippets'], access: { snippets: 'records' } });
    expect(v).toMatchObject({ ok: true });
  });

  it('a snippet created on the source during the run is found by the next sweep and moved', async () => {
    const h = createHarness(testPlan(), ce);
    h.fake.addItems('snippets', 'nfs-1', range(1, 5));
    // Right after the first bulk POST has created its moves (the next request is the first poll of
    // its move list): a developer creates a snippet on the source. Only a later sweep can see it.
    let posted = false;
    let added = false;
    h.fake.onRequest = (name) => {
      if (name === 'scheduleBulk') posted = true;
      else if (posted && !added) {
        added = true;
        h.fake.addItems('snippets', 'nfs-1', [6]);
      }
    };
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets', access: 'records' });
    expect(h.fake.item('snippets', 6)?.storage).toBe('cluster');
    expect(r).toMatchObject({ moved: 6, remaining: 0 });
    expect(h.fake.bulkPosts).toBe(3);
  });

  it('resumes after an interrupt without confirming from the interrupted sweep', async () => {
    const h = createHarness(testPlan(), ce);
    h.fake.addItems('snippets', 'nfs-1', range(1, 20));
    let polls = 0;
    h.fake.onRequest = (name) => {
      if (name === 'listMoves' && ++polls === 3) h.abort.abort();
    };
    await expect(runDrain(h.deps, { source: 'nfs-1', kind: 'snippets', access: 'records' })).rejects.toThrow();
    expect(h.store.getBulk('snippets', 'nfs-1')?.confirmedAt ?? null).toBeNull();
    h.fake.onRequest = null;
    const again = resumed(h);
    const r = await runDrain(again.deps, { source: 'nfs-1', kind: 'snippets', access: 'records' });
    expect(r).toMatchObject({ moved: 20, remaining: 0 });
    for (const id of range(1, 20))
      expect(h.fake.movesOf('snippets', id).filter((m) => m.state === 'finished')).toHaveLength(1);
    expect(h.fake.violations).toEqual([]);
    expect(h.store.getBulk('snippets', 'nfs-1')?.confirmedAt).not.toBeNull();
    // The resumed invocation follows the interrupted job instead of posting again, and does not
    // count that half-seen sweep as confirmation: one more bulk POST confirms.
    expect(h.fake.bulkPosts).toBe(2);
  });

  it('verification fails while no sweep has confirmed the source', async () => {
    const h = createHarness(testPlan(), ce);
    const v = await runVerify(h.deps, { kinds: ['snippets'], access: { snippets: 'records' } });
    expect(v.ok).toBe(false);
    expect(v.problems.join('\n')).toMatch(/snippets on nfs-1: not verified.*does not expose their storage/);
  });

  it('a dry run posts nothing and says the number is unknown', async () => {
    const h = createHarness(testPlan(), ce);
    h.fake.addItems('snippets', 'nfs-1', range(1, 5));
    const r = await runDrain({ ...h.deps, dryRun: true }, { source: 'nfs-1', kind: 'snippets', access: 'records' });
    expect(r).toEqual({ moved: 0, quarantined: 0, remaining: 0, byRecords: true });
    expect(h.fake.bulkPosts).toBe(0);
    expect(h.fake.moves).toHaveLength(0);
  });
});

describe('a bulk job that waits in Sidekiq queue (records)', () => {
  /** 75 s in the queue: longer than the minute the drain once waited for a first move. */
  const LATE = 75_000;

  it('waits while the queue shows the job, then confirms, and no job is left to move anything later', async () => {
    const h = createHarness(testPlan(), { ...ce, bulkDelayMs: LATE });
    h.fake.addItems('snippets', 'nfs-1', range(1, 5));
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets', access: 'records' });
    expect(r).toEqual({ moved: 5, quarantined: 0, remaining: 0, byRecords: true });
    for (const id of range(1, 5)) expect(h.fake.item('snippets', id)?.storage).toBe('cluster');
    expect(h.store.getBulk('snippets', 'nfs-1')?.confirmedAt).not.toBeNull();
    // Every job the drain posted has run: none waits to move a repository after the run.
    expect(h.fake.bulkQueue).toEqual([]);
    const before = h.fake.moves.length;
    await h.clock.sleep(10 * LATE);
    h.fake.advance();
    expect(h.fake.moves.length).toBe(before);
    const v = await runVerify(h.deps, { kinds: ['snippets'], access: { snippets: 'records' } });
    expect(v.ok).toBe(true);
  });

  it('never confirms an empty-looking sweep whose job was not seen to run, and says how to check', async () => {
    // The queue cannot be read, and the first job comes only after the minute's grace.
    const h = createHarness(testPlan(), { ...ce, bulkDelayMs: 10 * 60_000, queueMetrics: 'forbidden' });
    h.fake.addItems('snippets', 'nfs-1', range(1, 5));
    await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets', access: 'records' });
    expect(h.store.getBulk('snippets', 'nfs-1')?.confirmedAt ?? null).toBeNull();
    const v = await runVerify(h.deps, { kinds: ['snippets'], access: { snippets: 'records' } });
    expect(v.ok).toBe(false);
    expect(v.problems.join('\n')).toContain("SnippetRepository.for_repository_storage('nfs-1').count");
    expect(v.problems.join('\n')).toContain("Sidekiq's queue");
  });

  it('confirms on a job seen to leave the queue, when it found nothing', async () => {
    const h = createHarness(testPlan(), { ...ce, bulkDelayMs: LATE });
    h.fake.addItems('snippets', 'nfs-2', range(100, 102));
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'snippets', access: 'records' });
    expect(r).toEqual({ moved: 0, quarantined: 0, remaining: 0, byRecords: true });
    expect(h.fake.bulkPosts).toBe(1);
    expect(h.fake.bulkQueue).toEqual([]);
    expect(h.store.getBulk('snippets', 'nfs-1')?.confirmedAt).not.toBeNull();
  });
});
