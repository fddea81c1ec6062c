import { FakeClock } from '../../../test/support/fake-clock.js';
import { describe, expect, it } from 'vitest';
import { testPlan } from '../../../test/support/drain-harness.js';
import { PaceMeter } from '../../report/pace.js';
import { openCheckpoint } from '../../store/checkpoint.js';
import { createRunEvents } from './event-sink.js';
import type { RunEvents } from './event-sink.js';
import { RunEventSchema } from '../../events/run-events.js';
import type { RunEvent } from '../../events/run-events.js';

const clock = new FakeClock(1_700_000_000_000);

/** A sink observing a run on an in-memory checkpoint whose log already holds `before` events. */
function setup(write?: (line: string) => void) {
  const lines: string[] = [];
  const events = createRunEvents(write ?? ((l) => lines.push(l)), clock, 30_000);
  const store = openCheckpoint(':memory:');
  const read = (): RunEvent[] => lines.map((l) => RunEventSchema.parse(JSON.parse(l)) as RunEvent);
  const start = (fromSeq = store.lastEventSeq()) =>
    events.started?.({
      plan: testPlan(),
      checkpoint: ':memory:',
      host: 'h',
      fromSeq,
      store,
      clock,
      startedAt: clock.t,
      pace: new PaceMeter(clock.t, (from) => store.ownMovesSince(from, clock.t)),
      dryRun: false,
      step: () => 'preflight',
    });
  return { events, store, read, start };
}

function stop(events: RunEvents): void {
  void events.stopped?.();
}

describe('run events from the committed audit log', () => {
  it('turns steps into started/ended pairs and ends the open step with the run', () => {
    const { events, store, read, start } = setup();
    store.appendEvent('run.started', { resumed: false, dryRun: false, pid: 5 }, clock.t);
    start(0);
    store.appendEvent('step.started', { step: 'preflight' }, clock.t);
    clock.t += 250;
    store.appendEvent('step.started', { step: 'verify' }, clock.t);
    clock.t += 100;
    store.appendEvent('step.started', { step: 'failed' }, clock.t);
    store.appendEvent('run.finished', { outcome: 'failed', error: null, quarantined: 0 }, clock.t);
    stop(events);
    const steps = read().filter((e) => e.type.startsWith('step.'));
    expect(steps.map((e) => [e.type, 'step' in e ? e.step : null, 'outcome' in e ? e.outcome : null])).toEqual([
      ['step.started', 'preflight', null],
      ['step.ended', 'preflight', 'ok'],
      ['step.started', 'verify', null],
      ['step.ended', 'verify', 'failed'],
    ]);
    expect(steps[1]).toMatchObject({ durationMs: 250 });
    expect(read()[0]).toMatchObject({ type: 'run.started', plan: 'test', checkpoint: ':memory:', host: 'h', pid: 5 });
  });

  it('writes only what the checkpoint committed: nothing of a transaction that rolled back', () => {
    const { events, store, read, start } = setup();
    start();
    const move = { kind: 'projects', source: 'nfs-1', id: 1, moveId: 10 } as const;
    store.batch(() => store.appendEvent('move.finished', move, clock.t));
    expect(() =>
      store.batch(() => {
        store.appendEvent('move.failed', { ...move, id: 2, error: 'x' }, clock.t);
        throw new Error('rolled back');
      }),
    ).toThrow('rolled back');
    events.progress?.();
    stop(events);
    expect(
      read()
        .filter((e) => e.type.startsWith('move.'))
        .map((e) => e.type),
    ).toEqual(['move.finished']);
  });

  it("starts reading where this process opened the checkpoint: an earlier run's events are not replayed", () => {
    const { events, store, read, start } = setup();
    store.appendEvent('move.finished', { kind: 'projects', source: 'a', id: 1, moveId: 1 }, clock.t);
    const fromSeq = store.lastEventSeq();
    store.appendEvent(
      'lock.taken_over',
      { previous: { pid: 9, host: 'h', startedAt: 0 }, reason: 'dead', heartbeatAgeMs: 1 },
      clock.t,
    );
    start(fromSeq);
    stop(events);
    expect(read().map((e) => e.type)).toEqual(['lock.taken_over', 'progress']);
  });

  it('reports the cap in force the drain recorded: each change once, with the previous one', () => {
    const { events, store, read, start } = setup();
    start();
    const plan = { cap: 8, ceiling: 8, paused: false, limit: 'plan', reason: "the plan's move.concurrency" } as const;
    const control = {
      cap: 3,
      ceiling: 3,
      paused: false,
      limit: 'control',
      reason: 'set with shardmove control',
    } as const;
    const throttle = { cap: 1, ceiling: 3, paused: false, limit: 'throttle', reason: 'latency' } as const;
    store.appendEvent('cap.changed', { ...plan, previous: null }, clock.t);
    store.appendEvent('cap.changed', { ...control, previous: plan }, clock.t);
    store.appendEvent('throttle.cap', { cap: 1, ceiling: 3, reason: 'latency' }, clock.t);
    store.appendEvent('cap.changed', { ...throttle, previous: control }, clock.t);
    stop(events);
    expect(read().filter((e) => e.type === 'cap.changed')).toEqual([
      expect.objectContaining({ cap: 8, paused: false, previous: null, limit: 'plan' }),
      expect.objectContaining({ cap: 3, paused: false, previous: { cap: 8, paused: false }, limit: 'control' }),
      expect.objectContaining({
        cap: 1,
        paused: false,
        previous: { cap: 3, paused: false },
        limit: 'throttle',
        reason: 'latency',
      }),
    ]);
  });

  it('stops writing after a failed write and says why, without disturbing the store', () => {
    const { events, store, start } = setup(() => {
      throw new Error('EPIPE');
    });
    start();
    store.appendEvent('move.finished', { kind: 'projects', source: 'a', id: 1, moveId: 2 }, clock.t);
    events.progress?.();
    expect(events.failure?.message).toBe('EPIPE');
    expect(store.readControl().paused).toBe(false);
    stop(events);
  });
});
