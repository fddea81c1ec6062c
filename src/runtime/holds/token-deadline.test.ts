import { describe, expect, it } from 'vitest';
import { tokenOutlivedWarning } from './token-deadline.js';

describe('tokenOutlivedWarning', () => {
  const now = Date.parse('2026-11-22T12:00:00Z');
  const day = 86_400_000;

  it('warns when the estimated end is past the expiry', () => {
    expect(tokenOutlivedWarning('2026-11-24', now, 3 * day)).toMatch(
      /expires on 2026-11-24, before the estimated end \(2026-11-25 12:00 UTC\)/,
    );
  });

  it('stays quiet when the run ends first, or when expiry or ETA are unknown', () => {
    expect(tokenOutlivedWarning('2026-11-24', now, day)).toBeNull();
    expect(tokenOutlivedWarning(null, now, 30 * day)).toBeNull();
    expect(tokenOutlivedWarning('2026-11-24', now, null)).toBeNull();
  });
});
