/**
 * Maintenance windows: when a run may schedule new moves. A window is written as
 *
 *   "Mon-Fri 22:00-06:00"   every day Monday to Friday from 22:00 to 06:00 the next morning
 *   "Sat 00:00-Mon 00:00"   from Saturday 00:00 to Monday 00:00 (one span across days)
 *   "Mon-Sun 01:00-03:00"   every day from 01:00 to 03:00
 *   "Tue 09:30-11:00"       one day
 *   "daily 22:00-05:00"     every day (also "Mon-Sun")
 *
 * in the plan's IANA time zone. An end earlier than the start runs past midnight. A window that
 * ends when it starts ("daily 03:00-03:00", "Sat 00:00-Sat 00:00") is refused: it would be open
 * around the clock, which is written "daily 00:00-24:00" (or no schedule at all).
 * Wall times are read with the platform's `Intl` for the zone, so midnight, daylight-saving
 * changes (a 02:30 that does not exist, a 02:30 that happens twice) and any zone Node knows are
 * handled by the platform, not by tables here.
 */

import { ShardmoveError } from '../shared/errors.js';
import { WINDOW_SYNTAX } from './errors.js';
export const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] as const;
const WEEK_MIN = 7 * 1440;

/** One window as weekly intervals of local minutes since Sunday 00:00 (end exclusive, may wrap). */
export interface Window {
  /** As written in the plan. */
  text: string;
  spans: { start: number; end: number }[];
}

/** A window the grammar refuses; the message says how to write one. */
export class WindowSyntaxError extends ShardmoveError<typeof WINDOW_SYNTAX> {
  constructor(message: string) {
    super(WINDOW_SYNTAX, message);
  }
}

const DAY_RE = '(Sun|Mon|Tue|Wed|Thu|Fri|Sat)';
const TIME_RE = '([01]\\d|2[0-3]):([0-5]\\d)';
/** "Mon-Fri 22:00-06:00", "Mon 22:00-06:00", "daily 01:00-03:00". */
const DAILY = new RegExp(`^(?:${DAY_RE}(?:-${DAY_RE})?|daily) ${TIME_RE}-(?:${TIME_RE}|24:00)$`);
/** "Sat 00:00-Mon 00:00". */
const SPAN = new RegExp(`^${DAY_RE} ${TIME_RE}-${DAY_RE} ${TIME_RE}$`);

/** The same forms as a JSON Schema pattern (any run of blanks where one space is written). */
export const WINDOW_PATTERN = `^\\s*(?:${DAILY.source.slice(1, -1)}|${SPAN.source.slice(1, -1)})\\s*$`.replace(
  / /g,
  '\\s+',
);

// A match's groups are `string | undefined` to the compiler; the patterns above make every group
// these read present, and an absent one would read as NaN or -1, never as a valid time.
const dayIndex = (d: string | undefined) => DAYS.findIndex((day) => day === d);
const minutesOf = (h: string | undefined, m: string | undefined) => Number(h) * 60 + Number(m);

/** Parses one window; throws WindowSyntaxError with what is wrong. */
export function parseWindow(text: string): Window {
  const t = text.trim().replace(/\s+/g, ' ');
  const span = SPAN.exec(t);
  if (span) {
    const [, d1, h1, m1, d2, h2, m2] = span;
    const start = dayIndex(d1) * 1440 + minutesOf(h1, m1);
    let end = dayIndex(d2) * 1440 + minutesOf(h2, m2);
    if (end === start) throw endsWhenItStarts(text);
    if (end < start) end += WEEK_MIN;
    return { text, spans: [{ start, end }] };
  }
  const daily = DAILY.exec(t);
  if (daily) {
    const [, from, to, h1, m1, h2, m2] = daily;
    const first = from === undefined ? 0 : dayIndex(from);
    const last = from === undefined ? 6 : to === undefined ? first : dayIndex(to);
    const startMin = minutesOf(h1, m1);
    let endMin = h2 === undefined ? 1440 : minutesOf(h2, m2);
    if (endMin === startMin) throw endsWhenItStarts(text);
    if (endMin < startMin) endMin += 1440;
    const spans: Window['spans'] = [];
    // Day ranges wrap: "Fri-Mon" is Friday, Saturday, Sunday and Monday.
    for (let d = first, n = 0; n < 7; d = (d + 1) % 7, n++) {
      spans.push({ start: d * 1440 + startMin, end: d * 1440 + endMin });
      if (d === last) break;
    }
    return { text, spans };
  }
  throw new WindowSyntaxError(
    `"${text}" is not a window: write "Mon-Fri 22:00-06:00" (days, start, end), "Sat 00:00-Mon 00:00" (a span across days) or "daily 01:00-03:00"; days are Sun Mon Tue Wed Thu Fri Sat, times HH:MM`,
  );
}

/**
 * A window whose end is its start: once it meant a full day (or week) from that time, open around
 * the clock with "daily", which nobody writes on purpose. Say how to write what was probably meant.
 */
function endsWhenItStarts(text: string): WindowSyntaxError {
  return new WindowSyntaxError(
    `"${text}" ends when it starts; for a schedule that is always open write "daily 00:00-24:00" (or leave out schedule), for 24 hours from a time write a span such as "Mon 03:00-Tue 03:00"`,
  );
}

/** True when `zone` is an IANA time zone this platform knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * One formatter per use and time zone: building an `Intl.DateTimeFormat` costs far more than
 * formatting with it, and the drain asks every turn.
 */
const FORMATS = new Map<string, Intl.DateTimeFormat>();

const WEEK_MINUTE: Intl.DateTimeFormatOptions = {
  weekday: 'short',
  hour: '2-digit',
  minute: '2-digit',
  hourCycle: 'h23',
};
const CLOCK: Intl.DateTimeFormatOptions = { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' };
const WINDOW_TIME: Intl.DateTimeFormatOptions = {
  weekday: 'short',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  hourCycle: 'h23',
};

function zoneFormat(
  use: string,
  locale: string,
  zone: string,
  options: Intl.DateTimeFormatOptions,
): Intl.DateTimeFormat {
  const key = `${use}\u0000${zone}`;
  let f = FORMATS.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat(locale, { ...options, timeZone: zone });
    FORMATS.set(key, f);
  }
  return f;
}

/** Local minutes since Sunday 00:00 in `zone` at instant `ms`. */
export function weekMinute(ms: number, zone: string): number {
  const f = zoneFormat('week', 'en-US', zone, WEEK_MINUTE);
  let day = 0;
  let hour = 0;
  let minute = 0;
  for (const p of f.formatToParts(ms)) {
    if (p.type === 'weekday') day = dayIndex(p.value);
    else if (p.type === 'hour') hour = Number(p.value);
    else if (p.type === 'minute') minute = Number(p.value);
  }
  return day * 1440 + hour * 60 + minute;
}

function inSpan(m: number, s: { start: number; end: number }): boolean {
  // A span may run past the end of the week (Sat 22:00 to Sun 06:00): compare modulo a week.
  return (m >= s.start && m < s.end) || (m + WEEK_MIN >= s.start && m + WEEK_MIN < s.end);
}

/** A schedule: the plan's windows in its zone. */
export interface Schedule {
  timezone: string;
  windows: Window[];
}

/** The window open at `ms`, or null. */
export function openWindow(schedule: Schedule, ms: number): Window | null {
  const m = weekMinute(ms, schedule.timezone);
  return schedule.windows.find((w) => w.spans.some((s) => inSpan(m, s))) ?? null;
}

const MINUTE = 60_000;

/**
 * The next instant at or after `ms` at which the schedule's open state differs from its state at
 * `ms` (the next opening when closed, the next closing when open), to the minute; null when it
 * never changes (no window, or windows covering the whole week). Walks forward a minute at a time
 * for at most eight days, so daylight-saving gaps and repeats come out as the platform sees them.
 */
export function nextChange(schedule: Schedule, ms: number): number | null {
  const open = openWindow(schedule, ms) !== null;
  let t = Math.floor(ms / MINUTE) * MINUTE + MINUTE;
  for (let i = 0; i < 8 * 1440; i++, t += MINUTE) {
    if ((openWindow(schedule, t) !== null) !== open) return t;
  }
  return null;
}

/** The next few openings after `ms` (for `validate` and the dry run), each with its closing. */
export function upcomingWindows(
  schedule: Schedule,
  ms: number,
  count: number,
): { opens: number; closes: number | null }[] {
  const out: { opens: number; closes: number | null }[] = [];
  let t = ms;
  if (openWindow(schedule, t) !== null) {
    const closes = nextChange(schedule, t);
    out.push({ opens: t, closes });
    if (closes === null) return out;
    t = closes;
  }
  while (out.length < count) {
    const opens = nextChange(schedule, t);
    if (opens === null) break;
    const closes = nextChange(schedule, opens);
    out.push({ opens, closes });
    if (closes === null) break;
    t = closes;
  }
  return out;
}

/** Open milliseconds between `from` and `to` (to the minute): does an estimate fit the windows? */
export function openTimeBetween(schedule: Schedule, from: number, to: number): number {
  let total = 0;
  let t = from;
  while (t < to) {
    const open = openWindow(schedule, t) !== null;
    const change = nextChange(schedule, t) ?? to;
    const end = Math.min(change, to);
    if (open) total += end - t;
    t = end;
  }
  return total;
}

/** "Mon 2026-11-30 22:00 Europe/Berlin": an instant as the operator's schedule reads it. */
export function formatWindowTime(ms: number, zone: string): string {
  const parts = zoneFormat('window', 'en-CA', zone, WINDOW_TIME).formatToParts(ms);
  const v = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
  return `${v('weekday')} ${v('year')}-${v('month')}-${v('day')} ${v('hour')}:${v('minute')} ${zone}`;
}

/** HH:MM:SS in `zone`: a rate limit's window ends within minutes, so the time of day says it. */
export function formatClockTime(ms: number, zone: string): string {
  return zoneFormat('clock', 'en-GB', zone, CLOCK).format(ms);
}
