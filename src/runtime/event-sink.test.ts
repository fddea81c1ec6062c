import { afterEach, describe, expect, it, vi } from 'vitest';
import { openCheckpoint } from '../store/checkpoint.js';
import type { Clock } from '../time/clock.js';
import { createRunEvents } from './event-sink.js';
import { RunEventSchema } from './events-schema.js';
import type { RunEvent } from './events-schema.js';

const clock: Clock & { t: number } = { t: 1_700_000_000_000, now: () => clock.t, sleep: () => Promise.resolve() };
const info = { plan: 'p', checkpoint: ':memory:', host: 'h', planConcurrency: 8 };

function setup() {
  const lines: string[] = [];
  const events = createRunEvents((l) => lines.push(l), clock, 30_000);
  const raw = openCheckpoint(':memory:');
  const store = events.attach(raw, info);
  const read = (): RunEvent[] => lines.map((l) => RunEventSchema.parse(JSON.parse(l)) as RunEvent);
  return { events, raw, store, read };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('run events from the audit trail', () => {
  it('turns steps into started/ended pairs and ends the open step with the run', () => {
    const { events, store, read } = setup();
    store.appendEvent('run.started', { resumed: false, dryRun: false, pid: 5 }, clock.t);
    store.appendEvent('step.entered', { step: 'preflight' }, clock.t);
    clock.t += 250;
    store.appendEvent('step.entered', { step: 'verify' }, clock.t);
    clock.t += 100;
    store.appendEvent('step.entered', { step: 'failed' }, clock.t);
    store.appendEvent('run.finished', { state: 'failed' }, clock.t);
    events.detach();
    const steps = read().filter((e) => e.type.startsWith('step.'));
    expect(steps.map((e) => [e.type, 'step' in e ? e.step : null, 'outcome' in e ? e.outcome : null])).toEqual([
      ['step.started', 'preflight', null],
      ['step.ended', 'preflight', 'ok'],
      ['step.started', 'verify', null],
      ['step.ended', 'verify', 'failed'],
    ]);
    expect(steps[1]).toMatchObject({ durationMs: 250 });
  });

  it('writes the events of a transaction once it commits, and none of one that rolls back', () => {
    const { events, store, read } = setup();
    const move = { kind: 'projects', source: 'nfs-1', id: 1, moveId: 10 };
    const seen: number[] = [];
    store.batch(() => {
      store.appendEvent('move.finished', move, clock.t);
      seen.push(read().length);
    });
    expect(seen).toEqual([0]);
    expect(read()).toHaveLength(1);
    expect(() =>
      store.batch(() => {
        store.appendEvent('move.failed', { ...move, id: 2, error: 'x' }, clock.t);
        throw new Error('rolled back');
      }),
    ).toThrow('rolled back');
    expect(read().map((e) => e.type)).toEqual(['move.finished']);
    events.detach();
  });

  it('reports the cap at the start and every change made with shardmove control', () => {
    vi.useFakeTimers();
    const { events, raw, store, read } = setup();
    store.appendEvent('run.started', { resumed: true, dryRun: false, pid: 5 }, clock.t);
    raw.writeControl({ concurrency: 3 }, clock.t);
    vi.advanceTimersByTime(1_000);
    raw.writeControl({ paused: true }, clock.t);
    vi.advanceTimersByTime(1_000);
    vi.advanceTimersByTime(1_000);
    events.detach();
    expect(read().filter((e) => e.type === 'cap.changed')).toEqual([
      expect.objectContaining({ cap: 8, paused: false, previous: null, reason: 'start' }),
      expect.objectContaining({ cap: 3, paused: false, previous: { cap: 8, paused: false }, reason: 'control' }),
      expect.objectContaining({ cap: 0, paused: true, previous: { cap: 3, paused: false }, reason: 'control' }),
    ]);
  });

  it('stops writing after a failed write and says why, without disturbing the store', () => {
    const events = createRunEvents(() => {
      throw new Error('EPIPE');
    }, clock, 30_000);
    const store = events.attach(openCheckpoint(':memory:'), info);
    store.appendEvent('move.finished', { kind: 'projects', source: 'a', id: 1, moveId: 2 }, clock.t);
    expect(events.failure?.message).toBe('EPIPE');
    expect(store.readControl().paused).toBe(false);
    events.detach();
  });
});
