import { describe, expect, it } from 'vitest';
import { createFakeApi } from '../../test/support/fake-runtime-deps.js';
import { testPlan } from '../../test/support/drain-harness.js';
import { PlanError } from '../plan/errors.js';
import { parsePlanText } from '../plan/load.js';
import type { Plan } from '../plan/types.js';
import { THROTTLE_DEFAULTS } from '../plan/values.js';
import { createGate } from './gate.js';
import { createRuleWatch } from './rules.js';
import type { GateChange } from './gate.js';

const PLAN = `version: 1
name: nightly
instance:
  url: https://gitlab.example.com
  token: \${GITLAB_TOKEN}
move:
  from: [nfs-1]
  to: cluster
`;
const parse = (extra: string) =>
  parsePlanText(PLAN + extra, 'plan.yaml', {
    env: { GITLAB_TOKEN: 'glpat-Zx8Kd2mQpL0vZ7rT4yWnB' },
    baseDir: '/p',
    readFile: () => undefined,
  });
function problems(extra: string): string[] {
  try {
    parse(extra);
  } catch (err) {
    expect(err).toBeInstanceOf(PlanError);
    return (err as PlanError).problems.map(
      (p) => `${p.line}:${p.col} ${p.path} ${p.message}${p.rule ? ` [${p.rule}]` : ''}`,
    );
  }
  throw new Error('expected a PlanError');
}

describe('plan: schedule and throttle sections', () => {
  it('reads windows in a zone, and a throttle with defaults filled in', () => {
    const { plan } = parse(
      'schedule:\n  timezone: Europe/Berlin\n  windows: ["Mon-Fri 22:00-06:00", "Sat 00:00-Mon 00:00"]\nthrottle:\n  latency_p90: 1500ms\n',
    );
    expect(plan.schedule).toEqual({
      timezone: 'Europe/Berlin',
      windows: ['Mon-Fri 22:00-06:00', 'Sat 00:00-Mon 00:00'],
    });
    // The documented defaults (docs/plan.md), written out rather than read from the module under test.
    expect(plan.throttle).toEqual({
      latencyP90Ms: 1500,
      maxFailureRate: 0.2,
      max429Rate: 0.05,
      durationDrift: 3,
      healthEveryMs: 30_000,
      increaseEveryMs: 30_000,
      decrease: 0.5,
    });
  });

  it('leaves both absent when the plan has neither, and defaults UTC', () => {
    expect(parse('').plan.schedule).toBeUndefined();
    expect(parse('').plan.throttle).toBeUndefined();
    expect(JSON.stringify(parse('').plan)).not.toMatch(/"schedule"|"throttle"/);
    expect(parse('schedule:\n  windows: ["daily 01:00-03:00"]\n').plan.schedule?.timezone).toBe('UTC');
  });

  it('names each bad window, zone and throttle value at its line:col', () => {
    expect(
      problems(
        'schedule:\n  timezone: Mars/Olympus\n  windows: ["Mon-Fri 22:00-06:00", "Weekdays 9-5"]\nthrottle:\n  decrease: 2\n  latency_p90: 3\n',
      ),
    ).toEqual([
      '10:13 schedule.timezone "Mars/Olympus" is not an IANA time zone this system knows (e.g. Europe/Berlin, America/New_York, UTC)',
      expect.stringMatching(
        /^11:36 schedule\.windows\[1\] "Weekdays 9-5" is not a window: write "Mon-Fri 22:00-06:00"/,
      ),
      '13:13 throttle.decrease expected a number from 0.05 to 0.95',
      '14:16 throttle.latency_p90 a bare number is ambiguous; write a unit, e.g. "3s" or "3ms"',
    ]);
  });

  it('refuses throttle durations of 0, or below what the field allows, at their line:col', () => {
    // 0 read /-/readiness and grew the cap back at every pass; a p90 of 0 cut it at every sample.
    expect(problems('throttle:\n  health_every: 0s\n  increase_every: 0ms\n  latency_p90: 0ms\n')).toEqual([
      '10:17 throttle.health_every 0s is out of range: allowed 100ms to 1h [durations-in-range]',
      '11:19 throttle.increase_every 0s is out of range: allowed 100ms to 1h [durations-in-range]',
      '12:16 throttle.latency_p90 0s is out of range: allowed 10ms to 10m [durations-in-range]',
    ]);
    expect(
      problems('throttle: { latency_p90: 11m, health_every: 2h, increase_every: 99ms }\n').map((p) =>
        p.split(' ').slice(0, 3).join(' '),
      ),
    ).toEqual(['9:26 throttle.latency_p90 11m', '9:45 throttle.health_every 2h', '9:65 throttle.increase_every 99ms']);
    expect(
      parse('throttle: { latency_p90: 10ms, health_every: 100ms, increase_every: 1h }\n').plan.throttle,
    ).toMatchObject({ latencyP90Ms: 10, healthEveryMs: 100, increaseEveryMs: 3_600_000 });
    expect(parse('throttle:\n').plan.throttle).toEqual(THROTTLE_DEFAULTS);
  });

  it('refuses a window that ends when it starts at its line:col', () => {
    expect(problems('schedule:\n  windows:\n    - "Mon-Fri 22:00-06:00"\n    - daily 03:00-03:00\n')).toEqual([
      '12:7 schedule.windows[1] "daily 03:00-03:00" ends when it starts; for a schedule that is always open write "daily 00:00-24:00" (or leave out schedule), for 24 hours from a time write a span such as "Mon 03:00-Tue 03:00"',
    ]);
  });

  it('refuses a schedule without windows and unknown fields', () => {
    expect(problems('schedule:\n  timezone: UTC\n').join('\n')).toMatch(/schedule\.windows list at least one window/);
    expect(problems('throttle:\n  latency: 2s\n').join('\n')).toMatch(/throttle\.latency/);
  });
});

function throttled(over: Partial<Plan> = {}): Plan {
  return {
    ...testPlan({ move: { concurrency: 16 }, poll: { intervalMs: 1000 } }),
    throttle: { ...THROTTLE_DEFAULTS, increaseEveryMs: 10_000 },
    ...over,
  };
}

describe('throttle: additive increase, multiplicative decrease', () => {
  it('halves the cap on slow answers, at most once per poll interval, and grows it back by one per increase_every', async () => {
    const changes: GateChange[] = [];
    const gate = createGate({ plan: throttled(), api: createFakeApi(), onChange: (c) => changes.push(c) });
    let now = 1_000_000;
    expect((await gate.decide(16, now)).cap).toBe(16);
    for (let i = 0; i < 20; i++) gate.noteResponse(200, 5_000);
    expect((await gate.decide(16, (now += 100))).cap).toBe(8);
    for (let i = 0; i < 20; i++) gate.noteResponse(200, 5_000);
    // Within the same poll interval: no second cut.
    expect((await gate.decide(16, (now += 100))).cap).toBe(8);
    expect((await gate.decide(16, (now += 1_000))).cap).toBe(4);
    expect(changes.at(-1)).toMatchObject({
      type: 'throttle.cap',
      cap: 4,
      reason: expect.stringMatching(/latency p90 5000 ms above throttle.latency_p90 2000 ms/),
    });
    // Healthy again: +1 per 10 s, never above the ceiling.
    for (let i = 0; i < 50; i++) gate.noteResponse(200, 50);
    const caps: number[] = [];
    for (let i = 0; i < 30; i++) caps.push((await gate.decide(16, (now += 10_000))).cap);
    expect(caps.slice(0, 3)).toEqual([5, 6, 7]);
    expect(Math.max(...caps)).toBe(16);
  });

  it('never exceeds the operator ceiling, which can be lower than move.concurrency', async () => {
    const gate = createGate({ plan: throttled(), api: createFakeApi() });
    let now = 0;
    for (let i = 0; i < 100; i++) expect((await gate.decide(3, (now += 60_000))).cap).toBeLessThanOrEqual(3);
    expect((await gate.decide(16, (now += 60_000))).cap).toBeLessThanOrEqual(16);
  });

  it('pauses scheduling while a source or the destination is unhealthy in /-/readiness, and starts again at one', async () => {
    const api = createFakeApi();
    const gate = createGate({ plan: throttled(), api });
    let now = 0;
    expect((await gate.decide(16, now)).cap).toBe(16);
    api.state.readiness = {
      status: 'ok',
      gitaly: [
        { storage: 'cluster', ok: false, message: 'down' },
        { storage: 'nfs-1', ok: true, message: null },
      ],
    };
    const paused = await gate.decide(16, (now += 31_000));
    expect(paused).toMatchObject({
      cap: 0,
      reason: expect.stringMatching(/Gitaly unhealthy in \/-\/readiness: cluster/),
    });
    api.state.readiness = { status: 'ok', gitaly: [{ storage: 'cluster', ok: true, message: null }] };
    expect((await gate.decide(16, (now += 31_000))).cap).toBe(1);
  });

  it('lowers the cap when moves fail or 429s pile up, and when moves slow down', async () => {
    const fail = createGate({ plan: throttled(), api: createFakeApi() });
    for (let i = 0; i < 20; i++) fail.noteMove(i % 2 === 0, 1000);
    expect((await fail.decide(16, 0)).reason).toMatch(/50% of recent moves failed/);
    const limited = createGate({ plan: throttled(), api: createFakeApi() });
    for (let i = 0; i < 20; i++) limited.noteResponse(429, 10);
    expect((await limited.decide(16, 0)).reason).toMatch(/answered 429/);
    const slow = createGate({ plan: throttled(), api: createFakeApi() });
    for (let i = 0; i < 50; i++) slow.noteMove(false, 1000);
    for (let i = 0; i < 20; i++) slow.noteMove(false, 5000);
    expect((await slow.decide(16, 0)).reason).toMatch(/5\.0x as long as the first ones/);
  });

  it('without a throttle or windows the cap is the ceiling and nothing is read', async () => {
    const api = createFakeApi();
    const gate = createGate({ plan: testPlan(), api });
    expect(await gate.decide(7, 0)).toEqual({ cap: 7, limit: null, reason: null, waitingUntil: null });
    expect(api.state.calls).toEqual([]);
  });
});

describe('windows in the gate', () => {
  const plan = { ...testPlan(), schedule: { timezone: 'UTC', windows: ['Mon-Fri 22:00-06:00'] } };
  it('is 0 outside every window and says when the next opens; full inside; events at each change', async () => {
    const changes: GateChange[] = [];
    const gate = createGate({ plan, api: createFakeApi(), onChange: (c) => changes.push(c) });
    const sat = Date.parse('2026-11-28T12:00:00Z');
    expect(await gate.decide(10, sat)).toEqual({
      cap: 0,
      limit: 'window',
      reason: 'outside every maintenance window',
      waitingUntil: Date.parse('2026-11-30T22:00:00Z'),
    });
    expect((await gate.decide(10, Date.parse('2026-11-30T22:00:00Z'))).cap).toBe(10);
    expect(changes.map((c) => c.type)).toEqual(['window.closed', 'window.opened']);
  });

  it('--ignore-schedule schedules anyway and reports the window as ignored', async () => {
    const changes: GateChange[] = [];
    const gate = createGate({ plan, api: createFakeApi(), ignoreSchedule: true, onChange: (c) => changes.push(c) });
    expect((await gate.decide(10, Date.parse('2026-11-28T12:00:00Z'))).cap).toBe(10);
    expect(changes[0]).toMatchObject({ type: 'window.closed', reason: 'outside every window, but --ignore-schedule' });
  });
});

describe('a drain under maintenance windows (fake clock)', () => {
  it('schedules nothing outside a window, follows moves in flight to their end, and goes on when the next window opens', async () => {
    const { createHarness, range } = await import('../../test/support/drain-harness.js');
    const { runDrain } = await import('../actors/drain/run.js');
    const plan = {
      ...testPlan({ move: { concurrency: 5, kinds: ['projects'] } }),
      schedule: { timezone: 'UTC', windows: ['Mon-Fri 22:00-06:00'] },
    };
    const h = createHarness(plan);
    h.clock.t = Date.parse('2026-12-01T05:59:45Z'); // Tuesday, 15 s before Monday night's window closes
    h.fake.addItems('projects', 'nfs-1', range(1, 40));
    const changes: GateChange[] = [];
    h.deps.gate = createGate({ plan, api: h.fake, onChange: (c) => changes.push(c) });
    const posts: number[] = [];
    const pollsWhileClosed: number[] = [];
    const closesAt = Date.parse('2026-12-01T06:00:00Z');
    const opensAt = Date.parse('2026-12-01T22:00:00Z');
    h.fake.onRequest = (name, mutating) => {
      if (mutating && name === 'scheduleMove') posts.push(h.clock.now());
      if (name === 'listMoves' && h.clock.now() >= closesAt && h.clock.now() < opensAt)
        pollsWhileClosed.push(h.clock.now());
    };
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 40, quarantined: 0, remaining: 0 });
    expect(posts.length).toBe(40);
    // Every POST inside a window: before Tuesday 06:00, or from Tuesday 22:00 on.
    expect(posts.filter((t) => t >= closesAt && t < opensAt)).toEqual([]);
    expect(posts.some((t) => t < closesAt)).toBe(true);
    expect(posts.some((t) => t >= opensAt)).toBe(true);
    // The moves in flight at 06:00 were still polled to their end after the window closed.
    expect(pollsWhileClosed.length).toBeGreaterThan(0);
    expect(changes.map((c) => c.type)).toEqual(['window.opened', 'window.closed', 'window.opened']);
    expect(h.fake.violations).toEqual([]);
  });
});

describe('a drain under the throttle (fake instance)', () => {
  it('failing moves drive the cap down, recovery brings it back up, and it never passes the ceiling', async () => {
    const { createHarness, range } = await import('../../test/support/drain-harness.js');
    const { runDrain } = await import('../actors/drain/run.js');
    const plan: Plan = {
      ...testPlan({
        move: { concurrency: 16, kinds: ['projects'] },
        poll: { intervalMs: 1000 },
        retry: { maxAttempts: 5, backoffMs: 1000 },
      }),
      throttle: { ...THROTTLE_DEFAULTS, increaseEveryMs: 2000, healthEveryMs: 3_600_000 },
    };
    const h = createHarness(plan, { startDelayMs: 100, durationMs: 900 });
    h.fake.addItems('projects', 'nfs-1', range(1, 300));
    // The first 60 projects' first moves fail: a bad patch, then the instance recovers.
    for (const id of range(1, 60)) h.fake.script('projects', id, 'fail', 'ok');
    const caps: number[] = [];
    h.deps.gate = createGate({ plan, api: h.fake, onChange: (c) => caps.push(c.cap) });
    const r = await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(r).toEqual({ moved: 300, quarantined: 0, remaining: 0 });
    const low = Math.min(...caps);
    expect(low).toBeLessThan(16);
    // After the lowest point the cap grows again.
    expect(Math.max(...caps.slice(caps.indexOf(low)))).toBeGreaterThan(low);
    expect(Math.max(...caps)).toBeLessThanOrEqual(16);
    expect(h.fake.peakInFlight).toBeLessThanOrEqual(16);
  });

  it('the operator ceiling from `control` holds under the throttle', async () => {
    const { createHarness, range } = await import('../../test/support/drain-harness.js');
    const { runDrain } = await import('../actors/drain/run.js');
    const plan: Plan = {
      ...testPlan({ move: { concurrency: 16, kinds: ['projects'] } }),
      throttle: { ...THROTTLE_DEFAULTS },
    };
    const h = createHarness(plan);
    h.fake.addItems('projects', 'nfs-1', range(1, 60));
    h.store.writeControl({ concurrency: 3 }, h.clock.now());
    h.deps.gate = createGate({ plan, api: h.fake });
    await runDrain(h.deps, { source: 'nfs-1', kind: 'projects' });
    expect(h.fake.peakInFlight).toBeLessThanOrEqual(3);
  });
});

describe('the gate with throttle rules', () => {
  it('a holding pause rule makes the cap 0 with limit rule; a holding cut rule cuts like a bad signal', async () => {
    const answers: Record<string, number> = { p: 0, c: 0 };
    const client = {
      query: (q: string) => Promise.resolve([{ value: answers[q] ?? 0, labels: {} }]),
      close: () => Promise.resolve(),
    };
    const rules = createRuleWatch({
      rules: [
        { name: 'p', query: 'p', above: 0.5, below: null, action: 'pause', forMs: 0 },
        { name: 'c', query: 'c', above: 0.5, below: null, action: 'cut', forMs: 0 },
      ],
      client,
      everyMs: 100,
      onError: 'pause',
    });
    const plan: Plan = {
      ...testPlan({ move: { concurrency: 8 }, poll: { intervalMs: 1000 } }),
      throttle: { ...THROTTLE_DEFAULTS, healthEveryMs: 100 },
    };
    const gate = createGate({ plan, api: createFakeApi(), rules });
    expect(await gate.decide(8, 0)).toMatchObject({ cap: 8, limit: null });
    answers.p = 1;
    expect(await gate.decide(8, 1000)).toMatchObject({
      cap: 0,
      limit: 'rule',
      reason: 'rule p: 1 above 0.5: no new move while it holds',
      rule: { name: 'p', since: 1000 },
    });
    answers.p = 0;
    answers.c = 1;
    expect(await gate.decide(8, 2000)).toMatchObject({
      cap: 4,
      limit: 'throttle',
      reason: 'rule c: 1 above 0.5 (action: cut)',
    });
  });
});
