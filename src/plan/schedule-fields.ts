/**
 * The plan's `schedule:` (maintenance windows), and the number reader of `throttle:`'s rates (the
 * throttle is a section of the field table, plan-fields.ts). Each problem is reported at its node
 * (file:line:col), like every other field.
 *
 *   schedule:
 *     timezone: Europe/Berlin          # IANA name; UTC when absent
 *     windows: ["Mon-Fri 22:00-06:00", "Sat 00:00-Mon 00:00"]
 */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import { WindowSyntaxError, isTimeZone, parseWindow } from '../time/windows.js';
import type { Entry, Reader } from './reader.js';
import type { PlanSchedule } from './values.js';

export const SCHEDULE_FIELDS = ['timezone', 'windows'];

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
      r.error(
        'schedule.timezone',
        r.posOf(tzNode),
        `"${s.value}" is not an IANA time zone this system knows (e.g. Europe/Berlin, America/New_York, UTC)`,
      );
      invalid.add('schedule.timezone');
    } else timezone = s.value;
  }
  const windows: string[] = [];
  const wNode = get(m, 'windows');
  if (!wNode || r.isNull(wNode)) {
    r.error(
      'schedule.windows',
      r.posOf(m.get('windows')?.key ?? node),
      'list at least one window, e.g. "Mon-Fri 22:00-06:00"',
    );
    invalid.add('schedule.windows');
    return { timezone, windows };
  }
  r.mark('schedule.windows', r.posOf(wNode));
  const items = r.seq(wNode, 'schedule.windows', 'windows such as "Mon-Fri 22:00-06:00"');
  if (!items) {
    invalid.add('schedule.windows');
    return { timezone, windows };
  }
  if (items.length === 0)
    r.error('schedule.windows', r.posOf(wNode), 'list at least one window, e.g. "Mon-Fri 22:00-06:00"');
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

/**
 * A field's reader for a number in [min, max] (a rate, a factor); a string only from ${VAR}. Reports
 * at the node and returns undefined when the value cannot be used.
 */
export function readNumber(min: number, max: number) {
  return (r: Reader, node: Node, path: string): number | undefined => {
    r.mark(path, r.posOf(node));
    let v: unknown = isScalar(node) ? node.value : undefined;
    if (typeof v === 'string') {
      const s = r.string(node, path);
      v = s?.fromVars && /^\s*[\d.]+\s*$/.test(s.value) ? Number(s.value) : v;
    }
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
      r.error(path, r.posOf(node), `expected a number from ${min} to ${max}`);
      return undefined;
    }
    return v;
  };
}
