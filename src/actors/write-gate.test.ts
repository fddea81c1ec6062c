import { describe, expect, it } from 'vitest';
import { createHarness, testPlan } from '../../test/support/drain-harness.js';
import type { GateDecision, SchedulingGate } from '../schedule/gate.js';
import { applyWeights } from './weights.js';

/** The drain harness's instance, remembering the weights it is given (its own always reads {}). */
function withWeights(h: ReturnType<typeof createHarness>, onWrite: () => void = () => undefined): void {
  let stored: Record<string, number> = {};
  h.fake.getWeights = () => Promise.resolve({ ...stored });
  h.fake.setWeights = (w) => {
    onWrite();
    stored = { ...w };
    return Promise.resolve(w);
  };
}

/** A gate that answers from a script, one decision per call, then the last one. */
function scriptedGate(script: GateDecision[]): SchedulingGate & { calls: number } {
  const g = {
    calls: 0,
    decide: (ceiling: number) => {
      const d = script[Math.min(g.calls, script.length - 1)]!;
      g.calls += 1;
      return Promise.resolve({ ...d, cap: Math.min(d.cap, ceiling) });
    },
    noteMove: () => undefined,
    noteResponse: () => undefined,
  };
  return g;
}

const closed: GateDecision = {
  cap: 0,
  limit: 'window',
  reason: 'outside every maintenance window',
  waitingUntil: null,
};
const held: GateDecision = {
  cap: 0,
  limit: 'rule',
  reason: 'rule disk: 1 above 0.5: no new move while it holds',
  waitingUntil: null,
  rule: { name: 'disk', since: 0 },
};
const open: GateDecision = { cap: 10, limit: null, reason: null, waitingUntil: null };

describe('every write waits for the gates', () => {
  it('writes the weights only once neither a closed window nor a holding rule keeps the cap at 0', async () => {
    const h = createHarness(testPlan({}));
    const gate = scriptedGate([closed, closed, held, open]);
    const writesAtCall: number[] = [];
    withWeights(h, () => writesAtCall.push(gate.calls));
    const out = await applyWeights({ ...h.deps, gate }, { previous: {} });
    expect(out.written).toBe(true);
    // Written once, after the fourth decision (the first that let moves start).
    expect(writesAtCall).toEqual([4]);
    const limits = h.store
      .readEvents()
      .filter((e) => e.type === 'cap.changed')
      .map((e) => e.data.limit);
    expect(limits).toEqual(['window', 'rule', 'plan']);
  });

  it('does not wait for an operator pause or the throttle: those keep only moves back', async () => {
    const h = createHarness(testPlan({}));
    const gate = scriptedGate([{ cap: 0, limit: 'throttle', reason: 'Gitaly unhealthy', waitingUntil: null }]);
    withWeights(h);
    expect((await applyWeights({ ...h.deps, gate }, { previous: {} })).written).toBe(true);
    expect(gate.calls).toBe(1);
  });
});

describe('the room check', () => {
  it('refuses when Prometheus cannot answer the free bytes, and in a dry run reports without refusing', async () => {
    const { checkCapacity } = await import('./capacity.js');
    const base = createHarness(testPlan({}));
    const plan = {
      ...base.deps.plan,
      capacity: { keepFreeBytes: 0, storages: { [base.deps.plan.move.to[0]!]: { query: 'free' } } },
    };
    const down = {
      query: () => Promise.reject(new Error('Prometheus at http://p did not answer (ECONNREFUSED)')),
      close: () => Promise.resolve(),
    };
    await expect(checkCapacity({ ...base.deps, plan, prometheus: down }, {})).rejects.toMatchObject({
      code: 'SHARDMOVE_PREFLIGHT_CAPACITY',
      message: expect.stringContaining('could not be read: Prometheus at http://p did not answer'),
    });
    const tiny = { query: () => Promise.resolve([{ value: 1, labels: {} }]), close: () => Promise.resolve() };
    const source = plan.move.from[0]!;
    base.fake.addItems('projects', source, [1, 2]);
    base.fake.setSize('projects', 1, 4096);
    const room = await checkCapacity({ ...base.deps, plan, prometheus: tiny, dryRun: true }, {});
    // One project by its size (and its design repository's 1 MiB allowance), one by the 100 MiB
    // allowance: it does not fit in 1 byte, and a dry run only says so.
    expect(room.notes).toEqual([]);
    expect(room.warnings).toEqual([
      expect.stringMatching(
        /^room on \S+: needs 101\.0 MiB \+ keep_free 0 B, free 1 B: DOES NOT FIT \(1 item\(s\) counted by allowance/,
      ),
    ]);
    await expect(checkCapacity({ ...base.deps, plan, prometheus: tiny }, {})).rejects.toMatchObject({
      code: 'SHARDMOVE_PREFLIGHT_CAPACITY',
      message: expect.stringContaining(`needs ${4096 + 100 * 2 ** 20 + 2 ** 20} bytes`),
    });
  });
});
