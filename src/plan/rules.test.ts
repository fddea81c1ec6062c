import { describe, expect, it } from 'vitest';
import type { RuleContext } from './rules.js';
import { PLAN_RULES, checkMergedWeights, runRules } from './rules.js';
import type { Plan } from './types.js';

function plan(
  overrides: Partial<{
    from: string[];
    to: string;
    weights: Record<string, number>;
    mode: Plan['move']['mode'];
    concurrency: number;
    queueAhead: number;
    maxAttempts: number;
    intervalMs: number;
    stuckScheduledAfterMs: number;
    stuckRunningAfterMs: number;
    stuckRunningPerGbMs: number;
    backoffMs: number;
    timeoutMs: number;
  }> = {},
): Plan {
  const from = overrides.from ?? ['nfs-1', 'nfs-2'];
  const to = overrides.to ?? 'cluster';
  return {
    version: 1,
    name: 'p',
    instance: {
      url: 'https://x',
      credentials: { type: 'token', token: 't' },
      sudo: null,
      timeoutMs: overrides.timeoutMs ?? 30_000,
      outageWaitMs: 1_800_000,
    },
    move: {
      from,
      to: [to],
      kinds: ['projects'],
      mode: overrides.mode ?? 'throttled',
      concurrency: overrides.concurrency ?? 10,
      queueAhead: overrides.queueAhead ?? 0,
    },
    weights: overrides.weights ?? { ...Object.fromEntries(from.map((s) => [s, 0])), [to]: 100 },
    poll: {
      intervalMs: overrides.intervalMs ?? 5_000,
      minIntervalMs: Math.min(250, overrides.intervalMs ?? 5_000),
      stuckScheduledAfterMs: overrides.stuckScheduledAfterMs ?? 86_400_000,
      stuckRunningAfterMs: overrides.stuckRunningAfterMs ?? 3_600_000,
      stuckRunningPerGbMs: overrides.stuckRunningPerGbMs ?? 1_800_000,
    },
    retry: { maxAttempts: overrides.maxAttempts ?? 3, backoffMs: overrides.backoffMs ?? 30_000 },
    verify: true,
    geo: { resync: false },
  };
}

function check(p: Plan, planWeights: Record<string, number> = {}, invalid: string[] = []) {
  const ctx: RuleContext = {
    plan: p,
    planWeights,
    at: () => ({ line: 1, col: 1 }),
    valid: (path) => !invalid.some((b) => path.startsWith(b)),
  };
  return runRules(ctx).map((f) => `${f.severity} ${f.rule} ${f.path}`);
}

describe('named rules', () => {
  it('a sound plan has no findings', () => {
    expect(check(plan())).toEqual([]);
  });

  it('every rule has a kebab-case name', () => {
    expect(PLAN_RULES.map((r) => r.name)).toEqual([
      'destination-not-a-source',
      'sources-unique',
      'weights-drain-sources',
      'durations-in-range',
      'counts-in-range',
      'queue-ahead-within-concurrency',
      'bulk-mode-note',
      'rules-need-prometheus',
      'capacity-names-destination',
      'until-free-needs-capacity',
      'bulk-moves-everything',
    ]);
  });

  it('destination-not-a-source', () => {
    expect(check(plan({ from: ['nfs-1', 'cluster'] }))).toContain('error destination-not-a-source move.from[1]');
  });

  it('sources-unique names the repeat', () => {
    expect(check(plan({ from: ['a', 'b', 'a'] }))).toEqual(['error sources-unique move.from[2]']);
  });

  it('weights-drain-sources: destination above 0, every source 0', () => {
    expect(check(plan({ weights: { cluster: 0, 'nfs-1': 0, 'nfs-2': 0 } }))).toEqual([
      'error weights-drain-sources weights.cluster',
    ]);
    expect(check(plan({ weights: { cluster: 10, 'nfs-1': 0, 'nfs-2': 1 } }))).toEqual([
      'error weights-drain-sources weights.nfs-2',
    ]);
  });

  it('durations-in-range, with warnings for a running limit that is short or not above the poll interval', () => {
    expect(check(plan({ intervalMs: 99 }))).toEqual(['error durations-in-range poll.interval']);
    expect(check(plan({ intervalMs: 100 }))).toEqual([]);
    expect(check(plan({ backoffMs: 86_400_001, timeoutMs: 500 }))).toEqual([
      'error durations-in-range instance.timeout',
      'error durations-in-range retry.backoff',
    ]);
    expect(check(plan({ stuckRunningAfterMs: 999 }))).toEqual([
      'error durations-in-range poll.stuck_running_after',
      'warning durations-in-range poll.stuck_running_after',
    ]);
    expect(check(plan({ stuckRunningAfterMs: 30_000 }))).toEqual([
      'warning durations-in-range poll.stuck_running_after',
    ]);
    expect(check(plan({ stuckRunningAfterMs: 120_000, intervalMs: 120_000 }))).toEqual([
      'warning durations-in-range poll.stuck_running_after',
    ]);
  });

  it('durations-in-range for the queue limit and the size term', () => {
    expect(check(plan({ stuckScheduledAfterMs: 999 }))).toEqual([
      'error durations-in-range poll.stuck_scheduled_after',
      'warning durations-in-range poll.stuck_scheduled_after',
    ]);
    expect(check(plan({ stuckScheduledAfterMs: 30 * 86_400_000 + 1 }))).toEqual([
      'error durations-in-range poll.stuck_scheduled_after',
    ]);
    expect(check(plan({ stuckScheduledAfterMs: 60_000, intervalMs: 60_000 }))).toEqual([
      'warning durations-in-range poll.stuck_scheduled_after',
    ]);
    expect(check(plan({ stuckRunningPerGbMs: 0 }))).toEqual([]);
    expect(check(plan({ stuckRunningPerGbMs: 86_400_001 }))).toEqual([
      'error durations-in-range poll.stuck_running_per_gb',
    ]);
  });

  it('counts-in-range, weights included', () => {
    // move.concurrency's range is its reader's (a number or auto: concurrency-field.test.ts).
    expect(check(plan({ maxAttempts: 101 }))).toEqual(['error counts-in-range retry.max_attempts']);
    expect(check(plan({ concurrency: 1000, maxAttempts: 1 }))).toEqual([]);
    expect(check(plan({ weights: { cluster: 101, 'nfs-1': 0, 'nfs-2': 0 } }), { cluster: 101 })).toEqual([
      'error counts-in-range weights.cluster',
    ]);
  });

  it('queue-ahead-within-concurrency: at most one early successor per slot', () => {
    expect(check(plan({ concurrency: 4, queueAhead: 4 }))).toEqual([]);
    expect(check(plan({ concurrency: 4, queueAhead: 5 }))).toEqual([
      'error queue-ahead-within-concurrency move.queue_ahead',
    ]);
  });

  it('bulk-mode-note is a warning', () => {
    expect(check(plan({ mode: 'bulk' }))).toEqual(['warning bulk-mode-note move.mode']);
  });

  it('stays silent about fields that failed to parse', () => {
    expect(
      check(plan({ from: ['cluster'], intervalMs: 1 }), {}, ['move.from', 'poll.interval', 'poll.min_interval']),
    ).toEqual([]);
  });
});

describe('checkMergedWeights', () => {
  const p = plan();

  it('merges the plan over the current weights and accepts a draining table', () => {
    expect(
      checkMergedWeights({ default: 100, 'nfs-1': 50, 'nfs-2': 50 }, { cluster: 100, 'nfs-1': 0, 'nfs-2': 0 }, p),
    ).toEqual({
      merged: { default: 100, 'nfs-1': 0, 'nfs-2': 0, cluster: 100 },
      problems: [],
    });
  });

  it('reports sources the plan leaves weighted and a destination at 0', () => {
    const r = checkMergedWeights({ 'nfs-2': 40, cluster: 0 }, { 'nfs-1': 0 }, p);
    expect(r.merged).toEqual({ 'nfs-1': 0, 'nfs-2': 40, cluster: 0 });
    expect(r.problems).toHaveLength(2);
    expect(r.problems.join('\n')).toMatch(/destination "cluster".*\n.*source "nfs-2" must have weight 0 \(has 40\)/);
  });
});
