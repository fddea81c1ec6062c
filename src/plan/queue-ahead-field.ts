/**
 * `move.queue_ahead`: a number of successors POSTed early (0, the default, posts none), or `auto`,
 * which lets the drain choose the depth from what it measures (src/actors/drain/queue-ahead.ts),
 * within `move.exposure_budget`.
 */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import type { JsonSchema } from './field-table.js';
import { VAR_STRING } from './json-schema.js';
import type { Reader } from './reader.js';

export const QUEUE_AHEAD_RANGE = { min: 0, max: 1000 } as const;
/** The read-only time `auto` may add: at most a tenth more than the moves' own time. */
export const DEFAULT_EXPOSURE_BUDGET = 1.1;

export const QUEUE_AHEAD_SCHEMA: JsonSchema = {
  anyOf: [
    { type: 'integer', minimum: QUEUE_AHEAD_RANGE.min, maximum: QUEUE_AHEAD_RANGE.max },
    { type: 'string', enum: ['auto'] },
    VAR_STRING,
  ],
};

/** A whole number in range, or `auto` (written as is or through a ${VAR}). */
export function readQueueAhead(r: Reader, node: Node, path: string): number | 'auto' | undefined {
  const at = r.posOf(node);
  r.mark(path, at);
  let v: unknown = isScalar(node) ? node.value : undefined;
  if (typeof v === 'string') {
    const s = r.string(node, path);
    if (!s) return undefined;
    v = s.fromVars && /^\s*\d+\s*$/.test(s.value) ? Number(s.value) : s.value.trim();
  }
  if (v === 'auto') return 'auto';
  const { min, max } = QUEUE_AHEAD_RANGE;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
    r.error(path, at, `expected a whole number from ${min} to ${max}, or auto`);
    return undefined;
  }
  return v;
}
