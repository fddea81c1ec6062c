/**
 * Throttle rules: PromQL queries on the operator's Prometheus, read at most once per
 * `throttle.health_every`. A rule is `ok`, `pending` (past its bound, for less than its `for`),
 * `holding` (past its bound for at least `for`) or `error` (its query failed). A holding `pause`
 * rule stops new moves (the gate's cap is 0); a holding `cut` rule is a bad signal for the
 * throttle's multiplicative cut. A failed query pauses the run while `prometheus.on_error: pause`
 * (the default), and is set aside with `ignore`: either way the run goes on, never exits by itself.
 *
 * The state is kept in memory only, like the throttle's: after a restart every rule starts `ok` and
 * is read again at the first turn, and a `for` starts counting again (the safer way round: a rule
 * pauses at most `for` later than it would have).
 */
import type { PromSample, PrometheusClient } from '../api/prometheus.js';
import type { ThrottleRule } from '../plan/values.js';
import { CAPACITY_RULE, roomWords } from '../events/room-words.js';
import type { RuleChange, RuleState, RuleStatus } from '../events/vocabulary.js';

export type { RuleChange, RuleState, RuleStatus };

type RuleBoundSet = { op: 'above' | 'below'; bound: number };

export interface RuleWatchOptions {
  rules: readonly ThrottleRule[];
  client: PrometheusClient;
  everyMs: number;
  onError: 'pause' | 'ignore';
  onChange?: (change: RuleChange) => void;
  /** The run's abort signal: a query abandoned because the run stops is no failed reading. */
  signal?: AbortSignal;
  /** Bounds set live (`shardmove control --rule NAME --above X`) by rule name, read at each reading. */
  bounds?: () => Readonly<Record<string, { op: 'above' | 'below'; bound: number }>>;
}

/** What holds the run now: the first holding pause rule (or a failed query under on_error: pause), the first holding cut rule. */
export interface RuleVerdict {
  pause: RuleState | null;
  cut: RuleState | null;
}

export interface RuleWatch {
  /** Reads every rule when `everyMs` has passed since the last reading; returns the verdict either way. */
  evaluate(now: number): Promise<RuleVerdict>;
  states(): readonly RuleState[];
}

/**
 * The sample that counts: the highest for `above`, the lowest for `below`. NaN is no value and is
 * skipped; +Inf is above every bound and -Inf below every bound (a full disk makes `used / avail`
 * answer +Inf: the worst reading there is, not a missing one).
 */
export function worstSample(samples: readonly PromSample[], op: 'above' | 'below'): PromSample | null {
  let worst: PromSample | null = null;
  for (const s of samples) {
    if (Number.isNaN(s.value)) continue;
    if (!worst || (op === 'above' ? s.value > worst.value : s.value < worst.value)) worst = s;
  }
  return worst;
}

export function createRuleWatch(opts: RuleWatchOptions): RuleWatch {
  const states = new Map<string, RuleState>();
  let readAt = -Infinity;
  const verdict = (): RuleVerdict => {
    let pause: RuleState | null = null;
    let cut: RuleState | null = null;
    for (const s of states.values()) {
      if (s.status === 'error' && opts.onError === 'pause') pause ??= s;
      if (s.status !== 'holding') continue;
      if (s.action === 'pause') pause ??= s;
      else cut ??= s;
    }
    return { pause, cut };
  };

  async function read(rule: ThrottleRule, now: number, live: RuleBoundSet | undefined): Promise<RuleState> {
    const op = rule.above !== null ? 'above' : 'below';
    // A bound set live holds on the side the plan gave (control refuses the other side).
    const bound = live && live.op === op ? live.bound : (rule.above ?? rule.below)!;
    const prev = states.get(rule.name);
    const base = { rule: rule.name, action: rule.action, op, bound } as const;
    let samples: PromSample[];
    try {
      samples = await opts.client.query(rule.query);
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      const since = prev?.status === 'error' ? prev.since : now;
      return { ...base, status: 'error', value: null, labels: {}, since, error: (err as Error).message };
    }
    const worst = worstSample(samples, op);
    const past = worst !== null && (op === 'above' ? worst.value > bound : worst.value < bound);
    if (!past)
      return {
        ...base,
        status: 'ok',
        value: worst?.value ?? null,
        labels: worst?.labels ?? {},
        since: null,
        error: null,
      };
    const since = prev && (prev.status === 'pending' || prev.status === 'holding') ? prev.since! : now;
    return {
      ...base,
      status: now - since >= rule.forMs ? 'holding' : 'pending',
      value: worst.value,
      labels: worst.labels,
      since,
      error: null,
    };
  }

  return {
    async evaluate(now) {
      if (now - readAt < opts.everyMs) return verdict();
      readAt = now;
      const live = opts.bounds?.() ?? {};
      for (const rule of opts.rules) {
        const next = await read(rule, now, live[rule.name]);
        const prev = states.get(rule.name) ?? null;
        states.set(rule.name, next);
        if (prev?.status !== next.status && !(prev === null && next.status === 'ok'))
          opts.onChange?.({ ...next, previous: prev?.status ?? null });
      }
      return verdict();
    },
    states: () => [...states.values()],
  };
}

/** A rule's state in words: `rule disk-busy: 0.95 above 0.9 (device="sda") since ...`, or what failed. */
export function describeRule(s: RuleState): string {
  if (s.status === 'error') return `rule ${s.rule}: ${s.error ?? 'the query failed'}`;
  // A destination's room (runtime/run.ts watches it as `capacity:<storage>`): bytes as people read
  // them beside the plan's keep_free, not Prometheus's float and label set.
  if (s.rule.startsWith(CAPACITY_RULE) && s.value !== null && Number.isFinite(s.value))
    return `rule ${s.rule}: ${roomWords(s.value, s.bound)}`;
  const labels = Object.entries(s.labels)
    .filter(([k]) => k !== '__name__')
    .map(([k, v]) => `${k}="${v}"`)
    .join(', ');
  const value = s.value === null ? 'no value' : formatValue(s.value);
  return `rule ${s.rule}: ${value}${labels ? ` {${labels}}` : ''} ${s.op} ${formatValue(s.bound)}`;
}

function formatValue(v: number): string {
  // As Prometheus writes them.
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  return Math.abs(v) >= 1e6 || (v !== 0 && Math.abs(v) < 1e-3)
    ? v.toExponential(3)
    : String(Math.round(v * 1000) / 1000);
}
