/**
 * Typed readers for single plan values: enums, durations, whole numbers and booleans. Each reports
 * at the value's node and returns the fallback when the value cannot be used.
 */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import { parseDuration } from './durations.js';
import type { Reader } from './reader.js';
import { showValue } from './secrets.js';

/** One of a fixed set of strings. */
export function readEnum<T extends string>(r: Reader, node: Node, path: string, allowed: readonly T[]): T | undefined {
  r.mark(path, r.posOf(node));
  const s = r.string(node, path);
  if (!s) return undefined;
  if (!(allowed as readonly string[]).includes(s.value)) {
    r.error(path, r.posOf(node), `${showValue(s.value)} is not one of ${allowed.join(', ')}`);
    return undefined;
  }
  return s.value as T;
}

/** A duration field: a string like "30s" (after ${VAR} expansion); null or absent means the default. */
export function duration(r: Reader, node: Node | null, path: string, fallback: number, invalid: Set<string>): number {
  if (r.isNull(node)) return fallback;
  const at = r.posOf(node);
  r.mark(path, at);
  if (isScalar(node) && typeof node!.value === 'number') {
    r.error(path, at, `a bare number is ambiguous; write a unit, e.g. "${node!.value}s" or "${node!.value}ms"`);
    invalid.add(path);
    return fallback;
  }
  const s = r.string(node, path);
  if (!s) {
    invalid.add(path);
    return fallback;
  }
  const d = parseDuration(s.value);
  if (!d.ok) {
    r.error(path, at, d.reason);
    invalid.add(path);
    return fallback;
  }
  return d.ms;
}

/** An integer field; a string is accepted only when it comes from ${VAR} (environment values are text). */
export function integer(r: Reader, node: Node | null, path: string, fallback: number, invalid: Set<string>): number {
  if (r.isNull(node)) return fallback;
  const at = r.posOf(node);
  r.mark(path, at);
  let value: unknown = isScalar(node) ? node!.value : undefined;
  if (typeof value === 'string') {
    const s = r.string(node, path);
    if (!s) {
      invalid.add(path);
      return fallback;
    }
    value = s.fromVars && /^\s*-?\d+\s*$/.test(s.value) ? Number(s.value) : s.value;
  }
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    r.error(path, at, 'expected a whole number');
    invalid.add(path);
    return fallback;
  }
  return value;
}

/** A boolean field; "true"/"false" strings are accepted only from ${VAR}. */
export function boolean(r: Reader, node: Node | null, path: string, fallback: boolean, invalid: Set<string>): boolean {
  if (r.isNull(node)) return fallback;
  const at = r.posOf(node);
  r.mark(path, at);
  let value: unknown = isScalar(node) ? node!.value : undefined;
  if (typeof value === 'string') {
    const s = r.string(node, path);
    if (!s) {
      invalid.add(path);
      return fallback;
    }
    value = s.fromVars && (s.value === 'true' || s.value === 'false') ? s.value === 'true' : s.value;
  }
  if (typeof value !== 'boolean') {
    r.error(path, at, 'expected true or false');
    invalid.add(path);
    return fallback;
  }
  return value;
}
