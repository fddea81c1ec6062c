/**
 * The threshold options of `shardmove control`, parsed (pure): `--breaker '{rate: 5%, within: 15m,
 * min_moves: 50}' | '{failures: 20, within: 15m}' | off | plan`, `--rule NAME --above X | --below X`
 * (X a number, or `plan`), `--latency-p90 DURATION | plan`. Every bad value is refused with
 * SHARDMOVE_ARGS_INVALID naming the option and what to write; whether a rule exists and on which
 * side it holds is the run's plan's to say (../runtime/control/thresholds-control.ts).
 */
import { readBreakerText } from '../plan/breaker-field.js';
import { formatPlanDuration, parseDuration } from '../time/durations.js';
import type { ThresholdChange } from '../runtime/control/thresholds-control.js';
import { ArgsError } from './errors.js';

export interface ThresholdOptions {
  breaker?: string;
  rule?: string;
  above?: string;
  below?: string;
  latencyP90?: string;
}

/** throttle.latency_p90's bounds (plan-fields.ts): below 10 ms every request is slow, above 10 min none is measured. */
const LATENCY = { min: 10, max: 600_000 };
const NUMBER = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/** True when any threshold option is given. */
export function hasThresholdOptions(o: ThresholdOptions): boolean {
  return [o.breaker, o.rule, o.above, o.below, o.latencyP90].some((v) => v !== undefined);
}

/** The threshold changes the options ask for (none: an empty list). */
export function parseThresholdChanges(o: ThresholdOptions): ThresholdChange[] {
  const changes: ThresholdChange[] = [];
  if (o.breaker !== undefined) {
    const raw = o.breaker.trim();
    if (raw === 'plan' || raw === 'off') changes.push({ name: 'breaker', value: raw === 'plan' ? null : 'off' });
    else {
      const got = readBreakerText(raw);
      if (!got.ok)
        throw new ArgsError(
          `control: --breaker ${JSON.stringify(raw)}: ${got.problems.join('; ')}. Write it as the plan's retry.pause_after: ` +
            `'{failures: 20, within: 15m}', '{rate: 5%, within: 15m, min_moves: 50}', "off" or "plan"`,
        );
      changes.push({ name: 'breaker', value: got.breaker });
    }
  }
  if (o.latencyP90 !== undefined) {
    const raw = o.latencyP90.trim();
    if (raw === 'plan') changes.push({ name: 'latency_p90', value: null });
    else {
      const d = parseDuration(raw);
      const range = `from ${formatPlanDuration(LATENCY.min)} to ${formatPlanDuration(LATENCY.max)}`;
      if (!d.ok) throw new ArgsError(`control: --latency-p90 "${raw}": ${d.reason}; a duration ${range}, or "plan"`);
      if (d.ms < LATENCY.min || d.ms > LATENCY.max)
        throw new ArgsError(`control: --latency-p90 "${raw}": expected a duration ${range}, or "plan"`);
      changes.push({ name: 'latency_p90', value: d.ms });
    }
  }
  if (o.rule === undefined) {
    if (o.above !== undefined || o.below !== undefined)
      throw new ArgsError(
        `control: --${o.above !== undefined ? 'above' : 'below'} needs --rule NAME (a rule of throttle.rules)`,
      );
    return changes;
  }
  const name = o.rule.trim();
  if (name === '') throw new ArgsError('control: --rule needs the name of a rule of throttle.rules');
  if (o.above !== undefined && o.below !== undefined)
    throw new ArgsError('control: --above and --below together; a rule holds on one side: give the one its plan gives');
  if (o.above === undefined && o.below === undefined)
    throw new ArgsError(
      `control: --rule ${name} needs --above X or --below X (a number, or "plan" for the plan's bound)`,
    );
  const op = o.above !== undefined ? 'above' : 'below';
  const raw = (o.above ?? o.below)!.trim();
  let value: number | null;
  if (raw === 'plan') value = null;
  else if (NUMBER.test(raw) && Number.isFinite(Number(raw))) value = Number(raw);
  else
    throw new ArgsError(
      `control: --${op} "${raw}": expected a number (as the rule's PromQL answers it, 0.9 or 5e11), or "plan"`,
    );
  changes.push({ name: `rule:${name}`, rule: name, op, value });
  return changes;
}
