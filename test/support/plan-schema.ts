/** schema/plan.schema.json compiled by ajv, as the schema tests use it. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Ajv } from 'ajv';

export const PLAN_SCHEMA_FILE = resolve(import.meta.dirname, '../../schema/plan.schema.json');

/** Compiles the plan schema (the checked-in file unless `text` is given) in ajv's strict mode. */
export function compilePlanSchema(text = readFileSync(PLAN_SCHEMA_FILE, 'utf8')) {
  const ajv = new Ajv({ allErrors: true, strict: true });
  // yaml-language-server's keyword for deprecated fields.
  ajv.addKeyword('deprecationMessage');
  return ajv.compile(JSON.parse(text) as object);
}
