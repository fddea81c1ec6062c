/**
 * What a plan field is, as data: its type, default, allowed range or values, whether it is required
 * and one line that says what it means. The plan's own table (plan-fields.ts) is written in these
 * terms, and two consumers read it: the loader's walker (schema.ts), which reads YAML nodes with
 * file:line:col, and the JSON Schema generator (json-schema.ts), which editors use. Adding a field is
 * one entry in the table; neither consumer needs to know its name.
 */
import type { Node } from 'yaml';
import type { Entry, Pos, Reader } from './reader.js';

/** A JSON Schema fragment (draft-07). */
export type JsonSchema = { [keyword: string]: unknown };

interface BaseField {
  /** What the field means: shown by editors, kept short. */
  description: string;
  /**
   * The property of the normalised Plan this field fills (`timeoutMs` for `instance.timeout`).
   * Absent for a field that a section's `finish` reads itself (a deprecated alias).
   */
  prop?: string;
  /** Missing or null is an error ("missing required field ..."); otherwise it takes the default. */
  required?: boolean;
  /** Set for a deprecated field: what to write instead. Editors show it. */
  deprecated?: string;
}

/** A duration written like "30s" or "1h30m"; the plan holds milliseconds. */
export interface DurationField extends BaseField {
  type: 'duration';
  default: number;
  min: number;
  max: number;
}

/** A whole number within a range. */
export interface IntegerField extends BaseField {
  type: 'integer';
  default: number;
  min: number;
  max: number;
}

export interface BooleanField extends BaseField {
  type: 'boolean';
  default: boolean;
}

/** One of a fixed set of words. */
export interface EnumField extends BaseField {
  type: 'enum';
  values: readonly string[];
  default: string;
}

/**
 * A field with its own reader (a URL, a storage list ...). `read` is called only for a present,
 * non-null value; it reports at the node and returns undefined when the value cannot be used (the
 * field then counts as invalid and takes `default`). `schema` is what JSON Schema can say about it.
 */
export interface CustomField extends BaseField {
  type: 'custom';
  default: unknown;
  read(r: Reader, node: Node, path: string, invalid: Set<string>): unknown;
  schema: JsonSchema;
}

/**
 * Several keys of one section that together make one value (token | token_file | oauth make the
 * credentials). `read` sees the whole section; `schema` adds the constraint across the keys.
 */
export interface GroupField extends BaseField {
  type: 'group';
  default: unknown;
  members: Readonly<Record<string, { description: string; schema: JsonSchema }>>;
  read(r: Reader, section: Map<string, Entry>, sectionPos: Pos, invalid: Set<string>): unknown;
  schema?: JsonSchema;
}

/** What a section's `finish` hook sees after its fields were read. */
export interface SectionContext {
  r: Reader;
  /** The section's known entries (undefined when the section is not a mapping). */
  entries: Map<string, Entry> | undefined;
  /** The values read so far, by `prop`; the hook may change them. */
  values: Record<string, unknown>;
  invalid: Set<string>;
  path: string;
}

/** A mapping of fields. */
export interface SectionField extends BaseField {
  type: 'section';
  fields: FieldTable;
  /**
   * A section that is off unless the plan writes its key (`throttle:`): absent, its property stays
   * undefined (and out of the plan's hash); written, even as null or `{}`, it is on with its defaults.
   */
  offWhenAbsent?: boolean;
  /** Cross-key reading the fields cannot do alone (a deprecated alias). Runs after the fields. */
  finish?: (ctx: SectionContext) => void;
  /** Constraints across the section's keys, added to its JSON Schema. */
  schema?: JsonSchema;
}

export type Field = DurationField | IntegerField | BooleanField | EnumField | CustomField | GroupField | SectionField;

/** Fields in the order they are read and documented. */
export type FieldTable = Readonly<Record<string, Field>>;

/** The YAML keys a section accepts: its fields' names and the members of its groups. */
export function knownKeys(table: FieldTable): string[] {
  return Object.entries(table).flatMap(([key, f]) => (f.type === 'group' ? Object.keys(f.members) : [key]));
}

/** One leaf of a table with its YAML path and its place in the normalised plan. */
export interface FlatField {
  /** Dotted YAML path: `poll.interval`. */
  path: string;
  /** Property path in the Plan: ['poll', 'intervalMs']; empty for a field without `prop`. */
  props: string[];
  field: Exclude<Field, SectionField>;
}

/** Every leaf field of a table, depth first in table order. */
export function flattenFields(table: FieldTable, path = '', props: string[] = []): FlatField[] {
  return Object.entries(table).flatMap(([key, f]): FlatField[] => {
    const p = path ? `${path}.${key}` : key;
    const pp = f.prop ? [...props, f.prop] : [];
    if (f.type === 'section') return flattenFields(f.fields, p, pp);
    return [{ path: p, props: pp, field: f }];
  });
}

/** The field at a dotted YAML path, e.g. `move.concurrency`. Throws for a path the table lacks (a bug). */
export function fieldAt(table: FieldTable, path: string): Exclude<Field, SectionField> {
  const found = flattenFields(table).find((f) => f.path === path);
  if (!found) throw new Error(`no plan field ${path}`);
  return found.field;
}

/** A range field's { min, max }. */
export function rangeOf(table: FieldTable, path: string): { min: number; max: number } {
  const f = fieldAt(table, path);
  if (f.type !== 'duration' && f.type !== 'integer') throw new Error(`plan field ${path} has no range`);
  return { min: f.min, max: f.max };
}

/** The defaults of a section, as the normalised plan holds them. */
export function defaultsOf(table: FieldTable): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of Object.values(table)) {
    if (!f.prop || (f.type === 'section' && f.offWhenAbsent)) continue;
    out[f.prop] = f.type === 'section' ? defaultsOf(f.fields) : structuredClone(f.default);
  }
  return out;
}
