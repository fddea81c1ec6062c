/**
 * The names of the variables a notify command may be given, for the catalogue of error codes (which
 * leaves them out). Apart from ./exec.ts because it reads the events' schemas, which a run does
 * not load (zod was a tenth of a run's start-up).
 */
import { RUN_EVENT_DOCS } from '../events/run-events.js';
import { HOOK_VARIABLES, envName } from './exec.js';

/**
 * Every `SHARDMOVE_*` name a command may be given: HOOK_VARIABLES and one per field of the public
 * events. They share the error codes' form and are none (the catalogue of codes leaves them out).
 */
export function hookVariableNames(): string[] {
  const fields = new Set(['v', 'seq', 'at', 'type', ...RUN_EVENT_DOCS.flatMap((d) => d.fields.map((f) => f.name))]);
  return [...HOOK_VARIABLES, ...[...fields].map(envName)];
}
