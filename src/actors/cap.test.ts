import { describe, expect, it } from 'vitest';
import { createHarness, testPlan } from '../../test/support/drain-harness.js';
import type { GateDecision, SchedulingGate } from '../schedule/gate.js';
import { capInForce, lastCap, recordQueueHold, stopSeen } from './cap.js';

/** A gate that answers what the test says, under whatever ceiling it is given. */
function fixedGate(answer: (ceiling: number) => GateDecision): SchedulingGate {
  return {
    decide: (ceiling) => Promise.resolve(answer(ceiling)),
    noteMove: () => undefined,
    noteResponse: () => undefined,
  };
}

const capEvents = (h: ReturnType<typeof createHarness>) =>
  h.store
    .readEvents()
    .filter((e) => e.type === 'cap.changed')
    .map((e) => e.data);

describe('the cap in force', () => {
  it("is the plan's, then the operator's override, then 0 while paused; each change recorded once with the previous", async () => {
    const h = createHarness(testPlan({ move: { concurrency: 8 } }));
    expect(lastCap(h.deps)).toBeNull();
    expect(await capInForce(h.deps)).toMatchObject({ cap: 8, ceiling: 8, paused: false, limit: 'plan' });
    await capInForce(h.deps);
    h.store.writeControl({ concurrency: 3 }, 1);
    expect(await capInForce(h.deps)).toMatchObject({ cap: 3, limit: 'control' });
    h.store.writeControl({ paused: true }, 2);
    expect(await capInForce(h.deps)).toMatchObject({ cap: 0, paused: true, limit: 'paused' });
    expect(capEvents(h).map((d) => [d.cap, d.limit, d.previous?.cap ?? null])).toEqual([
      [8, 'plan', null],
      [3, 'control', 8],
      [0, 'paused', 3],
    ]);
    expect(lastCap(h.deps)).toMatchObject({ cap: 0, limit: 'paused' });
  });

  it("is lowered by the gate under the operator's cap: a closed window says when it reopens, the throttle why", async () => {
    const h = createHarness(testPlan({ move: { concurrency: 8 } }));
    let answer: GateDecision = {
      cap: 0,
      limit: 'window',
      reason: 'outside every maintenance window',
      waitingUntil: 5_000,
    };
    const deps = { ...h.deps, gate: fixedGate((ceiling) => ({ ...answer, cap: Math.min(answer.cap, ceiling) })) };
    expect(await capInForce(deps)).toMatchObject({
      cap: 0,
      ceiling: 8,
      limit: 'window',
      until: 5_000,
      waitingUntil: 5_000,
    });
    answer = { cap: 2, limit: 'throttle', reason: 'API latency p90 3 s', waitingUntil: null };
    expect(await capInForce(deps)).toMatchObject({
      cap: 2,
      ceiling: 8,
      limit: 'throttle',
      reason: 'API latency p90 3 s',
    });
    // Another wording of the same cap is not a change.
    answer = { ...answer, reason: 'API latency p90 4 s' };
    await capInForce(deps);
    answer = { cap: 8, limit: null, reason: null, waitingUntil: null };
    expect(await capInForce(deps)).toMatchObject({ cap: 8, limit: 'plan' });
    expect(capEvents(h).map((d) => [d.cap, d.limit])).toEqual([
      [0, 'window'],
      [2, 'throttle'],
      [8, 'plan'],
    ]);
  });

  it('asks no gate while paused: nothing may start whatever it would say', async () => {
    const h = createHarness();
    h.store.writeControl({ paused: true }, 1);
    let asked = 0;
    const deps = {
      ...h.deps,
      gate: fixedGate((c) => (asked++, { cap: c, limit: null, reason: null, waitingUntil: null })),
    };
    expect((await capInForce(deps)).cap).toBe(0);
    expect(asked).toBe(0);
  });
});

describe('the cap in force under a stop request', () => {
  it('is 0 above everything, and marks the stop as seen by the scheduling', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 8 } }));
    expect(stopSeen(h.deps)).toBe(false);
    h.store.writeControl({ paused: true }, 1);
    h.store.writeControl({ stop: { by: 'file' } }, 2);
    expect(await capInForce(h.deps)).toMatchObject({ cap: 0, ceiling: 0, paused: true, limit: 'stopping' });
    expect(stopSeen(h.deps)).toBe(true);
  });

  it('asked for while the gate was consulted: the cap it returns is already 0', async () => {
    const h = createHarness(testPlan({ move: { concurrency: 8 } }));
    let answered: () => void = () => undefined;
    const deps = {
      ...h.deps,
      gate: {
        decide: (ceiling: number) =>
          new Promise<GateDecision>((resolve) => {
            answered = () => resolve({ cap: ceiling, limit: null, reason: null, waitingUntil: null });
          }),
        noteMove: () => undefined,
        noteResponse: () => undefined,
      },
    };
    const deciding = capInForce(deps);
    h.store.writeControl({ stop: { by: 'control' } }, 1);
    answered();
    expect(await deciding).toMatchObject({ cap: 0, limit: 'stopping' });
    expect(capEvents(h).map((d) => d.limit)).toEqual(['stopping']);
  });
});

describe("the hold of a bulk move's job waiting in Sidekiq's queue", () => {
  it("is a cap of 0 in its words, released to the operator's cap; a stop shows above it and still follows the job", () => {
    const h = createHarness(testPlan({ move: { concurrency: 8 } }));
    recordQueueHold(h.deps, 'snippets off nfs-1: queue default holds 1 job(s), the oldest 75 s old');
    expect(lastCap(h.deps)).toMatchObject({ cap: 0, ceiling: 8, limit: 'queue' });
    recordQueueHold(h.deps, null);
    expect(lastCap(h.deps)).toMatchObject({ cap: 8, limit: 'plan' });
    expect(stopSeen(h.deps)).toBe(false);
    h.store.writeControl({ stop: { by: 'control' } }, 1);
    recordQueueHold(h.deps, 'snippets off nfs-1: still queued');
    expect(lastCap(h.deps)).toMatchObject({ cap: 0, limit: 'stopping' });
    // The job cannot be called back: the stop waits for it, as it waits for moves in flight.
    expect(stopSeen(h.deps)).toBe(false);
    expect(capEvents(h).map((d) => d.limit)).toEqual(['queue', 'plan', 'stopping']);
  });
});
