/**
 * The drain's behaviour trace: fourteen scenarios run on the fake clock, each recorded as the
 * ordered POSTs the instance received (when, relative to the start, what, where to), every item's
 * final state in the checkpoint and the drain's events, against a file under
 * test/fixtures/drain-trace/. The trace holds the drain to what it did when the file was written: a
 * change that moves a POST, reorders two, or ends an item elsewhere shows here first, and its
 * commit says why it is right.
 */
import { describe, expect, it } from 'vitest';
import { ApiHttpError, ApiRateLimitedError } from '../../api/errors.js';
import type { DrainInput, DrainPair } from '../../machine/types.js';
import type { Kind, Plan } from '../../plan/types.js';
import { createHarness, range, resumed, testPlan } from '../../../test/support/drain-harness.js';
import type { Harness } from '../../../test/support/drain-harness.js';
import type { FakeOptions } from '../../../test/support/fake-instance.js';
import { runDrain } from './run.js';

const MB = 1_000_000;
const KINDS3: Kind[] = ['projects', 'snippets', 'groups'];

/** A harness whose every POST (per item or bulk) is written down as it reaches the instance. */
function traced(plan: Plan, opts: Partial<FakeOptions> = {}) {
  const h = createHarness(plan, opts);
  const t0 = h.clock.now();
  const lines: string[] = [];
  const move = h.fake.scheduleMove.bind(h.fake);
  h.fake.scheduleMove = (kind, id, destination) => {
    lines.push(`+${h.clock.now() - t0} POST ${kind}:${id} -> ${destination}`);
    return move(kind, id, destination);
  };
  const bulk = h.fake.scheduleBulk.bind(h.fake);
  h.fake.scheduleBulk = (kind, source, destination) => {
    lines.push(`+${h.clock.now() - t0} BULK ${kind} ${source} -> ${destination}`);
    return bulk(kind, source, destination);
  };
  return { h, t0, lines };
}

/** The trace: the POSTs in order, then each item's final row, then what the drain returned. */
function trace(t: ReturnType<typeof traced>, results: unknown[]): string {
  const { h, t0, lines } = t;
  const items = [...h.fake.items.values()]
    .sort((a, b) => (a.kind === b.kind ? a.id - b.id : a.kind < b.kind ? -1 : 1))
    .map((it) => {
      const row = h.store.getItem(it.kind, it.id);
      const state = row
        ? `${row.state} attempts=${row.attempts} dest=${row.destination ?? '-'}${row.movedAt === null ? '' : ` at=+${row.movedAt - t0}`}`
        : 'not in checkpoint';
      return `${it.kind}:${it.id} on ${it.storage}: ${state}`;
    });
  return [
    ...lines,
    '--- items',
    ...items,
    '--- drain events',
    ...h.store
      .readEvents(0, 1_000_000)
      .filter((e) => e.type.startsWith('drain.') || e.type === 'enumerate.finished')
      .map((e) => `${e.type} ${JSON.stringify(e.data)}`),
    '--- results',
    ...results.map((r) => JSON.stringify(r)),
    `--- ended at +${h.clock.now() - t0}`,
    '',
  ].join('\n');
}

const file = (name: string) => `../../../test/fixtures/drain-trace/${name}.txt`;

const pairsOf = (sources: string[], kinds: readonly Kind[], access: DrainPair['access'] = 'listing') =>
  sources.flatMap((source) => kinds.map((kind): DrainPair => ({ source, kind, access })));

/** The pairs drained one after the other as the machine invokes them by kind: each with the next as `ahead`. */
async function byKind(h: Harness, pairs: DrainPair[], extra: Partial<Harness['deps']> = {}): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const [i, p] of pairs.entries()) {
    const input: DrainInput = { ...p, ahead: pairs[i + 1] ?? null };
    out.push(await runDrain({ ...h.deps, ...extra }, input));
  }
  return out;
}

const together = async (h: Harness, pairs: DrainPair[]) => [await runDrain(h.deps, { ...pairs[0]!, pairs })];

/** The same scenario by kind and together, one trace after the other. */
async function inBothOrders(
  move: Partial<Plan['move']>,
  opts: Partial<FakeOptions>,
  pairs: DrainPair[],
  setup: (h: Harness) => void,
): Promise<string> {
  const a = traced(testPlan({ move }), opts);
  setup(a.h);
  const ra = await byKind(a.h, pairs);
  const b = traced(testPlan({ move: { ...move, order: 'together' } }), opts);
  setup(b.h);
  const rb = await together(b.h, pairs);
  return `${trace(a, ra)}=== together\n${trace(b, rb)}`;
}

/** Two sources and three kinds, of sizes that make the order visible. */
function inventory(h: Harness) {
  h.fake.addItems('projects', 'nfs-1', range(1, 14));
  for (const id of range(1, 14)) h.fake.setSize('projects', id, ((id * 37) % 19) * 10 * MB + MB, 4_000 + id * 500);
  h.fake.addItems('snippets', 'nfs-1', range(1, 6));
  h.fake.addItems('groups', 'nfs-1', range(1, 3));
  h.fake.addItems('projects', 'nfs-2', range(100, 108));
  for (const id of range(100, 108)) h.fake.setSize('projects', id, (id % 7) * 30 * MB + MB);
  h.fake.addItems('snippets', 'nfs-2', range(100, 103));
  h.fake.addItems('groups', 'nfs-2', range(100, 101));
  h.fake.script('projects', 3, 'finished-not-moved', 'ok');
  h.fake.script('snippets', 2, 'fail', 'ok');
}

const twoSources = (over: Partial<Plan['move']> = {}) =>
  testPlan({ move: { from: ['nfs-1', 'nfs-2'], concurrency: 4, ...over } });

describe('drain behaviour trace (fake clock)', () => {
  it('by kind: two sources, three kinds, each drain filling the tail of the one before', async () => {
    const t = traced(twoSources(), { durationMs: 6_000 });
    inventory(t.h);
    const r = await byKind(t.h, pairsOf(['nfs-1', 'nfs-2'], KINDS3));
    await expect(trace(t, r)).toMatchFileSnapshot(file('01-by-kind'));
  });

  it('together: the same inventory in one largest-first schedule', async () => {
    const t = traced(twoSources({ order: 'together' }), { durationMs: 6_000 });
    inventory(t.h);
    const r = await together(t.h, pairsOf(['nfs-1', 'nfs-2'], KINDS3));
    await expect(trace(t, r)).toMatchFileSnapshot(file('02-together'));
  });

  it('bulk: one bulk POST per pair, failures left to per-item moves', async () => {
    const t = traced(testPlan({ move: { mode: 'bulk', concurrency: 3 } }));
    t.h.fake.addItems('projects', 'nfs-1', range(1, 12));
    t.h.fake.addItems('snippets', 'nfs-1', range(1, 4));
    t.h.fake.script('projects', 4, 'fail', 'ok');
    t.h.fake.script('projects', 9, 'fail', 'fail', 'ok');
    t.h.fake.script('snippets', 2, 'fail');
    const r = await byKind(t.h, pairsOf(['nfs-1'], ['projects', 'snippets']));
    await expect(trace(t, r)).toMatchFileSnapshot(file('03-bulk-leftovers'));
  });

  it('move records: CE snippets by records after listed projects, by kind and together', async () => {
    const ce = { unexposed: ['snippets' as Kind], enterprise: false, groupMoves: false };
    const pairs = [
      { source: 'nfs-1', kind: 'projects', access: 'listing' },
      { source: 'nfs-1', kind: 'snippets', access: 'records' },
    ] satisfies DrainPair[];
    const setup = (h: Harness) => {
      h.fake.addItems('projects', 'nfs-1', range(1, 8));
      h.fake.addItems('snippets', 'nfs-1', range(1, 10));
      h.fake.addItems('snippets', 'nfs-2', range(50, 52));
      h.fake.script('snippets', 4, 'fail', 'ok');
    };
    const text = await inBothOrders({ kinds: ['projects', 'snippets'], concurrency: 3 }, ce, pairs, setup);
    await expect(text).toMatchFileSnapshot(file('04-records-kinds'));
  });

  it('given items (--only, a revert): only the given rows, each to its pinned storage', async () => {
    const t = traced(
      testPlan({ move: { from: ['cluster'], to: ['nfs-1', 'nfs-2'], kinds: ['projects'], concurrency: 2 } }),
    );
    const h = t.h;
    h.fake.addItems('projects', 'cluster', [...range(1, 7), ...range(100, 104)]);
    h.fake.script('projects', 5, 'fail', 'ok');
    h.store.batch(() => {
      h.store.startRound('projects', 'cluster', 1);
      const rows = range(1, 7).map((id) => ({
        kind: 'projects' as const,
        id,
        storage: 'cluster',
        name: `p${id}`,
        sizeBytes: id * MB,
      }));
      h.store.recordPage('projects', 'cluster', 1, rows, h.clock.now());
      for (const id of range(1, 7)) h.store.pinDestination('projects', id, id % 2 ? 'nfs-1' : 'nfs-2');
      h.store.finishRound('projects', 'cluster', 1);
    });
    const r = [await runDrain({ ...h.deps, itemsGiven: true }, { source: 'cluster', kind: 'projects' })];
    await expect(trace(t, r)).toMatchFileSnapshot(file('05-given-items'));
  });

  it('move.until: a partial drain spends its budget on the largest items, by kind and together', async () => {
    const setup = (h: Harness) => {
      h.fake.addItems('projects', 'nfs-1', range(1, 10));
      for (const id of range(1, 10)) h.fake.setSize('projects', id, id * 20 * MB);
      h.fake.addItems('snippets', 'nfs-1', range(1, 5));
    };
    const move = { kinds: ['projects', 'snippets'] as Kind[], concurrency: 2, until: { movedBytes: 330 * MB } };
    const text = await inBothOrders(move, {}, pairsOf(['nfs-1'], ['projects', 'snippets']), setup);
    await expect(text).toMatchFileSnapshot(file('06-until-partial'));
  });

  it('retries: a failed move waits out its backoff, slots meanwhile serving the rest', async () => {
    const t = traced(testPlan({ move: { concurrency: 3 }, retry: { backoffMs: 20_000 } }), { durationMs: 3_000 });
    t.h.fake.addItems('projects', 'nfs-1', range(1, 12));
    t.h.fake.script('projects', 2, 'fail', 'ok');
    t.h.fake.script('projects', 6, 'fail', 'fail', 'ok');
    t.h.fake.script('projects', 11, 'fail-after-switch', 'ok');
    const r = await byKind(t.h, pairsOf(['nfs-1'], ['projects']));
    await expect(trace(t, r)).toMatchFileSnapshot(file('07-retries-backoff'));
  });

  it('quarantine: an item that fails every attempt is quarantined, the others move', async () => {
    const t = traced(testPlan({ move: { concurrency: 2 }, retry: { maxAttempts: 3, backoffMs: 10_000 } }));
    t.h.fake.addItems('projects', 'nfs-1', range(1, 6));
    t.h.fake.script('projects', 3, 'fail');
    t.h.fake.script('projects', 5, 'stuck');
    const plan = t.h.deps.plan;
    t.h.deps.plan = { ...plan, poll: { ...plan.poll, stuckScheduledAfterMs: 60_000, stuckRunningAfterMs: 60_000 } };
    const r = await byKind(t.h, pairsOf(['nfs-1'], ['projects']));
    await expect(trace(t, r)).toMatchFileSnapshot(file('08-quarantine'));
  });

  it('control: the cap lowered, paused and restored mid-run', async () => {
    const t = traced(twoSources({ concurrency: 6 }), { durationMs: 10_000 });
    const h = t.h;
    h.fake.addItems('projects', 'nfs-1', range(1, 30));
    h.fake.addItems('projects', 'nfs-2', range(100, 115));
    let posts = 0;
    h.fake.onRequest = (name) => {
      if (name !== 'scheduleMove') return;
      posts++;
      if (posts === 8) h.store.writeControl({ concurrency: 2 }, h.clock.now());
      if (posts === 14) h.store.writeControl({ paused: true }, h.clock.now());
    };
    const sleep = h.clock.sleep.bind(h.clock);
    let pausedAt: number | null = null;
    h.clock.sleep = (ms, signal) => {
      const c = h.store.readControl();
      if (c.paused && pausedAt === null) pausedAt = h.clock.now();
      if (c.paused && pausedAt !== null && h.clock.now() - pausedAt >= 60_000)
        h.store.writeControl({ paused: false, concurrency: null }, h.clock.now());
      return sleep(ms, signal);
    };
    const r = await byKind(h, pairsOf(['nfs-1', 'nfs-2'], ['projects']));
    await expect(trace(t, r)).toMatchFileSnapshot(file('09-control-cap'));
  });

  it('room: destinations with declared room, an item no room takes left where it is', async () => {
    const base = testPlan({ move: { to: ['cluster', 'nfs-3'], kinds: ['projects'], concurrency: 3 } });
    const plan: Plan = {
      ...base,
      weights: { cluster: 100, 'nfs-3': 100, 'nfs-1': 0 },
      capacity: { keepFreeBytes: 0, storages: { cluster: { bytes: 500 * MB }, 'nfs-3': { bytes: 300 * MB } } },
    };
    const t = traced(plan);
    t.h.fake.addItems('projects', 'nfs-1', range(1, 9));
    for (const id of range(1, 9)) t.h.fake.setSize('projects', id, id * 25 * MB);
    t.h.fake.setSize('projects', 9, 900 * MB);
    let r: unknown[];
    try {
      r = await byKind(t.h, pairsOf(['nfs-1'], ['projects']));
    } catch (err) {
      r = [{ threw: (err as Error).message }];
    }
    await expect(trace(t, r)).toMatchFileSnapshot(file('10-room-holds'));
  });

  it('failing POST batches: 429s waited out, a 500 and a 400 counted as attempts', async () => {
    const t = traced(testPlan({ move: { concurrency: 4 }, retry: { backoffMs: 15_000 } }));
    const h = t.h;
    h.fake.addItems('projects', 'nfs-1', range(1, 16));
    h.fake.rejections.set('projects:9', 'Destination storage is not writable');
    const POST = { method: 'POST', path: '/projects/x/repository_storage_moves' };
    let limited = 3;
    let broken = 2;
    h.fake.onRequest = (name) => {
      if (name !== 'scheduleMove') return;
      const n = h.fake.moves.length;
      if (n === 3 && limited-- > 0) throw new ApiRateLimitedError(POST, null, null, 5000);
      if (n === 7 && broken-- > 0) throw new ApiHttpError(POST, 500, 'Internal Server Error', null);
    };
    const r = await byKind(h, pairsOf(['nfs-1'], ['projects']));
    await expect(trace(t, r)).toMatchFileSnapshot(file('11-failing-posts'));
  });

  it('verification: moves that finished but left items listed go round again', async () => {
    const text = await inBothOrders(
      { concurrency: 3, kinds: ['projects', 'groups'] },
      {},
      pairsOf(['nfs-1'], ['projects', 'groups']),
      (h) => {
        h.fake.addItems('projects', 'nfs-1', range(1, 9));
        h.fake.addItems('groups', 'nfs-1', range(1, 4));
        h.fake.script('projects', 2, 'finished-not-moved', 'ok');
        h.fake.script('projects', 5, 'finished-not-moved', 'finished-not-moved', 'ok');
        h.fake.script('groups', 3, 'finished-not-moved', 'ok');
      },
    );
    await expect(text).toMatchFileSnapshot(file('12-verify-rounds'));
  });

  it('resume: a drain aborted mid-way and run again from its checkpoint', async () => {
    const run = async (order: 'by-kind' | 'together') => {
      const t = traced(testPlan({ move: { concurrency: 3, kinds: ['projects', 'snippets'], order } }), {
        durationMs: 8_000,
      });
      const h = t.h;
      h.fake.addItems('projects', 'nfs-1', range(1, 12));
      h.fake.addItems('snippets', 'nfs-1', range(1, 5));
      h.fake.onRequest = (name) => {
        if (name === 'scheduleMove' && h.fake.moves.length === 6) h.abort.abort(new Error('killed'));
      };
      const pairs = pairsOf(['nfs-1'], ['projects', 'snippets']);
      const go = (x: Harness) => (order === 'together' ? together(x, pairs) : byKind(x, pairs));
      const first = await go(h).then(
        () => 'finished',
        (err: unknown) => `threw ${(err as { code?: string }).code ?? (err as Error).message}`,
      );
      h.fake.onRequest = null;
      t.lines.push(`--- resumed (${first})`);
      const r = await go(resumed(h));
      return trace(t, r);
    };
    const text = `${await run('by-kind')}=== together\n${await run('together')}`;
    await expect(text).toMatchFileSnapshot(file('13-resume'));
  });

  it('fork networks: the members of a network go where its first placed member went', async () => {
    const run = async (order: 'by-kind' | 'together') => {
      const base = testPlan({ move: { to: ['cluster', 'nfs-3'], kinds: ['projects'], concurrency: 3, order } });
      const t = traced({ ...base, weights: { cluster: 100, 'nfs-3': 100, 'nfs-1': 0 } });
      const h = t.h;
      const ids = range(1, 12);
      h.fake.addItems('projects', 'nfs-1', ids);
      const size = (id: number) => ((id * 13) % 7) * 40 * MB + 5 * MB;
      for (const id of ids) h.fake.setSize('projects', id, size(id));
      h.store.batch(() => {
        h.store.startRound('projects', 'nfs-1', 1);
        const rows = ids.map((id) => ({
          kind: 'projects' as const,
          id,
          storage: 'nfs-1',
          name: `p${id}`,
          sizeBytes: size(id),
        }));
        h.store.recordPage('projects', 'nfs-1', 1, rows, h.clock.now());
        h.store.finishRound('projects', 'nfs-1', 1);
      });
      h.store.noteNetwork('projects', [1, 4, 7, 10], 1, 'nfs-1', 50 * MB);
      h.store.noteNetwork('projects', [2, 5], 2, 'nfs-1', 20 * MB);
      const pairs = pairsOf(['nfs-1'], ['projects']);
      const r = order === 'together' ? await together(h, pairs) : await byKind(h, pairs);
      return trace(t, r);
    };
    const text = `${await run('by-kind')}=== together\n${await run('together')}`;
    await expect(text).toMatchFileSnapshot(file('14-fork-networks'));
  });
});
