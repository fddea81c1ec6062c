import { FakeClock } from '../../test/support/fake-clock.js';
import { describe, expect, it } from 'vitest';
import { RunEventSchema } from '../events/run-events.js';
import { createRunEvents } from '../runtime/observe/event-sink.js';
import { LeaseLostError, LockedError } from '../store/errors.js';
import { finishWithError } from './events-file.js';

function sink() {
  const lines: string[] = [];
  const events = createRunEvents((l) => lines.push(l), new FakeClock(0), 30_000);
  return { events, read: () => lines.map((l) => RunEventSchema.parse(JSON.parse(l))) };
}

describe('the last lines of a run that threw', () => {
  it('says the lease was lost, and to whom, before run.finished', () => {
    const { events, read } = sink();
    const code = finishWithError(
      events,
      new LeaseLostError('run.db', { pid: 42, host: 'ops-2', startedAt: 0 }),
      (s) => s,
    );
    expect(code).toBe(5);
    expect(read()).toEqual([
      expect.objectContaining({ seq: 1, type: 'lease.lost', holder: { pid: 42, host: 'ops-2' } }),
      expect.objectContaining({ seq: 2, type: 'run.finished', outcome: 'leaseLost', exitCode: 5 }),
    ]);
  });

  it('says null when the lock was removed, and nothing of a lease for another refusal', () => {
    const removed = sink();
    finishWithError(removed.events, new LeaseLostError('run.db', null), (s) => s);
    expect(removed.read()[0]).toMatchObject({ type: 'lease.lost', holder: null });
    const locked = sink();
    finishWithError(locked.events, new LockedError('run.db', { pid: 1, host: 'h', startedAt: 0 }), (s) => s);
    expect(locked.read().map((e) => e.type)).toEqual(['run.finished']);
  });
});
