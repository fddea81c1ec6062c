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

/**
 * What the field table in docs/plan.md shows beyond what a field's type, default and range say
 * (field-docs.ts renders it; `npm run schema` writes it). Markdown; links are relative to docs/plan.md.
 */
export interface FieldDoc {
  /** The Type column, for a field whose type does not name it (custom fields, group members). */
  type?: string;
  /** The Default column, after the default the field's value shows (alone when it shows none). */
  default?: string;
  /** The Allowed column, after the range or values the field's type shows (alone when it shows none). */
  allowed?: string;
  /** Said in the Meaning column after the description. */
  more?: string;
  /** One row per key of a custom field that reads a mapping itself (`throttle.decrease` ...). */
  keys?: Readonly<Record<string, KeyDoc>>;
}

/** A row for a key the field table does not hold as a field of its own. */
export interface KeyDoc {
  type: string;
  default?: string;
  allowed?: string;
  meaning: string;
}

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
  /** What docs/plan.md's field table adds to the above. */
  doc?: FieldDoc;
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
  members: Readonly<Record<string, { description: string; schema: JsonSchema; doc?: FieldDoc }>>;
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

/**
 * The value a field holds in the normalised plan, from its entry alone: numbers for durations and
 * integers, the listed words for an enum, what its reader returns for a custom or group field (a
 * reader returns undefined only for a value it refused, which makes the plan invalid), and the
 * section's own value for a section. The Plan type is this applied to the table (types.ts).
 */
export type FieldValue<F> = F extends { type: 'duration' | 'integer' }
  ? number
  : F extends { type: 'boolean' }
    ? boolean
    : F extends { type: 'enum'; values: readonly (infer V)[] }
      ? V
      : F extends { type: 'section'; fields: infer T }
        ? TableValue<T>
        : F extends { type: 'custom' | 'group'; read: (...args: never[]) => infer R }
          ? Exclude<R, undefined>
          : never;

/** The prop a field fills, for fields that have one. */
type PropOf<F> = F extends { prop: infer P extends string } ? P : never;
/** A field whose default is undefined, or a section that is off when absent, stays absent from the plan when the plan leaves it out. */
type Optional<F> = F extends { default: undefined } | { offWhenAbsent: true } ? true : false;

/** A table's normalised value: each field under its `prop`, optional where its default is undefined. */
export type TableValue<T> = {
  -readonly [K in keyof T as Optional<T[K]> extends true ? never : PropOf<T[K]>]: FieldValue<T[K]>;
} & {
  -readonly [K in keyof T as Optional<T[K]> extends true ? PropOf<T[K]> : never]?: FieldValue<T[K]> | null;
};

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
export function defaultsOf<T extends FieldTable>(table: T): TableValue<T> {
  const out: Record<string, unknown> = {};
  for (const f of Object.values(table)) {
    if (!f.prop || (f.type === 'section' && f.offWhenAbsent)) continue;
    out[f.prop] = f.type === 'section' ? defaultsOf(f.fields) : structuredClone(f.default);
  }
  // Each prop holds its field's default, which is what TableValue says a field holds.
  return out as TableValue<T>;
}
