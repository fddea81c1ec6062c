/**
 * The plan's `schedule:` (maintenance windows) and `throttle:` (load-aware cap) sections. Each
 * problem is reported at its node (file:line:col), like every other field.
 *
 *   schedule:
 *     timezone: Europe/Berlin          # IANA name; UTC when absent
 *     windows: ["Mon-Fri 22:00-06:00", "Sat 00:00-Mon 00:00"]
 *
 *   throttle:                          # every field optional; `throttle: {}` turns it on with defaults
 *     latency_p90: 2s
 *     max_failure_rate: 0.2
 *     max_429_rate: 0.05
 *     duration_drift: 3
 *     health_every: 30s
 *     increase_every: 30s
 *     decrease: 0.5
 */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import { WindowSyntaxError, isTimeZone, parseWindow } from '../time/windows.js';
import { duration } from './fields.js';
import type { Entry, Reader } from './reader.js';
import { THROTTLE_DEFAULTS } from './values.js';
import type { PlanSchedule, ThrottlePlan } from './values.js';

export const SCHEDULE_FIELDS = ['timezone', 'windows'];
export const THROTTLE_FIELDS = ['latency_p90', 'max_failure_rate', 'max_429_rate', 'duration_drift', 'health_every', 'increase_every', 'decrease'];


const get = (m: Map<string, Entry> | undefined, k: string): Node | null => m?.get(k)?.value ?? null;

/** `schedule:`; null when absent. */
export function readSchedule(r: Reader, node: Node | null, invalid: Set<string>): PlanSchedule | null {
  if (node === null || r.isNull(node)) return null;
  r.mark('schedule', r.posOf(node));
  const m = r.map(node, 'schedule', SCHEDULE_FIELDS);
  if (!m) {
    invalid.add('schedule');
    return null;
  }
  let timezone = 'UTC';
  const tzNode = get(m, 'timezone');
  if (tzNode && !r.isNull(tzNode)) {
    r.mark('schedule.timezone', r.posOf(tzNode));
    const s = r.string(tzNode, 'schedule.timezone');
    if (!s) invalid.add('schedule.timezone');
    else if (!isTimeZone(s.value)) {
      r.error('schedule.timezone', r.posOf(tzNode), `"${s.value}" is not an IANA time zone this system knows (e.g. Europe/Berlin, America/New_York, UTC)`);
      invalid.add('schedule.timezone');
    } else timezone = s.value;
  }
  const windows: string[] = [];
  const wNode = get(m, 'windows');
  if (!wNode || r.isNull(wNode)) {
    r.error('schedule.windows', r.posOf(m.get('windows')?.key ?? node), 'list at least one window, e.g. "Mon-Fri 22:00-06:00"');
    invalid.add('schedule.windows');
    return { timezone, windows };
  }
  r.mark('schedule.windows', r.posOf(wNode));
  const items = r.seq(wNode, 'schedule.windows', 'windows such as "Mon-Fri 22:00-06:00"');
  if (!items) {
    invalid.add('schedule.windows');
    return { timezone, windows };
  }
  if (items.length === 0) r.error('schedule.windows', r.posOf(wNode), 'list at least one window, e.g. "Mon-Fri 22:00-06:00"');
  items.forEach((item, i) => {
    const path = `schedule.windows[${i}]`;
    r.mark(path, r.posOf(item));
    const s = r.string(item, path);
    if (!s) return void invalid.add(path);
    try {
      parseWindow(s.value);
      windows.push(s.value);
    } catch (err) {
      if (!(err instanceof WindowSyntaxError)) throw err;
      r.error(path, r.posOf(item), err.message);
      invalid.add(path);
    }
  });
  return { timezone, windows };
}

/** A number in [min, max]; a string only from ${VAR}. */
function fraction(r: Reader, node: Node | null, path: string, fallback: number, min: number, max: number, invalid: Set<string>): number {
  if (node === null || r.isNull(node)) return fallback;
  r.mark(path, r.posOf(node));
  let v: unknown = isScalar(node) ? node.value : undefined;
  if (typeof v === 'string') {
    const s = r.string(node, path);
    v = s?.fromVars && /^\s*[\d.]+\s*$/.test(s.value) ? Number(s.value) : v;
  }
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    r.error(path, r.posOf(node), `expected a number from ${min} to ${max}`);
    invalid.add(path);
    return fallback;
  }
  return v;
}

/** `throttle:`; null when absent (the cap is the operator's alone). */
export function readThrottle(r: Reader, node: Node | null, invalid: Set<string>): ThrottlePlan | null {
  if (node === null) return null;
  r.mark('throttle', r.posOf(node));
  if (r.isNull(node)) return { ...THROTTLE_DEFAULTS };
  const m = r.map(node, 'throttle', THROTTLE_FIELDS);
  if (!m) {
    invalid.add('throttle');
    return null;
  }
  const d = THROTTLE_DEFAULTS;
  return {
    latencyP90Ms: duration(r, get(m, 'latency_p90'), 'throttle.latency_p90', d.latencyP90Ms, invalid),
    maxFailureRate: fraction(r, get(m, 'max_failure_rate'), 'throttle.max_failure_rate', d.maxFailureRate, 0, 1, invalid),
    max429Rate: fraction(r, get(m, 'max_429_rate'), 'throttle.max_429_rate', d.max429Rate, 0, 1, invalid),
    durationDrift: fraction(r, get(m, 'duration_drift'), 'throttle.duration_drift', d.durationDrift, 1, 1000, invalid),
    healthEveryMs: duration(r, get(m, 'health_every'), 'throttle.health_every', d.healthEveryMs, invalid),
    increaseEveryMs: duration(r, get(m, 'increase_every'), 'throttle.increase_every', d.increaseEveryMs, invalid),
    decrease: fraction(r, get(m, 'decrease'), 'throttle.decrease', d.decrease, 0.05, 0.95, invalid),
  };
}
