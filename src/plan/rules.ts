/**
 * Cross-field rules over the normalised plan, each a small named function that reports with the
 * position of the field it is about. Rules that need the instance (storages exist, current weights)
 * run in pre-flight; `checkMergedWeights` is exported for it.
 */
import { formatPlanDuration } from '../time/durations.js';
import { flattenFields, rangeOf } from './field-table.js';
import { CONCURRENCY_RANGE, concurrencyCeiling, describeConcurrency } from './concurrency-field.js';
import { PLAN_FIELDS, WEIGHT_RANGE } from './plan-fields.js';
import type { Pos } from './reader.js';
import type { Plan } from './types.js';

/** Allowed ranges, from the field table (plan-fields.ts) and documented in docs/plan.md. Durations in ms. */
export const RANGES = {
  timeoutMs: rangeOf(PLAN_FIELDS, 'instance.timeout'),
  pollIntervalMs: rangeOf(PLAN_FIELDS, 'poll.interval'),
  stuckScheduledAfterMs: rangeOf(PLAN_FIELDS, 'poll.stuck_scheduled_after'),
  stuckRunningAfterMs: rangeOf(PLAN_FIELDS, 'poll.stuck_running_after'),
  stuckRunningPerGbMs: rangeOf(PLAN_FIELDS, 'poll.stuck_running_per_gb'),
  /** Below this a running limit is allowed (rehearsals, tests) but warned about. */
  stuckAfterUsualMinMs: 60_000,
  backoffMs: rangeOf(PLAN_FIELDS, 'retry.backoff'),
  concurrency: CONCURRENCY_RANGE,
  maxAttempts: rangeOf(PLAN_FIELDS, 'retry.max_attempts'),
  weight: WEIGHT_RANGE,
} as const;

/**
 * The table's fields of one type that fill a plan property, with a reader of that property
 * (undefined inside a section the plan leaves off, such as an absent `throttle`).
 */
function rangedFields(
  type: 'duration' | 'integer',
): Array<{ path: string; min: number; max: number; value: (plan: Plan) => number | undefined }> {
  return flattenFields(PLAN_FIELDS).flatMap(({ path, props, field }) =>
    field.type === type && props.length > 0
      ? [
          {
            path,
            min: field.min,
            max: field.max,
            value: (plan: Plan) =>
              props.reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], plan) as
                number | undefined,
          },
        ]
      : [],
  );
}

/** What a rule sees: the plan, where each field is, and which fields failed to parse (skip those). */
export interface RuleContext {
  plan: Plan;
  /** The plan's own `weights` mapping, before the default was merged in. */
  planWeights: Record<string, number>;
  at(path: string): Pos;
  /** False when the field (or an ancestor) could not be read; rules then stay silent about it. */
  valid(path: string): boolean;
}

/** A rule's finding; the loader adds the file. */
export interface RuleFinding {
  path: string;
  message: string;
  severity: 'error' | 'warning';
}

/** A named rule: pure, reports every finding it has. */
export interface PlanRule {
  name: string;
  check(ctx: RuleContext): RuleFinding[];
}

const error = (path: string, message: string): RuleFinding => ({ path, message, severity: 'error' });
const warning = (path: string, message: string): RuleFinding => ({ path, message, severity: 'warning' });

/** The destination is never one of the sources: a move onto the storage an item is on can lose data. */
export const destinationNotASource: PlanRule = {
  name: 'destination-not-a-source',
  check({ plan, valid }) {
    if (!valid('move.to') || !valid('move.from')) return [];
    const sources = new Map(plan.move.from.map((s, i) => [s, i]));
    const out: RuleFinding[] = [];
    for (const to of plan.move.to) {
      const i = sources.get(to);
      if (i !== undefined) out.push(error(`move.from[${i}]`, `the destination ${JSON.stringify(to)} is also a source`));
    }
    return out;
  },
};

/** Every source is listed once: draining one twice would schedule its items twice. */
export const sourcesUnique: PlanRule = {
  name: 'sources-unique',
  check({ plan, valid }) {
    if (!valid('move.from')) return [];
    const out: RuleFinding[] = [];
    // A map of first places, not indexOf per item: quadratic on a long list.
    const first = new Map<string, number>();
    plan.move.from.forEach((s, i) => {
      const at = first.get(s);
      if (at === undefined) first.set(s, i);
      else out.push(error(`move.from[${i}]`, `${JSON.stringify(s)} is already listed as move.from[${at}]`));
    });
    return out;
  },
};

/**
 * Weights problems of a merged weight table: the destination must take new repositories and no source
 * may, otherwise repositories created during the drain keep landing on the storage being emptied.
 */
export function weightsProblems(
  weights: Readonly<Record<string, number>>,
  from: readonly string[],
  to: readonly string[],
): Array<{ storage: string; message: string }> {
  const out: Array<{ storage: string; message: string }> = [];
  for (const d of to) {
    if (!((weights[d] ?? 0) > 0))
      out.push({
        storage: d,
        message: `the destination ${JSON.stringify(d)} needs a weight above 0, or new repositories cannot land on it`,
      });
  }
  for (const s of new Set(from)) {
    if (to.includes(s)) continue;
    const w = weights[s] ?? 0;
    if (w !== 0)
      out.push({
        storage: s,
        message: `the source ${JSON.stringify(s)} must have weight 0 (has ${w}), or new repositories keep landing on it`,
      });
  }
  return out;
}

/** After merging the plan's weights over the default, the destination is above 0 and every source is 0. */
export const weightsDrainSources: PlanRule = {
  name: 'weights-drain-sources',
  check({ plan, valid }) {
    if (!valid('move.to') || !valid('move.from') || !valid('weights')) return [];
    return weightsProblems(plan.weights, plan.move.from, plan.move.to).map((p) =>
      error(`weights.${p.storage}`, p.message),
    );
  },
};

/**
 * For pre-flight and the weights step: merges the plan's weights over the instance's current ones
 * and checks the result with the same rule. Pass `plan.weights` (the default, destination 100 and
 * every source 0, with the plan's own weights over it); `merged` is the table to write.
 */
export function checkMergedWeights(
  current: Readonly<Record<string, number>>,
  planWeights: Readonly<Record<string, number>>,
  plan: Pick<Plan, 'move'>,
): { merged: Record<string, number>; problems: string[] } {
  const merged = { ...current, ...planWeights };
  return { merged, problems: weightsProblems(merged, plan.move.from, plan.move.to).map((p) => p.message) };
}

function rangeCheck(path: string, value: number, min: number, max: number, show: (n: number) => string): RuleFinding[] {
  return value < min || value > max
    ? [error(path, `${show(value)} is out of range: allowed ${show(min)} to ${show(max)}`)]
    : [];
}

/**
 * Durations stay within their documented ranges; a very short running limit is allowed but warned
 * about, and so is a stuck limit that a move would reach at its first poll. The running limit is
 * checked under `poll.stuck_running_after`, positioned at the deprecated `stuck_after` when that is
 * what the plan writes.
 */
export const durationsInRange: PlanRule = {
  name: 'durations-in-range',
  check({ plan, valid }) {
    const out: RuleFinding[] = [];
    const d = (path: string, v: number | undefined, range: { min: number; max: number }) => {
      if (v !== undefined && valid(path)) out.push(...rangeCheck(path, v, range.min, range.max, formatPlanDuration));
    };
    const { intervalMs, stuckScheduledAfterMs, stuckRunningAfterMs } = plan.poll;
    for (const f of rangedFields('duration')) d(f.path, f.value(plan), f);
    const running = 'poll.stuck_running_after';
    if (
      valid(running) &&
      stuckRunningAfterMs >= RANGES.stuckRunningAfterMs.min &&
      stuckRunningAfterMs < RANGES.stuckAfterUsualMinMs
    ) {
      out.push(
        warning(
          running,
          `${formatPlanDuration(stuckRunningAfterMs)} is shorter than a real move usually takes; fine for rehearsals, too short for production`,
        ),
      );
    }
    if (valid(running) && valid('poll.interval') && stuckRunningAfterMs <= intervalMs) {
      out.push(
        warning(
          running,
          `is not longer than poll.interval (${formatPlanDuration(intervalMs)}): every running move would look stuck at its first poll`,
        ),
      );
    }
    const { minIntervalMs } = plan.poll;
    if (valid('poll.min_interval') && valid('poll.interval') && minIntervalMs > intervalMs) {
      out.push(
        error(
          'poll.min_interval',
          `${formatPlanDuration(minIntervalMs)} must not exceed poll.interval (${formatPlanDuration(intervalMs)})`,
        ),
      );
    }
    if (valid('poll.stuck_scheduled_after') && valid('poll.interval') && stuckScheduledAfterMs <= intervalMs) {
      out.push(
        warning(
          'poll.stuck_scheduled_after',
          `is not longer than poll.interval (${formatPlanDuration(intervalMs)}): every queued move would look stuck at its first poll`,
        ),
      );
    }
    return out;
  },
};

/** Counts stay within their documented ranges. */
export const countsInRange: PlanRule = {
  name: 'counts-in-range',
  check({ plan, planWeights, valid }) {
    const out: RuleFinding[] = [];
    const c = (path: string, v: number | undefined, range: { min: number; max: number }) => {
      if (v !== undefined && valid(path)) out.push(...rangeCheck(path, v, range.min, range.max, String));
    };
    for (const f of rangedFields('integer')) c(f.path, f.value(plan), f);
    for (const [storage, w] of Object.entries(planWeights)) c(`weights.${storage}`, w, RANGES.weight);
    return out;
  },
};

/** Early successors are bounded by the cap they go beyond: at most one per slot. */
export const queueAheadWithinConcurrency: PlanRule = {
  name: 'queue-ahead-within-concurrency',
  check({ plan, valid }) {
    const depth = plan.move.queueAhead;
    if (
      !valid('move.queue_ahead') ||
      !valid('move.concurrency') ||
      depth === 'auto' ||
      depth <= concurrencyCeiling(plan.move.concurrency)
    )
      return [];
    return [
      error(
        'move.queue_ahead',
        `is ${plan.move.queueAhead}, more than move.concurrency (${describeConcurrency(plan.move.concurrency)}): at most one successor per slot waits in the instance's queue`,
      ),
    ];
  },
};

/** Bulk mode enqueues every repository at once: say so, since the concurrency cap does not apply. */
export const bulkModeNote: PlanRule = {
  name: 'bulk-mode-note',
  check({ plan, valid }) {
    if (!valid('move.mode') || plan.move.mode !== 'bulk') return [];
    return [
      warning(
        'move.mode',
        'bulk enqueues every repository of a kind and storage at once; move.concurrency does not limit it (only the per-item retries after it), the instance sets the pace',
      ),
    ];
  },
};

/** Rules query Prometheus: a plan with rules names it (and a rule on bulk mode cannot stop a POST already made). */
export const rulesNeedPrometheus: PlanRule = {
  name: 'rules-need-prometheus',
  check({ plan, valid }) {
    if (!valid('throttle.rules') || !plan.throttle?.rules || plan.throttle.rules.length === 0) return [];
    if (plan.prometheus) return [];
    return [error('throttle.rules', 'the rules query Prometheus: add prometheus: {url: http://localhost:9090}')];
  },
};

/** Capacity names the destination's room; a free space read from Prometheus needs `prometheus`. */
export const capacityNamesDestination: PlanRule = {
  name: 'capacity-names-destination',
  check({ plan, valid }) {
    const c = plan.capacity;
    if (!c || !valid('capacity') || !valid('move.to')) return [];
    const out: RuleFinding[] = [];
    for (const to of plan.move.to) {
      if (!c.storages[to])
        out.push(
          error(
            'capacity.storages',
            `name the destination: ${to}: {free: 2TiB} (or a PromQL query answering its free bytes)`,
          ),
        );
    }
    const until = plan.move.until;
    if (until && 'freeBytes' in until && valid('move.from')) {
      for (const s of plan.move.from) {
        if (!c.storages[s])
          out.push(
            error(
              'capacity.storages',
              `move.until.free needs each source's free space: ${s}: {free: ...} (a PromQL query answering its free bytes)`,
            ),
          );
      }
    }
    const queried = Object.entries(c.storages)
      .filter(([, f]) => 'query' in f)
      .map(([n]) => n);
    if (queried.length > 0 && !plan.prometheus)
      out.push(
        error(`capacity.storages.${queried[0]}.free`, 'a PromQL query needs prometheus: {url: http://localhost:9090}'),
      );
    return out;
  },
};

/** Bulk mode sends one POST per kind and source, to one destination, and moves everything there. */
export const bulkMovesEverything: PlanRule = {
  name: 'bulk-moves-everything',
  check({ plan, valid }) {
    if (plan.move.mode !== 'bulk' || !valid('move.mode')) return [];
    const out: RuleFinding[] = [];
    if (valid('move.to') && plan.move.to.length > 1)
      out.push(
        error(
          'move.to',
          'bulk mode moves each source to one destination: list one, or use mode: throttled to spread items over several',
        ),
      );
    if (plan.move.until && valid('move.until'))
      out.push(error('move.until', 'bulk mode moves everything on a source: a partial drain needs mode: throttled'));
    if (plan.move.select && valid('move.select'))
      out.push(
        error('move.select', 'bulk mode moves everything on a source: choosing what moves needs mode: throttled'),
      );
    return out;
  },
};

/** `move.until: {free: ...}` reads the sources' free space, which only `capacity` gives. */
export const untilFreeNeedsCapacity: PlanRule = {
  name: 'until-free-needs-capacity',
  check({ plan, valid }) {
    const until = plan.move.until;
    if (!until || !('freeBytes' in until) || !valid('move.until') || plan.capacity) return [];
    return [
      error(
        'move.until.free',
        "needs each source's free space: add capacity: {storages: {<source>: {free: <PromQL query>}, <destination>: {free: ...}}}",
      ),
    ];
  },
};

/** Every rule, in the order their findings are reported. */
export const PLAN_RULES: readonly PlanRule[] = [
  destinationNotASource,
  sourcesUnique,
  weightsDrainSources,
  durationsInRange,
  countsInRange,
  queueAheadWithinConcurrency,
  bulkModeNote,
  rulesNeedPrometheus,
  capacityNamesDestination,
  untilFreeNeedsCapacity,
  bulkMovesEverything,
];

/** Runs every rule; findings carry the rule's name. */
export function runRules(
  ctx: RuleContext,
  rules: readonly PlanRule[] = PLAN_RULES,
): Array<RuleFinding & { rule: string }> {
  return rules.flatMap((rule) => rule.check(ctx).map((f) => ({ ...f, rule: rule.name })));
}
