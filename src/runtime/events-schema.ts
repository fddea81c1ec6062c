/**
 * The schema of `run --events` (docs/events.md): one JSON object per line, for runbooks and other
 * automation. Defined once, here; the docs describe it and a test parses every line of a real run's
 * file against it. Versioned by `v`: a new field or a new event type keeps the version (readers
 * must ignore what they do not know); renaming, removing or retyping a field raises it.
 */
import { FAILURE_CLASSES } from '../report/failure-class.js';
import { z } from 'zod';
import { FINAL_STATES } from '../events/vocabulary.js';

/** A failure class (../report/failure-class.ts). */
const failureClass = z.enum(FAILURE_CLASSES);

/** The version every line carries in `v`. */
export const EVENTS_VERSION = 1;

const kind = z.enum(['projects', 'snippets', 'groups']);
const item = { kind, source: z.string(), id: z.number().int() };
const control = z.object({ cap: z.number().int().min(0), paused: z.boolean() });

/** Fields every line has. */
const base = {
  v: z.literal(EVENTS_VERSION),
  /** 1, 2, 3 ... per process: a gap would mean a lost line. */
  seq: z.number().int().positive(),
  /** ISO 8601, UTC, milliseconds. */
  at: z.iso.datetime(),
};

/** How a run ended, with the process's exit code (README: Exit codes). */
export const RUN_OUTCOMES = [
  ...FINAL_STATES,
  'interrupted',
  'stopped',
  'refused',
  'invalid',
  'leaseLost',
  'error',
] as const;

export const RunEventSchema = z.discriminatedUnion('type', [
  z.object({
    ...base,
    type: z.literal('run.started'),
    plan: z.string(),
    checkpoint: z.string(),
    resumed: z.boolean(),
    dryRun: z.boolean(),
    pid: z.number().int(),
    host: z.string(),
  }),
  z.object({ ...base, type: z.literal('step.started'), step: z.string() }),
  z.object({
    ...base,
    type: z.literal('step.ended'),
    step: z.string(),
    /** `stopped` (a stop from outside) was added in version 1. */
    outcome: z.enum(['ok', 'failed', 'interrupted', 'stopped']),
    durationMs: z.number().int().min(0),
  }),
  z.object({
    ...base,
    type: z.literal('move.scheduled'),
    ...item,
    moveId: z.number().int(),
    moveState: z.string().nullable(),
    bulk: z.boolean(),
  }),
  z.object({
    ...base,
    type: z.literal('move.finished'),
    ...item,
    moveId: z.number().int(),
    cleanupFailed: z.boolean(),
    error: z.string().nullable(),
  }),
  /** `class` (docs/failures.md) was added in version 1: readers of older lines see none. */
  z.object({
    ...base,
    type: z.literal('move.failed'),
    ...item,
    moveId: z.number().int(),
    error: z.string().nullable(),
    class: failureClass.optional(),
  }),
  z.object({
    ...base,
    type: z.literal('move.quarantined'),
    ...item,
    reason: z.string(),
    attempts: z.number().int().nullable(),
    stuck: z.boolean(),
    class: failureClass.optional(),
  }),
  z.object({
    ...base,
    type: z.literal('cap.changed'),
    ...control.shape,
    previous: control.nullable(),
    reason: z.string(),
    /** What set the cap (added in version 1: readers of older lines see none). */
    limit: z.enum(['plan', 'control', 'paused', 'window', 'rule', 'throttle', 'stopping']).optional(),
    /** limit rule: the rule that holds the run (`capacity:<storage>` for the room), and since when (added in version 1). */
    rule: z.string().optional(),
    since: z.iso.datetime().nullable().optional(),
  }),
  // Reserved for maintenance windows (issue 15, item 1): the shapes may still gain fields.
  z.object({ ...base, type: z.literal('window.opened'), window: z.string(), closesAt: z.iso.datetime().nullable() }),
  z.object({ ...base, type: z.literal('window.closed'), window: z.string(), nextOpensAt: z.iso.datetime().nullable() }),
  z.object({
    ...base,
    type: z.literal('progress'),
    step: z.string().nullable(),
    total: z.number().int().min(0),
    done: z.number().int().min(0),
    inFlight: z.number().int().min(0),
    waiting: z.number().int().min(0),
    retrying: z.number().int().min(0),
    quarantined: z.number().int().min(0),
    staying: z.number().int().min(0),
    movesPerMinute: z.number().min(0),
    etaMs: z.number().min(0).nullable(),
    elapsedMs: z.number().int().min(0),
  }),
  /** Added in version 1: readers of older lines see none. */
  z.object({
    ...base,
    type: z.literal('network.split'),
    network: z.number().int(),
    bytes: z.number().min(0),
    extraBytes: z.number().min(0),
  }),
  z.object({
    ...base,
    type: z.literal('lock.taken_over'),
    previous: z.object({ pid: z.number().int(), host: z.string() }),
    reason: z.enum(['dead', 'stale']),
  }),
  /** A stop from outside was seen (added in version 1): nothing new starts; the run ends once nothing is in flight. */
  z.object({
    ...base,
    type: z.literal('run.stopping'),
    by: z.enum(['control', 'file']),
    step: z.string(),
    inFlight: z.number().int().min(0),
  }),
  z.object({
    ...base,
    type: z.literal('run.finished'),
    outcome: z.enum(RUN_OUTCOMES),
    exitCode: z.number().int(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    quarantined: z.number().int().nullable(),
  }),
]);

export type RunEvent = z.infer<typeof RunEventSchema>;
export type RunEventType = RunEvent['type'];
/** An event as its producer builds it: the sink adds `v`, `seq` and `at`. */
export type RunEventBody = RunEvent extends infer E
  ? E extends RunEvent
    ? Omit<E, 'v' | 'seq' | 'at'>
    : never
  : never;

/** Every type of the schema, in the documented order (docs/events.md). */
export const RUN_EVENT_TYPES: readonly RunEventType[] = RunEventSchema.options.map((o) => o.shape.type.value);
