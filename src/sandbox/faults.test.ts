import { systemClock } from '../shared/clock.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { FaultOptions } from './faults.js';
import {
  FaultOptionsError,
  INJECTED_FAILURES,
  NO_FAULTS,
  createFaults,
  parseBrokenItems,
  parseMoveFailures,
  totalFailRate,
} from './faults.js';

const opts = (o: Partial<FaultOptions>): FaultOptions => ({ ...NO_FAULTS, ...o });

/** A request/response pair that records what the injector did. */
function exchange(url = '/api/v4/projects', headers: Record<string, string> = { 'private-token': 'x' }) {
  const out = { status: 0, headers: {} as Record<string, string>, body: '', destroyed: false };
  const req = {
    url,
    headers,
    socket: {
      destroy: () => {
        out.destroyed = true;
      },
    },
  } as unknown as IncomingMessage;
  const res = {
    writeHead(status: number, headers: Record<string, string>) {
      out.status = status;
      out.headers = headers;
    },
    end(body: string) {
      out.body = body;
    },
  } as unknown as ServerResponse;
  return { req, res, out };
}

describe('move fates', () => {
  it('are deterministic under the seed and near the configured rates', () => {
    const fates = (seed: number) => {
      const f = createFaults(opts({ seed, moveFailRate: 0.2, stuckRate: 0.1 }));
      return Array.from({ length: 2000 }, (_, i) => f.moveFate('project', i + 1));
    };
    const a = fates(7);
    expect(fates(7)).toEqual(a);
    expect(fates(8)).not.toEqual(a);
    const n = (k: string) => a.filter((x) => x === k).length;
    expect(n('stuck')).toBeGreaterThan(140);
    expect(n('stuck')).toBeLessThan(260);
    expect(n('fail') + n('cleanup_fail')).toBeGreaterThan(320);
    expect(n('fail') + n('cleanup_fail')).toBeLessThan(480);
    expect(n('cleanup_fail')).toBeGreaterThan(0);
    expect(n('cleanup_fail')).toBeLessThan(n('fail'));
  });

  it('draws failed_after_switch after the other fates, keyed like them', () => {
    const fates = (seed: number) => {
      const f = createFaults(opts({ seed, interruptRate: 0.1, failAfterSwitchRate: 0.3 }));
      return { fates: Array.from({ length: 1000 }, (_, i) => f.moveFate('group', i + 1)), counts: f.counts() };
    };
    const a = fates(5);
    expect(fates(5)).toEqual(a);
    const n = a.fates.filter((x) => x === 'failed_after_switch').length;
    expect(n).toBeGreaterThan(240);
    expect(n).toBeLessThan(360);
    expect(a.counts.move_failed_after_switch).toBe(n);
    // Adding the new rate leaves the fates the other rates drew where they were.
    const without = createFaults(opts({ seed: 5, interruptRate: 0.1 }));
    const interrupted = (list: string[]) => list.flatMap((x, i) => (x === 'interrupted' ? [i] : []));
    expect(interrupted(a.fates)).toEqual(
      interrupted(Array.from({ length: 1000 }, (_, i) => without.moveFate('group', i + 1))),
    );
  });

  it('injects each failure class by its share, after the other rates, whatever order they are typed in', () => {
    const names = Object.keys(INJECTED_FAILURES) as (keyof typeof INJECTED_FAILURES)[];
    const typed =
      'no-space=0.08,checksum=0.08,read-only=0.08,lease-held=0.08,source-missing=0.08,gitaly-unavailable=0.08,stuck-queued=0.08,stuck-running=0.08,tar-failed=0.08,timeout=0.08';
    expect(parseMoveFailures(typed)).toEqual(Object.fromEntries(names.map((n) => [n, 0.08])));
    const shuffled = parseMoveFailures(typed.split(',').reverse().join(','));
    const run = (moveFailures: ReturnType<typeof parseMoveFailures>) => {
      const f = createFaults(opts({ seed: 9, moveFailRate: 0.1, moveFailures }));
      return { fates: Array.from({ length: 2000 }, (_, i) => f.moveFate('project', i + 1)), counts: f.counts() };
    };
    const a = run(parseMoveFailures(typed));
    expect(run(shuffled)).toEqual(a);
    expect(totalFailRate(opts({ moveFailRate: 0.1, moveFailures: parseMoveFailures(typed) }))).toBeCloseTo(0.9);
    for (const n of names) {
      const got = a.counts[`move_class_${n}`] ?? 0;
      expect(got, n).toBeGreaterThan(110);
      expect(got, n).toBeLessThan(210);
    }
    expect(a.fates.filter((x) => x === 'stuck_queued').length).toBe(a.counts['move_class_stuck-queued']);
    // The existing rate draws the same fates with the classes added as without them.
    const alone = createFaults(opts({ seed: 9, moveFailRate: 0.1 }));
    const failing = (list: string[]) => list.flatMap((x, i) => (x === 'fail' || x === 'cleanup_fail' ? [i] : []));
    const before = Array.from({ length: 2000 }, (_, i) => alone.moveFate('project', i + 1));
    for (const i of failing(before)) expect(a.fates[i]).toBe(before[i]);
    expect(() => parseMoveFailures('checksum=0.5,wrong=0.1')).toThrow(/class=rate/);
    expect(() => parseMoveFailures('checksum=2')).toThrow(FaultOptionsError);
    expect(() => parseMoveFailures('checksum=0.1,checksum=0.1')).toThrow(/checksum is given twice/);
    expect(() => createFaults(opts({ moveFailRate: 0.6, moveFailures: { 'no-space': 0.5 } }))).toThrow(
      FaultOptionsError,
    );
  });

  it('counts each fate and lets a rescheduled move draw again', () => {
    const f = createFaults(opts({ seed: 3, moveFailRate: 0.5 }));
    const attempts = Array.from({ length: 30 }, () => f.moveFate('snippet', 4));
    expect(attempts).toContain('ok');
    expect(attempts.some((x) => x !== 'ok')).toBe(true);
    const c = f.counts();
    expect((c.move_fail ?? 0) + (c.move_cleanup_fail ?? 0)).toBe(attempts.filter((x) => x !== 'ok').length);
  });

  it('always fails broken items, whatever the kind spelling', () => {
    const f = createFaults(opts({ brokenItems: ['projects:12', 'group:3'] }));
    expect([1, 2, 3].map(() => f.moveFate('project', 12))).toEqual(['fail', 'fail', 'fail']);
    expect(f.moveFate('group', 3)).toBe('fail');
    expect(f.moveFate('project', 13)).toBe('ok');
    expect(f.moveFate('snippet', 12)).toBe('ok');
    expect(f.counts()).toEqual({ move_broken: 4 });
  });

  it('refuses unusable options', () => {
    expect(() => parseBrokenItems(['project-1'])).toThrow(FaultOptionsError);
    expect(() => parseBrokenItems(['wiki:1'])).toThrow(/kind:id/);
    for (const bad of [
      { errorRate: 1.5 },
      { resetRate: -0.1 },
      { moveFailRate: 0.7, stuckRate: 0.5 },
      { latencyMs: -1 },
      { rateLimit: 0 },
      { failAfterSwitchRate: 1.2 },
      { interruptRate: 0.5, failAfterSwitchRate: 0.6 },
    ]) {
      expect(() => createFaults(opts(bad))).toThrow(FaultOptionsError);
    }
  });
});

describe('request faults', () => {
  it('rate-limits per fixed minute window with GitLab headers', async () => {
    let t = Date.UTC(2026, 0, 1, 12, 0, 30);
    const f = createFaults(opts({ rateLimit: 2 }), { ...systemClock, now: () => t });
    const results = [];
    for (let i = 0; i < 3; i++) {
      const x = exchange();
      results.push({ answered: await f.onRequest(x.req, x.res), ...x.out });
    }
    expect(results.map((r) => r.answered)).toEqual([false, false, true]);
    const limited = results[2] as (typeof results)[number];
    expect(limited.status).toBe(429);
    expect(limited.body).toBe('Retry later\n');
    expect(limited.headers).toMatchObject({
      'retry-after': '30',
      'ratelimit-limit': '2',
      'ratelimit-observed': '3',
      'ratelimit-remaining': '0',
      'ratelimit-name': 'throttle_authenticated_api',
      'ratelimit-reset': String(Date.UTC(2026, 0, 1, 12, 1, 0) / 1000),
      'ratelimit-resettime': 'Thu, 01 Jan 2026 12:01:00 GMT',
    });
    // Health probes do not count, and the next window starts afresh.
    const probe = exchange('/-/readiness');
    expect(await f.onRequest(probe.req, probe.res)).toBe(false);
    const anonymous = exchange('/api/v4/projects', {});
    expect(await f.onRequest(anonymous.req, anonymous.res)).toBe(true);
    expect(anonymous.out.headers['ratelimit-name']).toBe('throttle_unauthenticated_api');
    t += 30_000;
    const later = exchange();
    expect(await f.onRequest(later.req, later.res)).toBe(false);
    expect(f.counts()).toEqual({ rate_limit: 2 });
  });

  it('draws resets and errors from the seeded sequence', async () => {
    const run = async (seed: number) => {
      const f = createFaults(opts({ seed, errorRate: 0.3, resetRate: 0.2 }));
      const seen: string[] = [];
      for (let i = 0; i < 200; i++) {
        const x = exchange();
        await f.onRequest(x.req, x.res);
        seen.push(x.out.destroyed ? 'reset' : x.out.status === 503 ? 'error' : 'ok');
      }
      return { seen, counts: f.counts() };
    };
    const a = await run(11);
    expect((await run(11)).seen).toEqual(a.seen);
    expect(a.counts).toEqual({
      reset: a.seen.filter((s) => s === 'reset').length,
      error: a.seen.filter((s) => s === 'error').length,
    });
    expect(a.counts.reset).toBeGreaterThan(20);
    expect(a.counts.error).toBeGreaterThan(30);
  });
});
