import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createFakeApi } from '../../../test/support/fake-runtime-deps.js';
import { testPlan } from '../../../test/support/drain-harness.js';
import type { PromSample } from '../../api/prometheus.js';
import { parseControlChange } from '../../cli/control.js';
import { parseThresholdChanges } from '../../cli/control-thresholds.js';
import { canonicalJson } from '../../plan/hash.js';
import type { Plan } from '../../plan/types.js';
import { THROTTLE_DEFAULTS } from '../../plan/values.js';
import { renderStatus } from '../../report/status.js';
import { createGate } from '../../schedule/gate.js';
import { createRuleWatch } from '../../schedule/rules.js';
import { openCheckpoint } from '../../store/checkpoint.js';
import { applyControl } from './control.js';
import { readStatus } from '../status.js';

const BY = { user: 'ops', host: 'bastion', pid: 4242 };
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A checkpoint whose run recorded a plan with a throttle, a rule `disk-busy` (above 0.9) and `free` (below 10). */
function checkpointOf(plan: Record<string, unknown> | null): string {
  const dir = mkdtempSync(join(tmpdir(), 'thresholds-'));
  dirs.push(dir);
  const file = join(dir, 'it.db');
  const store = openCheckpoint(file);
  store.saveRun({
    planName: 'it',
    planHash: 'h',
    machineVersion: 1,
    snapshot: {},
    plan: plan ? canonicalJson(plan) : null,
  });
  store.close();
  return file;
}

const PLAN = {
  retry: { maxAttempts: 3, pauseAfter: { failures: 20, withinMs: 900_000 } },
  throttle: {
    latencyP90Ms: 2_000,
    rules: [
      { name: 'disk-busy', query: 'q1', above: 0.9, below: null, action: 'pause', forMs: 0 },
      { name: 'free', query: 'q2', above: null, below: 10, action: 'cut', forMs: 0 },
    ],
  },
};

const ask = (file: string, opts: Parameters<typeof parseThresholdChanges>[0], at = 1_000) =>
  applyControl(file, { thresholds: { changes: parseThresholdChanges(opts), by: BY } }, at);

describe('shardmove control: thresholds changed live', () => {
  it('parses --breaker, --rule NAME --above|--below X and --latency-p90, and refuses each bad value by name', () => {
    expect(parseThresholdChanges({ breaker: '{rate: 5%, within: 15m, min_moves: 50}' })).toEqual([
      { name: 'breaker', value: { rate: 0.05, withinMs: 900_000, minMoves: 50 } },
    ]);
    expect(parseThresholdChanges({ breaker: 'off', latencyP90: '5s', rule: 'disk-busy', above: '0.95' })).toEqual([
      { name: 'breaker', value: 'off' },
      { name: 'latency_p90', value: 5_000 },
      { name: 'rule:disk-busy', rule: 'disk-busy', op: 'above', value: 0.95 },
    ]);
    expect(parseThresholdChanges({ breaker: 'plan', latencyP90: 'plan', rule: 'free', below: 'plan' })).toEqual([
      { name: 'breaker', value: null },
      { name: 'latency_p90', value: null },
      { name: 'rule:free', rule: 'free', op: 'below', value: null },
    ]);
    const refused: Array<[Parameters<typeof parseThresholdChanges>[0], RegExp]> = [
      [{ breaker: '{rate: 5, within: 15m}' }, /--breaker "\{rate: 5, within: 15m\}": rate: 5 is more than all of them/],
      [{ breaker: '20' }, /--breaker "20": breaker: expected a mapping/],
      [{ breaker: '{failures: 20}' }, /--breaker .*within: is required/],
      [{ latencyP90: '5' }, /--latency-p90 "5": a bare number is ambiguous/],
      [{ latencyP90: '1ms' }, /--latency-p90 "1ms": expected a duration from 10ms to 10m, or "plan"/],
      [{ above: '0.9' }, /--above needs --rule NAME/],
      [{ rule: 'disk-busy' }, /--rule disk-busy needs --above X or --below X/],
      [{ rule: 'disk-busy', above: '1', below: '2' }, /--above and --below together/],
      [{ rule: 'disk-busy', above: 'high' }, /--above "high": expected a number/],
      [{ rule: '  ', above: '1' }, /--rule needs the name/],
    ];
    for (const [opts, message] of refused)
      expect(() => parseThresholdChanges(opts), JSON.stringify(opts)).toThrow(message);
    // A stop is given alone.
    expect(() => parseControlChange({ pause: false, unpause: false, stop: true, breaker: 'off' })).toThrow(
      /--stop takes no .*--breaker/,
    );
  });

  it('writes each change with an audit event (who, when, old and new), shows it in status, and keeps it for a later run', () => {
    const file = checkpointOf(PLAN);
    const r = ask(file, { breaker: '{rate: 5%, within: 15m, min_moves: 50}', rule: 'disk-busy', above: '0.95' });
    expect(r.refused).toEqual([]);
    expect(r.thresholds).toEqual([
      {
        name: 'breaker',
        previous: null,
        value: { rate: 0.05, withinMs: 900_000, minMoves: 50 },
        plan: { failures: 20, withinMs: 900_000 },
      },
      {
        name: 'rule:disk-busy',
        previous: null,
        value: { op: 'above', bound: 0.95 },
        plan: { op: 'above', bound: 0.9 },
      },
    ]);
    const again = ask(file, { latencyP90: '5s', rule: 'disk-busy', above: 'plan' }, 2_000);
    expect(again.thresholds.map((d) => [d.name, d.previous, d.value])).toEqual([
      ['latency_p90', null, 5_000],
      ['rule:disk-busy', { op: 'above', bound: 0.95 }, null],
    ]);

    // The checkpoint reopened, as a restarted run does: the thresholds are still there, and audited.
    const store = openCheckpoint(file);
    expect(store.readThresholds()).toMatchObject({
      breaker: { rate: 0.05, withinMs: 900_000, minMoves: 50 },
      latencyP90Ms: 5_000,
      rules: {},
    });
    const audit = store
      .readEvents(0, 100)
      .flatMap((e) => (e.type === 'threshold.changed' ? [{ at: e.at, ...e.data }] : []));
    expect(audit).toEqual([
      { at: 1_000, name: 'breaker', previous: null, value: { rate: 0.05, withinMs: 900_000, minMoves: 50 }, by: BY },
      { at: 1_000, name: 'rule:disk-busy', previous: null, value: { op: 'above', bound: 0.95 }, by: BY },
      { at: 2_000, name: 'latency_p90', previous: null, value: 5_000, by: BY },
      { at: 2_000, name: 'rule:disk-busy', previous: { op: 'above', bound: 0.95 }, value: null, by: BY },
    ]);
    store.close();

    const text = renderStatus(readStatus(file, 3_000));
    expect(text).toContain(
      'threshold: breaker {rate: 5%, within: 15m, min_moves: 50}, by ops@bastion at 1970-01-01T00:00:01Z',
    );
    expect(text).toContain('threshold: latency p90 5s, by ops@bastion at 1970-01-01T00:00:02Z');
    expect(text).not.toContain('rule disk-busy');
  });

  it('refuses a rule the plan does not have, the other side of a rule, a latency without a throttle; and then writes nothing', () => {
    const file = checkpointOf(PLAN);
    expect(ask(file, { rule: 'disk', above: '1' }).refused).toEqual([
      'no rule "disk" in the run\'s throttle.rules; its rules: disk-busy, free',
    ]);
    expect(ask(file, { rule: 'free', above: '1' }).refused).toEqual([
      'rule free holds below its bound (below: 10 in the plan): give --below, not --above',
    ]);
    expect(ask(file, { rule: 'capacity:cluster', below: '1' }).refused[0]).toMatch(/room rule of capacity\.keep_free/);
    // One refused change refuses them all, the cap too.
    const mixed = applyControl(
      file,
      {
        concurrency: 3,
        thresholds: { changes: parseThresholdChanges({ breaker: 'off', rule: 'nope', above: '1' }), by: BY },
      },
      5_000,
    );
    expect(mixed.refused).toHaveLength(1);
    const store = openCheckpoint(file);
    expect(store.readThresholds().overrides).toEqual([]);
    expect(store.readControl().concurrency).toBeNull();
    expect(
      store.readEvents(0, 100).filter((e) => e.type === 'threshold.changed' || e.type === 'control.changed'),
    ).toEqual([]);
    store.close();

    const bare = checkpointOf({ retry: { maxAttempts: 3 } });
    expect(ask(bare, { latencyP90: '5s' }).refused[0]).toMatch(
      /the run's plan has no throttle: a latency would change nothing/,
    );
    expect(ask(bare, { rule: 'disk-busy', above: '1' }).refused[0]).toMatch(/the run's plan has no throttle\.rules/);
    // A breaker needs no plan section: one turned on live where the plan has none.
    expect(ask(bare, { breaker: '{failures: 5, within: 10m}' }).thresholds[0]).toMatchObject({ plan: 'off' });
    const unrecorded = checkpointOf(null);
    expect(ask(unrecorded, { latencyP90: '5s' }).refused[0]).toMatch(/does not record its plan/);
  });
});

describe('a running gate reads the thresholds set live', () => {
  const throttled = (): Plan => ({
    ...testPlan({ move: { concurrency: 16 }, poll: { intervalMs: 1000 } }),
    throttle: { ...THROTTLE_DEFAULTS, increaseEveryMs: 10_000 },
  });

  it("cuts on the latency p90 in force: the plan's 2s cuts at 3s answers, 5s set live does not, and back", async () => {
    let live: number | undefined;
    const gate = createGate({ plan: throttled(), api: createFakeApi(), latencyP90Ms: () => live });
    let now = 1_000_000;
    expect((await gate.decide(16, now)).cap).toBe(16);
    live = 5_000;
    for (let i = 0; i < 20; i++) gate.noteResponse(200, 3_000);
    expect((await gate.decide(16, (now += 2_000))).cap).toBe(16);
    live = undefined;
    const cut = await gate.decide(16, (now += 2_000));
    expect(cut.cap).toBe(8);
    expect(cut.reason).toMatch(/latency p90 3000 ms above throttle.latency_p90 2000 ms/);
    live = 2_500;
    for (let i = 0; i < 20; i++) gate.noteResponse(200, 3_000);
    expect((await gate.decide(16, (now += 2_000))).reason).toMatch(
      /latency p90 3000 ms above the latency p90 set with shardmove control 2500 ms/,
    );
  });

  it("judges a rule on the bound set live at its next reading, on the plan's side", async () => {
    const samples: PromSample[] = [{ value: 0.93, labels: {} }];
    let bounds: Record<string, { op: 'above' | 'below'; bound: number }> = {};
    const watch = createRuleWatch({
      rules: [{ name: 'disk-busy', query: 'q', above: 0.9, below: null, action: 'pause', forMs: 0 }],
      client: { query: async () => samples, close: async () => {} },
      everyMs: 1_000,
      onError: 'pause',
      bounds: () => bounds,
    });
    expect((await watch.evaluate(0)).pause).toMatchObject({ rule: 'disk-busy', bound: 0.9, value: 0.93 });
    bounds = { 'disk-busy': { op: 'above', bound: 0.95 } };
    // Within everyMs the last reading stands; the next reading judges the new bound.
    expect((await watch.evaluate(500)).pause).not.toBeNull();
    expect((await watch.evaluate(1_000)).pause).toBeNull();
    expect(watch.states()[0]).toMatchObject({ status: 'ok', bound: 0.95 });
    bounds = {};
    expect((await watch.evaluate(2_000)).pause).toMatchObject({ bound: 0.9 });
  });
});
