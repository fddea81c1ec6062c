/**
 * `npm run schema`: writes what is generated from the plan's field table (src/plan/plan-fields.ts):
 * schema/plan.schema.json, and the field table in docs/plan.md (between its marker comments, the rest
 * of the page untouched). Both are checked in so editors and readers can use them;
 * src/plan/json-schema.test.ts and src/plan/field-docs.test.ts fail when either is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { withFieldsTable } from '../src/plan/field-docs.js';
import { renderPlanJsonSchema } from '../src/plan/schema.js';

const schemaFile = resolve(import.meta.dirname, '../schema/plan.schema.json');
writeFileSync(schemaFile, renderPlanJsonSchema());
process.stdout.write(`wrote ${schemaFile}\n`);

const docFile = resolve(import.meta.dirname, '../docs/plan.md');
writeFileSync(docFile, withFieldsTable(readFileSync(docFile, 'utf8')));
process.stdout.write(`wrote the field table in ${docFile}\n`);
