/**
 * `move.concurrency`: a number of moves in flight, or `auto` (`{auto: {min, max}}` with bounds of
 * its own), which lets the drain choose the cap from the throughput it measures
 * (src/schedule/auto-limit.ts). The helpers here give every reader of the plan the one number it
 * needs: the cap a fixed plan sets, the limiter's bounds, or what a plan under `auto` is shown as.
 */
import type { Node } from 'yaml';
import { isMap, isScalar } from 'yaml';
import type { JsonSchema } from './field-table.js';
import { VAR_STRING } from './json-schema.js';
import type { Reader } from './reader.js';

export const CONCURRENCY_RANGE = { min: 1, max: 1000 } as const;
/** The bounds of `auto` when the plan leaves them out. */
export const AUTO_CONCURRENCY_DEFAULTS = { min: 2, max: 64 } as const;

/** `move.concurrency: auto`, with its bounds. */
export interface AutoConcurrency {
  auto: { min: number; max: number };
}

/** The plan's `move.concurrency`: a fixed cap, or the limiter's bounds. */
export type PlanConcurrency = number | AutoConcurrency;

const BOUND: JsonSchema = {
  anyOf: [{ type: 'integer', minimum: CONCURRENCY_RANGE.min, maximum: CONCURRENCY_RANGE.max }, VAR_STRING],
};

export const CONCURRENCY_SCHEMA: JsonSchema = {
  anyOf: [
    { type: 'integer', minimum: CONCURRENCY_RANGE.min, maximum: CONCURRENCY_RANGE.max },
    { type: 'string', enum: ['auto'] },
    {
      type: 'object',
      required: ['auto'],
      additionalProperties: false,
      properties: {
        auto: { type: 'object', additionalProperties: false, properties: { min: BOUND, max: BOUND } },
      },
    },
    VAR_STRING,
  ],
};

const EXPECTED = `expected a whole number from ${CONCURRENCY_RANGE.min} to ${CONCURRENCY_RANGE.max}, auto, or {auto: {min: 2, max: 64}}`;

/** A scalar as a number or `auto` (a ${VAR} gives text). */
function scalar(r: Reader, node: Node, path: string): unknown {
  const v: unknown = isScalar(node) ? node.value : undefined;
  if (typeof v !== 'string') return v;
  const s = r.string(node, path);
  if (!s) return undefined;
  return s.fromVars && /^\s*\d+\s*$/.test(s.value) ? Number(s.value) : s.value.trim();
}

function inRange(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= CONCURRENCY_RANGE.min && v <= CONCURRENCY_RANGE.max;
}

/** Reads `move.concurrency`; reports at the node that is wrong and returns undefined then. */
export function readConcurrency(r: Reader, node: Node, path: string): PlanConcurrency | undefined {
  const at = r.posOf(node);
  r.mark(path, at);
  if (isMap(node)) {
    const m = r.map(node, path, ['auto']);
    if (!m) return undefined;
    const auto = m.get('auto');
    if (!auto) {
      r.error(path, at, `${EXPECTED}: the mapping needs its auto key`);
      return undefined;
    }
    const autoPath = `${path}.auto`;
    const bounds: { min: number; max: number } = { ...AUTO_CONCURRENCY_DEFAULTS };
    if (auto.value === null || (isScalar(auto.value) && auto.value.value === null)) return { auto: bounds };
    const b = r.map(auto.value, autoPath, ['min', 'max']);
    if (!b) return undefined;
    let ok = true;
    for (const key of ['min', 'max'] as const) {
      const e = b.get(key);
      if (!e?.value) continue;
      const v = scalar(r, e.value, `${autoPath}.${key}`);
      r.mark(`${autoPath}.${key}`, r.posOf(e.value));
      if (!inRange(v)) {
        r.error(
          `${autoPath}.${key}`,
          r.posOf(e.value),
          `expected a whole number from ${CONCURRENCY_RANGE.min} to ${CONCURRENCY_RANGE.max}`,
        );
        ok = false;
      } else bounds[key] = v;
    }
    if (ok && bounds.min > bounds.max) {
      r.error(
        autoPath,
        r.posOf(auto.value),
        `min (${bounds.min}) is more than max (${bounds.max}): the limiter keeps the cap between them`,
      );
      ok = false;
    }
    return ok ? { auto: bounds } : undefined;
  }
  const v = scalar(r, node, path);
  if (v === 'auto') return { auto: { ...AUTO_CONCURRENCY_DEFAULTS } };
  if (!inRange(v)) {
    r.error(path, at, EXPECTED);
    return undefined;
  }
  return v;
}

/** The limiter's bounds under `auto`, else null. */
export function autoBounds(c: PlanConcurrency): { min: number; max: number } | null {
  return typeof c === 'number' ? null : c.auto;
}

/**
 * The most moves the plan lets fly at once: the cap, or `auto`'s max (what sizes a connection pool,
 * bounds `queue_ahead`, or says "at most").
 */
export function concurrencyCeiling(c: PlanConcurrency): number {
  return typeof c === 'number' ? c : c.auto.max;
}

/**
 * The plan's fixed cap, or null under `auto`: a command that shows "the plan's" cap has no number
 * to show then, and reads the cap the run recorded instead.
 */
export function fixedConcurrency(c: PlanConcurrency): number | null {
  return typeof c === 'number' ? c : null;
}

/** The plan's `move.concurrency` in words: `8`, or `auto (2 to 64)`. */
export function describeConcurrency(c: PlanConcurrency): string {
  return typeof c === 'number' ? String(c) : `auto (${c.auto.min} to ${c.auto.max})`;
}
