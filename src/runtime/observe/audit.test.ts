import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../test/support/fake-clock.js';
import { createAuditBuffer } from './audit.js';

const request = (path: string) => ({ method: 'POST', path, attempt: 1, mutating: true, status: 201 });

describe('audit buffer', () => {
  // The flush timer runs on the injected clock: the test moves it past the timer instead of sleeping.
  const clock = new FakeClock(0, { autoAdvance: false });

  it('writes queued lines in one batch after a short delay', async () => {
    const written: string[] = [];
    let batches = 0;
    const buf = createAuditBuffer(
      {
        batch: <T>(fn: () => T) => (batches++, fn()),
        appendEvent: (_type, data) => void written.push((data as { path: string }).path),
      },
      clock,
    );
    buf.add(request('/a'), 1);
    buf.add(request('/b'), 2);
    expect(written).toEqual([]);
    clock.advance(100);
    expect(written).toEqual(['/a', '/b']);
    expect(batches).toBe(1);
  });

  it('a write refused in the timer (a fenced checkpoint) goes to onError, never out of the timer', async () => {
    const errors: unknown[] = [];
    const fenced = new Error('SHARDMOVE_LEASE_LOST: the run lock was taken over');
    const buf = createAuditBuffer(
      {
        batch: () => {
          throw fenced;
        },
        appendEvent: () => undefined,
      },
      clock,
      (err) => errors.push(err),
    );
    buf.add(request('/x'), 1);
    clock.advance(100);
    expect(errors).toEqual([fenced]);
    // An explicit flush still throws, for the caller to decide.
    buf.add(request('/y'), 2);
    expect(() => buf.flush()).toThrow('SHARDMOVE_LEASE_LOST');
  });
});
