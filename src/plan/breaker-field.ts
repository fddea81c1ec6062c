/**
 * `retry.pause_after: {failures: N, within: DURATION}`: the failure breaker. When N moves
 * fail within that window the run pauses, exactly as `shardmove control --pause` does, until an
 * operator unpauses it. Absent: off (a run halves its cap through the throttle, if any, and goes on).
 */
import type { Node } from 'yaml';
import { formatPlanDuration } from './durations.js';
import type { FieldDoc, JsonSchema } from './field-table.js';
import { duration, integer } from './fields.js';
import { DURATION_PATTERN, VAR_STRING, textSchema } from './json-schema.js';
import type { Entry, Reader } from './reader.js';
import type { FailureBreaker } from './values.js';

export const PAUSE_AFTER_KEYS = ['failures', 'within'] as const;
/** Bounds: a breaker that trips on one failure is allowed (strict rehearsals); windows from a second to a week. */
export const BREAKER_RANGE = {
  failures: { min: 1, max: 100_000 },
  withinMs: { min: 1_000, max: 7 * 86_400_000 },
} as const;

const get = (m: Map<string, Entry>, k: string): Node | null => m.get(k)?.value ?? null;

/** Reads `retry.pause_after`; undefined when absent or unusable (then reported at its node). */
export function readPauseAfter(r: Reader, node: Node, path: string, invalid: Set<string>): FailureBreaker | undefined {
  r.mark(path, r.posOf(node));
  const m = r.map(node, path, PAUSE_AFTER_KEYS);
  if (!m) {
    invalid.add(path);
    return undefined;
  }
  for (const k of PAUSE_AFTER_KEYS) {
    if (r.isNull(get(m, k))) {
      r.error(`${path}.${k}`, r.posOf(node), `is required: write ${path}: {failures: 5, within: 10m}`);
      invalid.add(path);
    }
  }
  const failures = integer(r, get(m, 'failures'), `${path}.failures`, 0, invalid);
  const withinMs = duration(r, get(m, 'within'), `${path}.within`, 0, invalid);
  const inRange = (v: number, b: { min: number; max: number }) => v >= b.min && v <= b.max;
  if (!invalid.has(`${path}.failures`) && !r.isNull(get(m, 'failures')) && !inRange(failures, BREAKER_RANGE.failures)) {
    r.error(
      `${path}.failures`,
      r.posOf(get(m, 'failures')),
      `expected a whole number from ${BREAKER_RANGE.failures.min} to ${BREAKER_RANGE.failures.max}`,
    );
    invalid.add(path);
  }
  const w = BREAKER_RANGE.withinMs;
  if (!invalid.has(`${path}.within`) && !r.isNull(get(m, 'within')) && !inRange(withinMs, w)) {
    r.error(
      `${path}.within`,
      r.posOf(get(m, 'within')),
      `expected a duration from ${formatPlanDuration(w.min)} to ${formatPlanDuration(w.max)}`,
    );
    invalid.add(path);
  }
  return invalid.has(path) || invalid.has(`${path}.failures`) || invalid.has(`${path}.within`)
    ? undefined
    : { failures, withinMs };
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
    within: textSchema({ pattern: DURATION_PATTERN }),
  },
  required: ['failures', 'within'],
  additionalProperties: false,
};

export const PAUSE_AFTER_DOC: FieldDoc = {
  type: 'mapping',
  default: 'absent (off)',
  more: 'See [the failure breaker](operations.md#the-failure-breaker).',
  keys: {
    failures: {
      type: 'integer',
      default: 'required',
      allowed: `\`${BREAKER_RANGE.failures.min}\` to \`${BREAKER_RANGE.failures.max}\``,
      meaning: 'Failed moves that trip the breaker.',
    },
    within: {
      type: 'duration',
      default: 'required',
      allowed: '`1s` to `7d`',
      meaning: 'The window they must fail within.',
    },
  },
};
