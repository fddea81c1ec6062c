/**
 * How GitLab's Ruby stack turns request text into integers, in the three ways the sandbox meets:
 * Grape's `type: Integer` (a strict parse, 400 otherwise), Ruby's `to_i` (used by coercers such
 * as `HashOfIntegerValues`), and ActiveRecord's integer cast of a String id given to `find_by`.
 */
import { invalidParam } from './errors.js';

/**
 * A path parameter Grape declares `type: Integer` (`repository_storage_move_id`, a Geo site's
 * `id`): digits with an optional sign, else 400 `{"error":"<name> is invalid"}`. A negative value
 * is valid and simply finds nothing.
 */
export function intParam(value: string | undefined, name: string): number {
  if (value === undefined || !/^[+-]?\d{1,15}$/.test(value)) throw invalidParam(`${name} is invalid`);
  return Number(value);
}

/**
 * Ruby's `to_i` on what JSON or a form can carry, or undefined where Ruby has no `to_i` (true,
 * false, arrays, hashes raise NoMethodError). Strings: leading whitespace, a sign, then decimal
 * digits with single underscores between them, up to the first other character; no digits is 0.
 * Floats are truncated toward zero; nil is 0.
 */
export function rubyToI(value: unknown): number | undefined {
  if (value === null) return 0;
  if (typeof value === 'number') return Number.isFinite(value) ? Math.trunc(value) + 0 : undefined;
  if (typeof value !== 'string') return undefined;
  const m = /^[\t\n\v\f\r ]*([+-]?)(\d+(?:_\d+)*)/.exec(value);
  if (!m) return 0;
  const n = Number((m[2] as string).replaceAll('_', ''));
  return m[1] === '-' ? -n + 0 : n;
}

/**
 * The id ActiveRecord queries for when a String reaches an integer column (`Snippet.find_by(id:
 * params[:id])`): text that does not start like a number (`NUMERIC_REGEX`, optional whitespace
 * and sign, then a digit) serializes to nil and matches nothing (undefined here); anything else
 * is cast with `to_i`, so `12abc` is 12.
 */
export function activeRecordId(text: string): number | undefined {
  if (!/^\s*[+-]?\d/.test(text)) return undefined;
  return rubyToI(text);
}
