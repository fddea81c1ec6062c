/**
 * A hung instance, not a refused one: the sandbox process is stopped with SIGSTOP mid-drain (the
 * kernel still accepts connections, nothing answers them), so every request of the run ends in
 * its `instance.timeout`. The run must hold on it as it holds on refused connections, say so, and
 * go on once the process is continued, with nothing moved twice. The refused case, and the same at
 * two real minutes, are in test/cli-outage.test.ts and `npm run outage`.
 */
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runOutage } from './support/outage-run.js';

describe('an instance that stops answering mid-drain (SIGSTOP, then SIGCONT)', { timeout: 120_000 }, () => {
  it('holds once its requests have timed out and used their retries, follows the moves in flight, and ends 0 with each item moved once', async () => {
    const r = await runOutage({
      mode: 'freeze',
      // Longer than a request's timeout and its retries (1 s each, backoff 0.5 s, 1 s, 2 s): held;
      // it comes back 1.5 s after the run recorded the hold (12 s at most).
      downMs: 12_000,
      upOnceHeldMs: 1500,
      projects: 16,
      snippets: 2,
      groups: 0,
      concurrency: 4,
      workers: 4,
      moveDurationMs: 1500,
      timeout: '1s',
      outageWait: '30m',
      retryMs: 200,
      afterMs: 60_000,
      expectHold: true,
    });
    expect(r.failures).toEqual([]);
    expect(r.inFlightAtOutage).toBeGreaterThanOrEqual(4);
    expect(r.heldLines.join('\n')).toMatch(/HELD: the instance has not answered since \d\d:\d\d:\d\d UTC \(\w+\)/);
    expect(r.answered).toHaveLength(1);
    expect(r.run.code).toBe(0);
    expect(r.verdict.onDestination).toBe(r.verdict.items);
    expect(r.verdict.duplicates).toEqual([]);
    rmSync(r.dir, { recursive: true, force: true });
  });
});
