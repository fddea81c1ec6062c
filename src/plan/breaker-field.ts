/**
 * `retry.pause_after`: the failure breaker, in one of two forms.
 *
 * - By count, `{failures: N, within: DURATION}`: when N moves fail within that window.
 * - By rate, `{rate: 5%, within: DURATION, min_moves: 50}`: when the failed share of the moves that
 *   ended within that window reaches `rate`, judged only once `min_moves` have ended in it. A fast
 *   drain that fails 1% of its moves reaches any count sooner or later; its rate stays 1%.
 *
 * Either way the run pauses, exactly as `shardmove control --pause` does, until an operator unpauses
 * it. Absent: off (a run halves its cap through the throttle, if any, and goes on). The same reader
 * takes `shardmove control --breaker '{...}'` (readBreakerText), so both say the same things.
 */
import type { Node } from 'yaml';
import { LineCounter, parseDocument } from 'yaml';
import { formatPlanDuration } from '../time/durations.js';
import type { FieldDoc, JsonSchema } from './field-table.js';
import { duration, integer } from './fields.js';
import { DURATION_PATTERN, VAR_STRING, isSet, textSchema } from './json-schema.js';
import { Reader } from './reader.js';
import type { Entry } from './reader.js';
import type { FailureBreaker } from './values.js';

export const PAUSE_AFTER_KEYS = ['failures', 'rate', 'within', 'min_moves'] as const;
/** Bounds: a breaker that trips on one failure is allowed (strict rehearsals); windows from a second to a week. */
export const BREAKER_RANGE = {
  failures: { min: 1, max: 100_000 },
  withinMs: { min: 1_000, max: 7 * 86_400_000 },
  minMoves: { min: 1, max: 100_000 },
} as const;
/** `min_moves` when the rate form leaves it out: a share of fewer moves says little. */
export const DEFAULT_MIN_MOVES = 50;
/** A rate as written: `5%`, `0.5 %`, or a share from 0 to 1 (`0.05`). */
const PERCENT = /^\s*(\d+(?:\.\d+)?)\s*%\s*$/;

const get = (m: Map<string, Entry>, k: string): Node | null => m.get(k)?.value ?? null;
const inRange = (v: number, b: { min: number; max: number }) => v >= b.min && v <= b.max;

/** Reads `retry.pause_after`; undefined when absent or unusable (then reported at its node). */
export function readPauseAfter(r: Reader, node: Node, path: string, invalid: Set<string>): FailureBreaker | undefined {
  r.mark(path, r.posOf(node));
  const m = r.map(node, path, PAUSE_AFTER_KEYS);
  if (!m) {
    invalid.add(path);
    return undefined;
  }
  const has = (k: string) => !r.isNull(get(m, k));
  if (has('failures') && has('rate')) {
    r.error(path, r.posOf(node), 'give failures (a count) or rate (a share of the moves that ended), not both');
    invalid.add(path);
    return undefined;
  }
  const byRate = has('rate');
  if (!byRate && has('min_moves')) {
    r.error(
      `${path}.min_moves`,
      r.posOf(m.get('min_moves')?.key),
      'belongs to the rate form: write {rate: 5%, within: 15m, min_moves: 50}, or leave it out with failures',
    );
    invalid.add(path);
  }
  for (const k of [byRate ? 'rate' : 'failures', 'within']) {
    if (!has(k)) {
      r.error(
        `${path}.${k}`,
        r.posOf(node),
        `is required: write ${path}: {failures: 20, within: 15m} or {rate: 5%, within: 15m, min_moves: 50}`,
      );
      invalid.add(path);
    }
  }
  const withinMs = duration(r, get(m, 'within'), `${path}.within`, 0, invalid);
  const w = BREAKER_RANGE.withinMs;
  if (!invalid.has(`${path}.within`) && has('within') && !inRange(withinMs, w)) {
    r.error(
      `${path}.within`,
      r.posOf(get(m, 'within')),
      `expected a duration from ${formatPlanDuration(w.min)} to ${formatPlanDuration(w.max)}`,
    );
    invalid.add(path);
  }
  const bounded = (key: 'failures' | 'min_moves', b: { min: number; max: number }, fallback: number): number => {
    const p = `${path}.${key}`;
    const v = integer(r, get(m, key), p, fallback, invalid);
    if (!invalid.has(p) && has(key) && !inRange(v, b)) {
      r.error(p, r.posOf(get(m, key)), `expected a whole number from ${b.min} to ${b.max}`);
      invalid.add(path);
    }
    return v;
  };
  const bad = () =>
    [path, `${path}.within`, `${path}.failures`, `${path}.rate`, `${path}.min_moves`].some((p) => invalid.has(p));
  if (!byRate) {
    const failures = bounded('failures', BREAKER_RANGE.failures, 0);
    return bad() ? undefined : { failures, withinMs };
  }
  const rate = readRate(r, get(m, 'rate'), `${path}.rate`, invalid);
  const minMoves = bounded('min_moves', BREAKER_RANGE.minMoves, DEFAULT_MIN_MOVES);
  return bad() || rate === undefined ? undefined : { rate, withinMs, minMoves };
}

/** `rate`: `5%` (above 0, at most 100), or a share above 0 and at most 1; the share either way. */
function readRate(r: Reader, node: Node | null, path: string, invalid: Set<string>): number | undefined {
  const at = r.posOf(node);
  r.mark(path, at);
  const expected = 'expected a share of the moves that ended, as a percentage above 0% and at most 100% (5%)';
  const raw: unknown = node && 'value' in node ? (node as { value: unknown }).value : undefined;
  let share: number | undefined;
  if (typeof raw === 'number') {
    if (raw > 1) {
      r.error(path, at, `${raw} is more than all of them: write ${raw}% for ${raw} percent, or a share from 0 to 1`);
      invalid.add(path);
      return undefined;
    }
    share = raw;
  } else {
    const s = r.string(node, path);
    if (!s) {
      invalid.add(path);
      return undefined;
    }
    const pct = PERCENT.exec(s.value);
    share = pct ? Number(pct[1]) / 100 : undefined;
  }
  if (share === undefined || !Number.isFinite(share) || share <= 0 || share > 1) {
    r.error(path, at, expected);
    invalid.add(path);
    return undefined;
  }
  return share;
}

/** A breaker's rate as people write it: 0.05 -> "5%", 0.005 -> "0.5%". */
export function formatRate(share: number): string {
  return `${Math.round(share * 100_000) / 1000}%`;
}

/** The breaker in the plan's own words: `{failures: 20, within: 15m}`, `{rate: 5%, within: 15m, min_moves: 50}`. */
export function formatBreaker(b: FailureBreaker): string {
  const within = formatPlanDuration(b.withinMs);
  return 'rate' in b
    ? `{rate: ${formatRate(b.rate)}, within: ${within}, min_moves: ${b.minMoves}}`
    : `{failures: ${b.failures}, within: ${within}}`;
}

/** The breaker in words: "20 failed moves within 15m", "5% of at least 50 moves that ended within 15m". */
export function describeBreaker(b: FailureBreaker): string {
  const within = formatPlanDuration(b.withinMs);
  return 'rate' in b
    ? `${formatRate(b.rate)} of the moves that ended within ${within} failing, once ${b.minMoves} have ended in it`
    : `${b.failures} failed moves within ${within}`;
}

/**
 * A breaker written on a command line, as the plan writes it (`{rate: 5%, within: 15m, min_moves: 50}`):
 * the breaker, or every problem in words ("rate: expected ...", column in the text given).
 */
export function readBreakerText(
  text: string,
): { ok: true; breaker: FailureBreaker } | { ok: false; problems: string[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true });
  if (doc.errors.length > 0) return { ok: false, problems: doc.errors.map((e) => e.message.split('\n')[0]!) };
  // No ${VAR}s are expanded and no file is read: the value is all there, on the command line.
  const r = new Reader('--breaker', text, lineCounter, {}, '.', () => undefined, false);
  const invalid = new Set<string>();
  const node = doc.contents as Node | null;
  const breaker = node ? readPauseAfter(r, node, 'breaker', invalid) : undefined;
  if (r.errors.length > 0 || !breaker) {
    const problems = r.errors.map(
      (e) =>
        `${e.path.replace(/^breaker\.?/, '') || 'breaker'}: ${e.message.replace('write breaker: ', 'write ')} (column ${e.col})`,
    );
    return {
      ok: false,
      problems:
        problems.length > 0 ? problems : ['expected {failures: N, within: D} or {rate: P%, within: D, min_moves: N}'],
    };
  }
  return { ok: true, breaker };
}

export const PAUSE_AFTER_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    failures: {
      anyOf: [
        { type: 'integer', minimum: BREAKER_RANGE.failures.min, maximum: BREAKER_RANGE.failures.max },
        VAR_STRING,
      ],
    },
    rate: {
      anyOf: [
        { type: 'number', exclusiveMinimum: 0, maximum: 1 },
        textSchema({ pattern: '^\\s*\\d+(?:\\.\\d+)?\\s*%\\s*$' }),
      ],
    },
    within: textSchema({ pattern: DURATION_PATTERN }),
    min_moves: {
      anyOf: [
        { type: 'integer', minimum: BREAKER_RANGE.minMoves.min, maximum: BREAKER_RANGE.minMoves.max },
        VAR_STRING,
      ],
    },
  },
  required: ['within'],
  // A count or a rate, not both; min_moves belongs to the rate.
  oneOf: [isSet('failures'), isSet('rate')],
  dependencies: { min_moves: ['rate'] },
  additionalProperties: false,
};

export const PAUSE_AFTER_DOC: FieldDoc = {
  type: 'mapping',
  default: 'absent (off)',
  more: 'By count (`failures`, `within`) or by rate (`rate`, `within`, `min_moves`). See [the failure breaker](operations.md#the-failure-breaker).',
  keys: {
    failures: {
      type: 'integer',
      default: 'the count form: required',
      allowed: `\`${BREAKER_RANGE.failures.min}\` to \`${BREAKER_RANGE.failures.max}\``,
      meaning: 'Failed moves that trip the breaker.',
    },
    rate: {
      type: 'percentage',
      default: 'the rate form: required',
      allowed: 'above `0%`, at most `100%` (or a share, `0.05`)',
      meaning: 'The share of the moves that ended within the window that failed, which trips the breaker.',
    },
    within: {
      type: 'duration',
      default: 'required',
      allowed: '`1s` to `7d`',
      meaning: 'The window they must fail (or end, for the rate) within.',
    },
    min_moves: {
      type: 'integer',
      default: `\`${DEFAULT_MIN_MOVES}\` (the rate form only)`,
      allowed: `\`${BREAKER_RANGE.minMoves.min}\` to \`${BREAKER_RANGE.minMoves.max}\``,
      meaning: 'Moves that must have ended within the window before the rate is judged.',
    },
  },
};
