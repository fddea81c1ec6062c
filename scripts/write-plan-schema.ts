/**
 * `npm run schema`: writes schema/plan.schema.json from the plan's field table (src/plan/plan-fields.ts).
 * The file is checked in so editors can use it; src/plan/json-schema.test.ts fails when it is stale.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderPlanJsonSchema } from '../src/plan/schema.js';

const file = resolve(import.meta.dirname, '../schema/plan.schema.json');
writeFileSync(file, renderPlanJsonSchema());
process.stdout.write(`wrote ${file}\n`);
