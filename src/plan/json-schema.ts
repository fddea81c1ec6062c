/**
 * JSON Schema (draft-07, what editors' YAML support reads best) from a field table. Pure. The
 * schema says everything about a plan that does not need the environment, the file system or a
 * comparison between two values: types, ranges, patterns, required fields, unknown keys, and which
 * keys exclude each other. Durations are checked for form only (JSON Schema cannot compare "90m"
 * with "1h"); the loader's named rules do the rest (docs/plan.md, "The plan in an editor").
 */
import { formatPlanDuration } from '../time/durations.js';
import type { Field, FieldTable, JsonSchema, SectionField } from './field-table.js';

const VAR_NAME = '[A-Za-z_][A-Za-z0-9_]*';

/** The text has a real ${VAR} reference (`$${` is an escaped, literal `${`). */
export const HAS_VAR_REF = `(?:^|[^$])\\$\\{${VAR_NAME}\\}`;
/** Every `${` in the text is an escape `$${` or a well-formed `${NAME}`. */
export const NO_MALFORMED_REF = `^(?:\\$\\$\\{|\\$\\{${VAR_NAME}\\}|\\$(?!\\{)|[^$])*$`;
/** Nothing but ${VAR} references: how secret fields must be written. */
export const ONLY_VAR_REFS = `^(?:\\$\\{${VAR_NAME}\\})+$`;
/** A duration as parseDuration reads it: `<integer><unit>` parts, largest unit first, each once. */
export const DURATION_PATTERN = '^\\s*(?=\\d)(?:\\d+h)?(?:\\d+m)?(?:\\d+s)?(?:\\d+ms)?\\s*$';

/** A string with a ${VAR}: what it says is known only when the plan is loaded. */
export const VAR_STRING: JsonSchema = {
  type: 'string',
  allOf: [{ pattern: HAS_VAR_REF }, { pattern: NO_MALFORMED_REF }],
};

/** A string field: `literal` as written, or anything with a ${VAR}; never a malformed `${`. */
export function textSchema(literal: JsonSchema = {}): JsonSchema {
  return { type: 'string', pattern: NO_MALFORMED_REF, anyOf: [literal, { pattern: HAS_VAR_REF }] };
}

/** `schema`, or null (an optional field's "use the default"). */
export function nullable(schema: JsonSchema): JsonSchema {
  return { anyOf: [schema, { type: 'null' }] };
}

/** A mapping whose key is present and not null: "this one is set". */
export function isSet(key: string): JsonSchema {
  return { type: 'object', required: [key], properties: { [key]: { not: { type: 'null' } } } };
}

function show(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The field's own schema, without the null an optional field also accepts. */
function valueSchema(f: Exclude<Field, SectionField | { type: 'group' }>): JsonSchema {
  switch (f.type) {
    case 'duration':
      return textSchema({ pattern: DURATION_PATTERN });
    case 'integer':
      return { anyOf: [{ type: 'integer', minimum: f.min, maximum: f.max }, VAR_STRING] };
    case 'boolean':
      return { anyOf: [{ type: 'boolean' }, VAR_STRING] };
    case 'enum':
      return textSchema({ enum: [...f.values] });
    case 'custom':
      return f.schema;
  }
}

/** The description an editor shows: the meaning, then the default and the allowed range. */
function describe(f: Field): string {
  const parts = [f.description];
  if (f.type === 'duration') parts.push(`Allowed: ${formatPlanDuration(f.min)} to ${formatPlanDuration(f.max)}.`);
  if (f.type === 'integer') parts.push(`Allowed: ${f.min} to ${f.max}.`);
  if (f.required) parts.push('Required.');
  else if (f.type !== 'section' && f.type !== 'group' && f.prop)
    parts.push(`Default: ${f.type === 'duration' ? formatPlanDuration(f.default) : show(f.default)}.`);
  if (f.deprecated) parts.push(`Deprecated: ${f.deprecated}`);
  return parts.join(' ');
}

function fieldSchema(f: Field): JsonSchema {
  if (f.type === 'section')
    // An optional section may be null ("take the defaults") only when it has no required field of
    // its own: the loader reads `prometheus: null` as a section without its required url.
    return sectionSchema(f.fields, {
      description: describe(f),
      nullable: !f.required && !Object.values(f.fields).some((c) => c.type !== 'group' && c.required),
      extra: f.schema,
    });
  if (f.type === 'group') throw new Error('a group is not a single key');
  const value = valueSchema(f);
  const out: JsonSchema = { description: describe(f), ...(f.required ? value : nullable(value)) };
  if (f.type !== 'custom' && !f.required)
    out.default = f.type === 'duration' ? formatPlanDuration(f.default) : f.default;
  if (f.deprecated) out.deprecationMessage = `Deprecated: ${f.deprecated}`;
  return out;
}

function sectionSchema(
  table: FieldTable,
  opts: { description?: string; nullable: boolean; extra?: JsonSchema | undefined },
): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  const allOf: JsonSchema[] = [];
  for (const [key, f] of Object.entries(table)) {
    if (f.type === 'group') {
      for (const [member, m] of Object.entries(f.members))
        properties[member] = { description: m.description, ...nullable(m.schema) };
      if (f.schema) allOf.push(f.schema);
      continue;
    }
    properties[key] = fieldSchema(f);
    if (f.required) required.push(key);
  }
  if (opts.extra) allOf.push(opts.extra);
  return {
    ...(opts.description ? { description: opts.description } : {}),
    type: opts.nullable ? ['object', 'null'] : 'object',
    properties,
    additionalProperties: false,
    ...(required.length > 0 ? { required } : {}),
    ...(allOf.length > 0 ? { allOf } : {}),
  };
}

/** The JSON Schema of a document described by `table`. */
export function createJsonSchema(table: FieldTable, meta: { title: string; description: string }): JsonSchema {
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: meta.title,
    ...sectionSchema(table, { description: meta.description, nullable: false }),
  };
}
