import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../test/support/fake-clock.js';
import { keepLease } from './lease.js';

const T0 = 1_700_000_000_000;

/** A store whose renewals are recorded; `answers` says what each one returns (then true). */
function store(answers: (boolean | 'busy')[] = []) {
  const renewals: number[] = [];
  return {
    renewals,
    renewLock(now: number): boolean {
      renewals.push(now - T0);
      const a = answers.shift() ?? true;
      if (a === 'busy') throw new Error('SQLITE_BUSY');
      return a;
    },
  };
}

describe('the lease keeper on the injected clock', () => {
  it('renews every quarter of the lease, at the clock time of each renewal, without real waiting', () => {
    const clock = new FakeClock(T0, { autoAdvance: false });
    const s = store();
    const lease = keepLease(s, 60_000, clock, pino({ level: 'silent' }));
    clock.advance(14_999);
    expect(s.renewals).toEqual([]);
    // A day of its clock: 5,760 renewals, in no time.
    clock.advance(1 + 24 * 3_600_000 - 15_000);
    expect(s.renewals).toHaveLength(5_760);
    expect(s.renewals.slice(0, 3)).toEqual([15_000, 30_000, 45_000]);
    expect(lease.lost).toBe(false);
    lease.stop();
    clock.advance(60_000);
    expect(s.renewals).toHaveLength(5_760);
    expect(clock.timerCount).toBe(0);
  });

  it('a busy checkpoint is retried at the next renewal; a lock taken over aborts the run and renews no more', () => {
    const clock = new FakeClock(T0, { autoAdvance: false });
    const s = store(['busy', true, false]);
    const lease = keepLease(s, 10_000, clock, pino({ level: 'silent' }));
    clock.advance(2_500);
    expect(lease.lost).toBe(false);
    clock.advance(5_000);
    expect(lease.lost).toBe(true);
    expect(lease.signal.aborted).toBe(true);
    expect(String(lease.signal.reason)).toContain('the run lock was taken over');
    clock.advance(60_000);
    expect(s.renewals).toEqual([2_500, 5_000, 7_500]);
    expect(clock.timerCount).toBe(0);
  });

  it('the floor of a renewal gap is a second, whatever the lease', () => {
    const clock = new FakeClock(T0, { autoAdvance: false });
    const s = store();
    keepLease(s, 100, clock, pino({ level: 'silent' }));
    clock.advance(3_000);
    expect(s.renewals).toEqual([1_000, 2_000, 3_000]);
  });
});
