/**
 * `shardmove control --breaker`, `--rule NAME --above X | --below X` and `--latency-p90 D`: thresholds
 * changed live, as gh-ost's interactive commands change `max-load` under a running migration. Each
 * is checked against the plan the run recorded in its checkpoint (a rule must be one of its
 * `throttle.rules`, on the side the plan gave it; a latency needs its `throttle:`), written into the
 * checkpoint's thresholds table with a `threshold.changed` audit event (who, when, old and new), and
 * read by the running process at its next ended move (the breaker) or its next reading of the rules
 * and the latency. A later `run` of the checkpoint keeps them; `plan` goes back to the plan's.
 */
import type { FailureBreaker } from '../../plan/values.js';
import type { RuleBound, ThresholdBy, ThresholdName, ThresholdSetting } from '../../store/thresholds.js';
import type { ControlStore } from '../../store/views.js';

/** One threshold to change; `value` null: back to the plan's. */
export type ThresholdChange =
  | { name: 'breaker'; value: FailureBreaker | 'off' | null }
  | { name: 'latency_p90'; value: number | null }
  | { name: `rule:${string}`; rule: string; op: 'above' | 'below'; value: number | null };

/** What the run's plan says of the thresholds, from the plan record its checkpoint keeps. */
export interface PlanThresholds {
  breaker: FailureBreaker | null;
  /** The throttle's latency p90 (ms); null: the plan has no throttle. */
  latencyP90Ms: number | null;
  rules: Array<{ name: string; op: 'above' | 'below'; bound: number }>;
}

/** One change done: the value before and after (null: the plan's), with the plan's own. */
export interface ThresholdDone {
  name: ThresholdName;
  previous: ThresholdSetting['value'] | null;
  value: ThresholdSetting['value'] | null;
  plan: ThresholdSetting['value'] | null;
}

/** The thresholds of the plan recorded in the checkpoint; null when it records none (never run by this version). */
export function planThresholdsOf(store: Pick<ControlStore, 'loadRun'>): PlanThresholds | null {
  const record = store.loadRun()?.plan;
  if (!record) return null;
  const plan = JSON.parse(record) as {
    retry?: { pauseAfter?: FailureBreaker | null };
    throttle?: {
      latencyP90Ms?: number;
      rules?: Array<{ name: string; above: number | null; below: number | null }> | null;
    } | null;
  };
  return {
    breaker: plan.retry?.pauseAfter ?? null,
    latencyP90Ms: plan.throttle?.latencyP90Ms ?? null,
    rules: (plan.throttle?.rules ?? []).map((r) =>
      r.above !== null ? { name: r.name, op: 'above', bound: r.above } : { name: r.name, op: 'below', bound: r.below! },
    ),
  };
}

/** Why a change cannot be made on this run's plan (pure), or null. */
export function refusalOf(change: ThresholdChange, plan: PlanThresholds | null): string | null {
  if (change.name === 'breaker') return null;
  if (!plan)
    return 'the checkpoint does not record its plan (no run of this version has started it): start the run, then change its thresholds';
  if (change.name === 'latency_p90') {
    return plan.latencyP90Ms === null
      ? "the run's plan has no throttle: a latency would change nothing (add `throttle: {}` to the plan to turn the throttle on)"
      : null;
  }
  const rule = plan.rules.find((r) => r.name === change.rule);
  if (!rule) {
    if (change.rule.startsWith('capacity:'))
      return `${change.rule} is the room rule of capacity.keep_free, not a throttle rule: change capacity in the plan`;
    return plan.rules.length === 0
      ? `the run's plan has no throttle.rules: there is no rule "${change.rule}"`
      : `no rule "${change.rule}" in the run's throttle.rules; its rules: ${plan.rules.map((r) => r.name).join(', ')}`;
  }
  if (rule.op !== change.op)
    return `rule ${rule.name} holds ${rule.op} its bound (${rule.op}: ${rule.bound} in the plan): give --${rule.op}, not --${change.op}`;
  return null;
}

/** The plan's value of a threshold, as the thresholds table holds values (null: none in the plan). */
function planValueOf(change: ThresholdChange, plan: PlanThresholds | null): ThresholdSetting['value'] | null {
  if (change.name === 'breaker') return plan?.breaker ?? 'off';
  if (change.name === 'latency_p90') return plan?.latencyP90Ms ?? null;
  const rule = plan?.rules.find((r) => r.name === change.rule);
  return rule ? ({ op: rule.op, bound: rule.bound } satisfies RuleBound) : null;
}

/**
 * Checks every change, then writes them all, each with its audit event, in one transaction: one
 * refused changes nothing. Returns what each was and is, or the refusals.
 */
export function applyThresholds(
  store: ControlStore,
  changes: readonly ThresholdChange[],
  at: number,
  by: ThresholdBy,
): { ok: true; done: ThresholdDone[] } | { ok: false; refusals: string[] } {
  const plan = planThresholdsOf(store);
  const refusals = changes.flatMap((c) => refusalOf(c, plan) ?? []);
  if (refusals.length > 0) return { ok: false, refusals };
  const done = store.batch(() =>
    changes.map((c): ThresholdDone => {
      const value: ThresholdSetting['value'] | null =
        c.value === null
          ? null
          : c.name.startsWith('rule:')
            ? { op: (c as { op: 'above' | 'below' }).op, bound: c.value as number }
            : c.value;
      const r = store.writeThreshold(c.name, value, at, by);
      return { name: c.name, previous: r.previous, value: r.value, plan: planValueOf(c, plan) };
    }),
  );
  return { ok: true, done };
}
