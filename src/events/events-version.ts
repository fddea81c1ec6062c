/**
 * The version every `run --events` line carries in `v` (its schema: ./run-events.ts). Apart from
 * the schema so that a run does not load zod, which only the schema's readers (tests, tools) need:
 * the schema's hundred modules were a tenth of a run's start-up.
 */
export const EVENTS_VERSION = 1;
