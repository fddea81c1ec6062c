import { describe, expect, it } from 'vitest';
import { estimateDuration, rateLimitWaitMs } from './estimate.js';

const base = { items: 1000, bytes: 0, sized: 0, maxBytes: 0, concurrency: 10 };

describe("the dry run's estimate with the instance's rate limits", () => {
  it('adds a window for every budget of listing pages past the first', () => {
    // A census of 1M projects lists 10,000 pages (and verification as many again) at 1,900 per 10 minutes.
    const census = { route: 'GET /projects', pages: 20_000, budget: 1900, windowMs: 600_000 };
    expect(rateLimitWaitMs({ ...base, rateLimited: [census] }).ms).toBe(10 * 600_000);
    const e = estimateDuration({ ...base, rateLimited: [census] });
    expect(e.ms).toBe(estimateDuration(base).ms + 6_000_000);
    expect(e.assumptions).toContain("held by the instance's rate limit (20000 pages of GET /projects at 1900 per");
  });

  it('adds nothing when the pages fit one window, or no limit is shown', () => {
    const fits = { route: 'GET /projects', pages: 1900, budget: 1900, windowMs: 600_000 };
    expect(estimateDuration({ ...base, rateLimited: [fits] })).toEqual(estimateDuration(base));
    expect(estimateDuration({ ...base, rateLimited: [] })).toEqual(estimateDuration(base));
  });
});
