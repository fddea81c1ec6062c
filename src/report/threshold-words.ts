/**
 * Thresholds changed live (`shardmove control --breaker`, `--rule`, `--latency-p90`) in words: what a
 * change did ("breaker: {failures: 20, within: 15m} (the plan's) -> {rate: 5%, within: 15m,
 * min_moves: 50}") and what is in force, with who set it and when (`control`, `status`, the report).
 * Pure.
 */
import { formatBreaker } from '../plan/breaker-field.js';
import { formatPlanDuration } from '../time/durations.js';
import type { ThresholdValueData } from '../events/vocabulary.js';

/** Who changed it, when, short enough for 80 columns: "ops@bastion at 2026-12-02T06:40:00Z" (the pid is in the event). */
export function describeBy(by: { user: string; host: string; pid: number }, at: number): string {
  return `${by.user}@${by.host} at ${new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z')}`;
}

/** A threshold's name as an operator types it: `breaker`, `latency p90`, `rule disk-busy`. */
export function thresholdLabel(name: string): string {
  if (name === 'latency_p90') return 'latency p90';
  if (name.startsWith('rule:')) return `rule ${name.slice('rule:'.length)}`;
  return name;
}

/** A value in the plan's words: a breaker as the plan writes it, `off`, `2s`, `above 0.9`. */
export function describeThresholdValue(value: ThresholdValueData | null): string {
  if (value === null) return 'none';
  if (value === 'off') return 'off';
  if (typeof value === 'number') return formatPlanDuration(value);
  if ('op' in value) return `${value.op} ${value.bound}`;
  return formatBreaker(value);
}

/** One change: "breaker: {failures: 20, within: 15m} (the plan's) -> off", "latency p90: 5s -> the plan's 2s". */
export function describeThresholdChange(d: {
  name: string;
  previous: ThresholdValueData | null;
  value: ThresholdValueData | null;
  plan: ThresholdValueData | null;
}): string {
  const plans = `${describeThresholdValue(d.plan)} (the plan's)`;
  const was = d.previous === null ? plans : describeThresholdValue(d.previous);
  const now = d.value === null ? `back to ${plans}` : describeThresholdValue(d.value);
  const same = d.previous === null && d.value === null;
  return `${thresholdLabel(d.name)}: ${same ? `${plans}, unchanged` : `${was} -> ${now}`}`;
}

/** One threshold in force: "breaker {rate: 5%, ...}, by ops@bastion at ...". */
export function describeThresholdInForce(o: {
  name: string;
  value: ThresholdValueData;
  at: number;
  by: { user: string; host: string; pid: number };
}): string {
  return `${thresholdLabel(o.name)} ${describeThresholdValue(o.value)}, by ${describeBy(o.by, o.at)}`;
}

/** A `threshold.changed` event in a line: "breaker set live: {rate: 5%, ...} -> off, by ops on bastion (pid 4242)". */
export function describeThresholdEvent(d: {
  name: string;
  previous: ThresholdValueData | null;
  value: ThresholdValueData | null;
  by: { user: string; host: string; pid: number };
}): string {
  const show = (v: ThresholdValueData | null) => (v === null ? "the plan's" : describeThresholdValue(v));
  return `${thresholdLabel(d.name)} set live: ${show(d.previous)} -> ${show(d.value)}, by ${d.by.user} on ${d.by.host} (pid ${d.by.pid})`;
}
