/**
 * The instance's rate limit as a hold like any other: the cap in force is 0 while it holds reads,
 * recorded with its end, said as "HELD by the instance's rate limit until HH:MM:SS" on the
 * progress line and in status (holdOf), and as `run.paused` with `until` on `--events`.
 */
import { describe, expect, it } from 'vitest';
import { createHarness, testPlan } from '../../test/support/drain-harness.js';
import type { RateHold } from '../api/rate-pacer.js';
import { holdOf } from '../events/hold.js';
import { renderProgressLine, textWidth } from '../report/progress.js';
import { capInForce, recordRateHold } from './cap.js';

const capEvents = (h: ReturnType<typeof createHarness>) =>
  h.store
    .readEvents()
    .filter((e) => e.type === 'cap.changed')
    .map((e) => e.data);

function held() {
  const h = createHarness(testPlan({ move: { concurrency: 8 } }));
  let hold: RateHold | null = null;
  const deps = { ...h.deps, api: Object.assign(Object.create(h.fake) as typeof h.fake, { rateHold: () => hold }) };
  return { h, deps, set: (x: RateHold | null) => void (hold = x) };
}

describe("the instance's rate limit holds the run", () => {
  it('makes the cap 0 until its window ends, then gives the plan its cap back', async () => {
    const { h, deps, set } = held();
    const until = h.clock.now() + 90_000;
    set({ key: 'projects_api', until, reason: 'GET /projects: 2000 per 10m (projects_api)' });
    expect(await capInForce(deps)).toMatchObject({ cap: 0, ceiling: 8, limit: 'ratelimit', until });
    h.clock.t += 90_000;
    expect(await capInForce(deps)).toMatchObject({ cap: 8, limit: 'plan' });
    expect(capEvents(h).map((d) => d.limit)).toEqual(['ratelimit', 'plan']);
  });

  it('is recorded beside the loop only when a hold starts, moves its end or ends; a pause stays a pause', async () => {
    const { h, deps, set } = held();
    recordRateHold(deps);
    expect(capEvents(h)).toEqual([]);
    set({ key: 'project_api', until: h.clock.now() + 30_000, reason: 'GET /projects/:id: 400 per 1m (project_api)' });
    recordRateHold(deps);
    recordRateHold(deps);
    set({ key: 'project_api', until: h.clock.now() + 60_000, reason: 'GET /projects/:id: 400 per 1m (project_api)' });
    recordRateHold(deps);
    set(null);
    recordRateHold(deps);
    expect(capEvents(h).map((d) => [d.limit, d.cap])).toEqual([
      ['ratelimit', 0],
      ['ratelimit', 0],
      ['plan', 8],
    ]);
    h.store.writeControl({ paused: true }, 1);
    await capInForce(deps);
    set({ key: 'project_api', until: h.clock.now() + 60_000, reason: 'x' });
    recordRateHold(deps);
    expect(capEvents(h).at(-1)).toMatchObject({ limit: 'paused' });
  });

  it('says until when, to the second, in the plan time zone', () => {
    const until = Date.parse('2026-06-01T12:09:05Z');
    const hold = holdOf(
      {
        cap: 0,
        ceiling: 8,
        paused: false,
        limit: 'ratelimit',
        reason: 'GET /projects: 3 per 10m (projects_api)',
        until,
      },
      null,
      'Europe/Berlin',
    );
    expect(hold).toMatchObject({
      by: 'ratelimit',
      stopped: true,
      full: "HELD by the instance's rate limit until 14:09:05",
      short: 'HELD (rate limit) to 14:09:05',
      detail: 'GET /projects: 3 per 10m (projects_api)',
    });
  });

  it('keeps the hold and its end on an 80-column line, before the label', () => {
    const until = Date.parse('2026-06-01T12:09:05Z');
    const hold = holdOf(
      {
        cap: 0,
        ceiling: 8,
        paused: false,
        limit: 'ratelimit',
        reason: 'GET /projects: 2000 per 10m (projects_api)',
        until,
      },
      null,
    );
    const line = renderProgressLine(
      {
        step: 'drain nfs-1,nfs-2/projects,snippets,groups',
        summary: {
          counts: [
            { kind: 'projects', source: 'nfs-1', state: 'moved', n: 800 },
            { kind: 'projects', source: 'nfs-1', state: 'pending', n: 200 },
          ],
          retrying: [],
        },
        elapsedMs: 600_000,
        hold,
        perMinute: 25,
      },
      { width: 79 },
    );
    expect(textWidth(line)).toBeLessThanOrEqual(79);
    expect(line).toMatch(/HELD/);
    expect(line).toContain('800/1000 done');
  });
});
