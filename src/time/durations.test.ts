import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatPlanDuration, parseDuration } from './durations.js';
import { assertProperty } from '../../test/support/property.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1h30m', 5_400_000],
    ['1m30s250ms', 90_250],
    ['0s', 0],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toEqual({ ok: true, ms });
  });

  it.each(['30', '0', '1.5', ''])('refuses %j with a hint to add a unit', (text) => {
    const r = parseDuration(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/unit|empty/);
  });

  it.each(['30m1h', '1s1s', '5 s', '1.5s', '-1s', '10sec', '1d'])('refuses %j', (text) => {
    expect(parseDuration(text).ok).toBe(false);
  });

  it('round-trips through formatPlanDuration for any whole number of ms', () => {
    assertProperty(
      fc.property(fc.integer({ min: 0, max: 10 * 86_400_000 }), (ms) => {
        expect(parseDuration(formatPlanDuration(ms))).toEqual({ ok: true, ms });
      }),
    );
  });

  it('never throws on arbitrary text', () => {
    assertProperty(fc.property(fc.string(), (s) => void parseDuration(s)));
  });
});
