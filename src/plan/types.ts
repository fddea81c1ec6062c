/**
 * The normalised plan (version 1), as every other module sees it after loading and validation.
 * Durations are milliseconds; secrets are resolved values held only in memory, never persisted.
 */

import type { TableValue } from './field-table.js';
import type { PLAN_FIELDS } from './plan-fields.js';

export type {
  Credentials,
  Kind,
  MoveMode,
  MoveOrder,
  MoveSelect,
  PlanSchedule,
  SelectEntry,
  ThrottlePlan,
} from './values.js';
export { KINDS } from './values.js';

/**
 * The normalised plan: what the field table (plan-fields.ts) reads, field by field, under each
 * field's `prop`. Inferred from the table, never written beside it: adding a field there adds it here.
 */
export type Plan = TableValue<typeof PLAN_FIELDS>;
