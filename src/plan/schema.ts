/**
 * Plan version 1 read off the YAML tree by walking the field table (plan-fields.ts) once: every type
 * problem is reported at its node, defaults are filled in, and the normalised Plan comes out.
 * Ranges and cross-field checks are the named rules in rules.ts; this file only decides what each
 * field is, and knows no field by name except `weights`, whose default depends on `move`.
 */
import type { Node } from 'yaml';
import type { Field, FieldTable, JsonSchema, SectionField } from './field-table.js';
import { defaultsOf, knownKeys } from './field-table.js';
import { boolean, duration, integer, readEnum } from './fields.js';
import { createJsonSchema } from './json-schema.js';
import { PLAN_FIELDS } from './plan-fields.js';
import type { Entry, Reader } from './reader.js';
import type { Plan } from './types.js';

export { DEFAULT_MIN_INTERVAL_MS } from './plan-fields.js';

/** Every default, as the normalised plan holds them (durations in ms). */
export const PLAN_DEFAULTS: Readonly<Plan> = defaultsOf(PLAN_FIELDS);

/** The plan's JSON Schema. */
export function createPlanJsonSchema(): JsonSchema {
  return createJsonSchema(PLAN_FIELDS, {
    title: 'shardmove plan',
    description:
      'A shardmove plan (version 1): which repository storages to empty, where to, and how carefully. See docs/plan.md.',
  });
}

/** The text of schema/plan.schema.json, which `npm run schema` writes and a test compares. */
export function renderPlanJsonSchema(): string {
  return `${JSON.stringify(createPlanJsonSchema(), null, 2)}\n`;
}

/** The schema's output: the plan (defaults filled in), the weights as written, and fields that failed. */
export interface SchemaResult {
  plan: Plan;
  /** The `weights` mapping exactly as the plan wrote it (before the default is merged in). */
  planWeights: Record<string, number>;
  /** Paths whose values could not be read; rules skip checks that involve them. */
  invalid: Set<string>;
}

/** Reads the whole plan tree. Never throws: problems go to the reader. */
export function readPlanTree(r: Reader, root: Node | null): SchemaResult {
  const invalid = new Set<string>();
  r.mark('', r.posOf(root));
  const top = root === null || r.isNull(root) ? undefined : r.map(root, '', knownKeys(PLAN_FIELDS));
  if (!top) {
    if (root === null || r.isNull(root)) r.error('', { line: 1, col: 1 }, 'the plan is empty; start with "version: 1"');
    return { plan: structuredClone(PLAN_DEFAULTS) as Plan, planWeights: {}, invalid: new Set(['*']) };
  }
  // The walker fills each field's prop with what its kind reads: the table's own value type.
  const plan = readFields(r, PLAN_FIELDS, top, '', invalid) as Plan;
  // weights: the default (destination 100, every source 0) with the plan's own weights merged over it
  const planWeights = plan.weights;
  const weights: Record<string, number> = {};
  for (const s of plan.move.from) weights[s] = 0;
  for (const to of plan.move.to) weights[to] = 100;
  plan.weights = Object.assign(weights, planWeights);
  return { plan, planWeights, invalid };
}

/**
 * Reads the fields of one mapping in table order. `entries` is undefined when the mapping itself
 * could not be read: every field then takes its default without a word (the mapping's problem is
 * already reported).
 */
function readFields(
  r: Reader,
  table: FieldTable,
  entries: Map<string, Entry> | undefined,
  path: string,
  invalid: Set<string>,
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(table)) {
    if (!field.prop) continue;
    const p = path ? `${path}.${key}` : key;
    values[field.prop] = readField(r, field, key, entries, p, path, invalid);
  }
  return values;
}

function readField(
  r: Reader,
  field: Field,
  key: string,
  entries: Map<string, Entry> | undefined,
  path: string,
  parent: string,
  invalid: Set<string>,
): unknown {
  if (field.type === 'group') {
    if (!entries) return structuredClone(field.default);
    return field.read(r, entries, r.at(parent), invalid) ?? structuredClone(field.default);
  }
  const entry = entries?.get(key);
  if (field.type === 'section' && field.offWhenAbsent && !entry) return undefined;
  const node = entry?.value ?? null;
  if (field.required && entries && r.isNull(node)) {
    r.error(path, entry ? r.posOf(entry.key) : r.at(parent), `missing required field ${key}`);
    invalid.add(path);
  }
  switch (field.type) {
    case 'section':
      return readSection(r, field, node, path, invalid);
    case 'duration':
      return duration(r, node, path, field.default, invalid);
    case 'integer':
      return integer(r, node, path, field.default, invalid);
    case 'boolean':
      return boolean(r, node, path, field.default, invalid);
    case 'enum':
    case 'custom': {
      if (r.isNull(node)) return structuredClone(field.default);
      const got = field.type === 'enum' ? readEnum(r, node!, path, field.values) : field.read(r, node!, path, invalid);
      if (got === undefined) {
        invalid.add(path);
        return structuredClone(field.default);
      }
      return got;
    }
  }
}

/**
 * A section: an optional one that is null or empty takes its defaults; one that is not a mapping is
 * reported and its fields take their defaults; a required one must be a mapping to be read at all.
 */
function readSection(
  r: Reader,
  field: SectionField,
  node: Node | null,
  path: string,
  invalid: Set<string>,
): Record<string, unknown> {
  if (node) r.mark(path, r.posOf(node));
  let entries = r.isNull(node) ? new Map<string, Entry>() : r.map(node, path, knownKeys(field.fields));
  if (!entries) invalid.add(path);
  if (field.required && (!entries || r.isNull(node))) {
    invalid.add(path);
    entries = undefined;
  }
  const values = readFields(r, field.fields, entries, path, invalid);
  field.finish?.({ r, entries, values, invalid, path });
  return values;
}
