/**
 * Typed readers for single plan values: enums, durations, whole numbers and booleans. Each reports
 * at the value's node and returns the fallback when the value cannot be used.
 */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import { parseDuration } from '../time/durations.js';
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

/**
 * A scalar's value for a typed field: YAML's own type, or for text that came from ${VAR} (environment
 * values are always text) what `fromText` makes of it. Undefined when the node is not a usable
 * scalar (the error is already recorded).
 */
function scalarValue(
  r: Reader,
  node: Node | null,
  path: string,
  fromText: (text: string) => unknown,
): { value: unknown } | undefined {
  const value: unknown = isScalar(node) ? node!.value : undefined;
  if (typeof value !== 'string') return { value };
  const s = r.string(node, path);
  if (!s) return undefined;
  return { value: s.fromVars ? fromText(s.value) : s.value };
}

/** A typed scalar field: the fallback when absent; an error at its line:col when `accept` refuses it. */
function typedField<T>(
  r: Reader,
  node: Node | null,
  path: string,
  fallback: T,
  invalid: Set<string>,
  fromText: (text: string) => unknown,
  accept: (v: unknown) => v is T,
  expected: string,
): T {
  if (r.isNull(node)) return fallback;
  const at = r.posOf(node);
  r.mark(path, at);
  const got = scalarValue(r, node, path, fromText);
  if (!got) {
    invalid.add(path);
    return fallback;
  }
  if (!accept(got.value)) {
    r.error(path, at, expected);
    invalid.add(path);
    return fallback;
  }
  return got.value;
}

/** An integer field; a string is accepted only when it comes from ${VAR} (environment values are text). */
export function integer(r: Reader, node: Node | null, path: string, fallback: number, invalid: Set<string>): number {
  const fromText = (t: string) => (/^\s*-?\d+\s*$/.test(t) ? Number(t) : t);
  const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
  return typedField(r, node, path, fallback, invalid, fromText, isInt, 'expected a whole number');
}

/** A boolean field; "true"/"false" strings are accepted only from ${VAR}. */
export function boolean(r: Reader, node: Node | null, path: string, fallback: boolean, invalid: Set<string>): boolean {
  const fromText = (t: string) => (t === 'true' || t === 'false' ? t === 'true' : t);
  const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
  return typedField(r, node, path, fallback, invalid, fromText, isBool, 'expected true or false');
}
