import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../test/support/fake-clock.js';
import { ApiAmbiguousError, ApiHttpError, ApiNetworkError, ApiNotFoundError, ApiTimeoutError } from './errors.js';
import { InstanceOutageError, createOutageGate, describeOutage, outageCause } from './outage.js';
import type { OutageListener, OutageState } from './outage.js';

const REF = { method: 'GET', path: '/api/v4/projects' };
const T0 = Date.parse('2026-12-01T23:41:02Z');

/** A clock only the gate's sleeps (and the test) move: a two-minute outage is a few microseconds. */
const fakeClock = () => new FakeClock(T0);

function recorder() {
  const seen: string[] = [];
  const listener: OutageListener = {
    down: (s: OutageState) => seen.push(`down ${s.cause} since ${s.since - T0}`),
    up: (s: OutageState, at: number) => seen.push(`up after ${at - s.since}`),
  };
  return { seen, listener };
}

describe('outageCause', () => {
  it('takes network errors, timeouts and gateway answers, and nothing else', () => {
    expect(outageCause(new ApiNetworkError(REF, 'ECONNREFUSED'))).toBe('ECONNREFUSED');
    expect(outageCause(new ApiNetworkError(REF, null))).toBe('network error');
    expect(outageCause(new ApiTimeoutError(REF, 'headers'))).toBe('timeout');
    expect(outageCause(new ApiHttpError(REF, 503, null, null))).toBe('HTTP 503');
    expect(outageCause(new ApiHttpError(REF, 502, null, null))).toBe('HTTP 502');
    expect(outageCause(new ApiHttpError(REF, 504, null, null))).toBe('HTTP 504');
    // The application itself failing is no outage; nor is a write whose effect is unknown (it is reconciled).
    expect(outageCause(new ApiHttpError(REF, 500, null, null))).toBeNull();
    expect(outageCause(new ApiNotFoundError(REF, null, null))).toBeNull();
    expect(outageCause(new ApiAmbiguousError(REF, 503, 'HTTP 503'))).toBeNull();
    expect(outageCause(new Error('ECONNREFUSED'))).toBeNull();
  });
});

describe('the outage gate', () => {
  it('holds a request through a two-minute outage, probing every retry interval, and says it once', async () => {
    const clock = fakeClock();
    const { seen, listener } = recorder();
    const gate = createOutageGate({ waitMs: 30 * 60_000, retryMs: 10_000, clock, listener });
    let probes = 0;
    gate.setProbe(() => Promise.resolve(++probes * 10_000 < 120_000 ? 'ECONNREFUSED' : null));
    gate.failed('ECONNREFUSED', T0);
    clock.advance(3_000);
    const a = gate.hold('ECONNREFUSED');
    const b = gate.hold('ECONNRESET');
    await Promise.all([a, b]);
    expect(probes).toBe(12);
    expect(seen).toEqual(['down ECONNREFUSED since 0', 'up after 123000']);
    expect(gate.state()).toBeNull();
  });

  it('words the hold as the operator reads it', () => {
    const state = { since: T0, cause: 'ECONNREFUSED', retryMs: 10_000, deadline: null };
    expect(describeOutage(state)).toBe(
      'the instance has not answered since 23:41:02 UTC (ECONNREFUSED); trying every 10s',
    );
  });

  it('fails every waiting request with its own error once outage_wait ran out', async () => {
    const clock = fakeClock();
    const gate = createOutageGate({ waitMs: 60_000, retryMs: 10_000, clock });
    let probes = 0;
    gate.setProbe(() => {
      probes++;
      return Promise.resolve('HTTP 503');
    });
    const held = [gate.hold('HTTP 503'), gate.hold('HTTP 503')];
    for (const h of held) {
      const err = await h.then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InstanceOutageError);
      expect((err as InstanceOutageError).code).toBe('SHARDMOVE_INSTANCE_OUTAGE');
      expect((err as InstanceOutageError).message).toContain(
        'the instance has not answered since 23:41:02 UTC (HTTP 503), and instance.outage_wait (1m) ran out',
      );
    }
    // One probing loop for every waiter: 6 probes in a minute, not 12.
    expect(probes).toBe(6);
  });

  it('ends the hold when any other request gets an answer', async () => {
    const clock = fakeClock();
    const { seen, listener } = recorder();
    const gate = createOutageGate({ waitMs: 60_000, retryMs: 10_000, clock, listener });
    gate.setProbe(() => {
      // Meanwhile another request was answered.
      gate.answered(clock.now());
      return Promise.resolve('ECONNREFUSED');
    });
    await gate.hold('ECONNREFUSED');
    expect(seen).toEqual(['down ECONNREFUSED since 0', 'up after 10000']);
  });

  it('says nothing of a failure an answer followed (a blip the retries covered)', () => {
    const clock = fakeClock();
    const { seen, listener } = recorder();
    const gate = createOutageGate({ waitMs: 60_000, retryMs: 10_000, clock, listener });
    gate.failed('ECONNRESET', T0);
    gate.answered(T0 + 500);
    expect(seen).toEqual([]);
    expect(gate.state()).toBeNull();
  });

  it('gives the signal reason to a waiter whose run is interrupted', async () => {
    const gate = createOutageGate({
      waitMs: 60_000,
      retryMs: 10_000,
      // Its sleeps never end by themselves: the probe loop waits until the run is interrupted.
      clock: new FakeClock(T0, { autoAdvance: false }),
    });
    gate.setProbe(() => Promise.resolve('ECONNREFUSED'));
    const ac = new AbortController();
    const held = gate.hold('ECONNREFUSED', ac.signal);
    ac.abort(new Error('SIGINT'));
    await expect(held).rejects.toThrow('SIGINT');
  });
});

describe('the health watch of a quiet run', () => {
  it('probes once nothing answered for a while, says when the instance stops answering and when it answers again', async () => {
    const clock = new FakeClock(T0, { autoAdvance: false });
    const { seen, listener } = recorder();
    const gate = createOutageGate({
      waitMs: 60_000,
      retryMs: 10_000,
      clock,
      listener,
    });
    let answers = true;
    let probes = 0;
    gate.setProbe(() => {
      probes++;
      return Promise.resolve(answers ? null : 'ECONNREFUSED');
    });
    const watch = gate.watch(10_000);
    // A request answered 5 s ago: no probe yet.
    gate.answered(T0);
    await clock.advanceAsync(5_000);
    gate.answered(clock.now());
    await clock.advanceAsync(5_000);
    expect(probes).toBe(0);
    // Quiet for longer (a paused run, nothing in flight): it asks, and the instance answers.
    await clock.advanceAsync(10_000);
    expect(probes).toBe(1);
    expect(seen).toEqual([]);
    // The instance goes away: said at the next probe, without any request waiting, and never ended by the deadline.
    answers = false;
    await clock.advanceAsync(10_000);
    expect(seen).toEqual(['down ECONNREFUSED since 30000']);
    expect(gate.state()).toMatchObject({ cause: 'ECONNREFUSED', deadline: null });
    await clock.advanceAsync(120_000);
    expect(seen).toHaveLength(1);
    answers = true;
    await clock.advanceAsync(10_000);
    expect(seen).toEqual(['down ECONNREFUSED since 30000', 'up after 130000']);
    watch.close();
  });
});
