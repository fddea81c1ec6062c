/**
 * The plan's identity for resume: a checkpoint remembers the hash of the plan it was started with,
 * and `run` refuses to continue under a changed plan. Credentials are left out entirely (values,
 * variable names and file paths alike), so rotating a token, say after a revocation, or moving it
 * from ${VAR} to a file, is not a plan change. Every other field, defaults included, is in.
 */
import { createHash } from 'node:crypto';
import type { Plan } from './types.js';

/** The normalised plan without its credentials: what the hash covers. */
export function planHashInput(plan: Plan): unknown {
  const { credentials: _credentials, ...instance } = plan.instance;
  return { ...plan, instance };
}

/** JSON with object keys sorted at every level, so the hash ignores field order and formatting. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** sha256 (hex) of the canonical JSON of the plan without credentials. */
export function hashPlan(plan: Plan): string {
  return createHash('sha256').update(canonicalJson(planHashInput(plan))).digest('hex');
}
