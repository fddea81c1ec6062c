/**
 * The public events of `run --events` (docs/events.md): one JSON object per line, for runbooks,
 * notifications and other automation. Declared once, here, beside the checkpoint's audit vocabulary
 * (./vocabulary.ts) that they are made from (./run-events-of-audit.ts): each type with its zod
 * schema and the words docs/events.md shows for it, so the page's table is generated from this file
 * (`npm run docs`) and a test fails when it is stale. A concept has one name in both: where the audit
 * log keeps an event the public file also has, it has the same name and the same fields (the public
 * line may carry more, and writes times as ISO text where the log keeps milliseconds).
 *
 * Versioned by `v`: a new field or a new event type keeps the version (readers must ignore what they
 * do not know); renaming, removing or retyping a field raises it.
 */
import { z } from 'zod';
import { FAILURE_CLASSES } from './failure-class.js';
import type { RunEventName } from '../plan/event-names.js';
import { EVENTS_VERSION } from './events-version.js';
import { FINAL_STATES } from './vocabulary.js';
import { PAUSE_HOLDERS } from './hold.js';

/** The version every line carries in `v` (./events-version.ts: a run writes lines without loading zod). */
export { EVENTS_VERSION };

/** A failure class (../report/failure-class.ts, docs/failures.md). */
const failureClass = z.enum(FAILURE_CLASSES);
const kind = z.enum(['projects', 'snippets', 'groups']);
const item = { kind, source: z.string(), id: z.number().int() };
const control = z.object({ cap: z.number().int().min(0), paused: z.boolean() });
const count = z.number().int().min(0);

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

/** What docs/events.md says of one type: each field in a few words ('' when its name says it all), and when it comes. */
export interface RunEventDoc<F extends string = string> {
  fields: { readonly [K in F]: string };
  when: string;
}

/** One type: its schema (the fields every line has included) and its words. */
function declare<T extends string, S extends z.ZodRawShape>(type: T, shape: S, doc: RunEventDoc<keyof S & string>) {
  return { schema: z.object({ ...base, type: z.literal(type), ...shape }), doc };
}

const ITEM_DOC = { kind: '', source: '', id: '' } as const;

/** Every type, in the order docs/events.md lists them. */
const DECLARED = [
  declare(
    'run.started',
    {
      plan: z.string(),
      checkpoint: z.string(),
      resumed: z.boolean(),
      dryRun: z.boolean(),
      pid: z.number().int(),
      host: z.string(),
    },
    {
      fields: { plan: '', checkpoint: 'path', resumed: 'bool', dryRun: 'bool', pid: '', host: '' },
      when: 'The run holds the lock and starts (or resumes) the machine.',
    },
  ),
  declare(
    'step.started',
    { step: z.string() },
    {
      fields: { step: '' },
      when: 'A step begins: `preflight`, `storages`, `weights`, `drain <source>/<kind>` (one per source and kind), `verify`, `geo`. A resumed run starts the step it stopped in again.',
    },
  ),
  declare(
    'step.ended',
    { step: z.string(), outcome: z.enum(['ok', 'failed', 'interrupted', 'stopped']), durationMs: count },
    {
      fields: { step: '', outcome: '`ok`, `failed`, `interrupted`, `stopped`', durationMs: '' },
      when: 'The step ended. `failed`: the run failed in it (see `run.finished.error`); `stopped`: a stop from outside ended the run in it (added within version 1).',
    },
  ),
  declare(
    'move.scheduled',
    { ...item, moveId: z.number().int(), moveState: z.string().nullable(), bulk: z.boolean() },
    {
      fields: { ...ITEM_DOC, id: "the item's id", moveId: '', moveState: 'or null', bulk: 'bool' },
      when: 'A move of the item exists: our POST was answered, a move created by a POST whose answer was lost was found, or (bulk mode, `bulk: true`) a move of the bulk POST was attributed to the item.',
    },
  ),
  declare(
    'move.finished',
    { ...item, moveId: z.number().int(), cleanupFailed: z.boolean(), error: z.string().nullable() },
    {
      fields: { ...ITEM_DOC, moveId: '', cleanupFailed: 'bool', error: 'or null' },
      when: "The move ended `finished`, or `cleanup failed` (`cleanupFailed: true`, with GitLab's `error_message`): the item is on the destination either way.",
    },
  ),
  /** `class` was added in version 1: readers of older lines see none. */
  declare(
    'move.failed',
    { ...item, moveId: z.number().int(), error: z.string().nullable(), class: failureClass.optional() },
    {
      fields: {
        ...ITEM_DOC,
        moveId: '',
        error: "GitLab's `error_message`, or null: always null before GitLab 16.7",
        class: "its failure class for the instance's release, [failures.md](failures.md)",
      },
      when: 'The move failed. A retry follows after `retry.backoff`, or `move.quarantined` when the attempts are used up.',
    },
  ),
  declare(
    'move.quarantined',
    {
      ...item,
      reason: z.string(),
      attempts: z.number().int().nullable(),
      stuck: z.boolean(),
      class: failureClass.optional(),
    },
    {
      fields: {
        ...ITEM_DOC,
        reason: '',
        attempts: 'or null',
        stuck: 'bool',
        class:
          "the reason's failure class, [failures.md](failures.md); a tar failure whose destination's free space shardmove read as too small carries its note in `reason` and is `no-space`, while its `move.failed` says what GitLab said",
      },
      when: 'The item is given up (out of attempts, refused, or its move is stuck: `stuck: true`). `status` lists it; `run --retry-quarantined` tries it again.',
    },
  ),
  declare(
    'cap.changed',
    {
      ...control.shape,
      previous: control.nullable(),
      reason: z.string(),
      /** Added in version 1: readers of older lines see none. */
      limit: z
        .enum(['plan', 'control', 'paused', 'window', 'rule', 'throttle', 'queue', 'stopping', 'ratelimit', 'outage'])
        .optional(),
      /** limit rule (added in version 1). */
      rule: z.string().optional(),
      since: z.iso.datetime().nullable().optional(),
    },
    {
      fields: {
        cap: 'moves in flight allowed, 0 while paused or outside every window',
        paused: '',
        previous: '`{cap, paused}` or null',
        reason: 'in words',
        limit:
          'what set it: `plan`, `control`, `paused`, `window`, `rule`, `throttle`, `queue`, `stopping`, `outage` (the instance does not answer)',
        rule: 'with `limit: "rule"` only: its name; `capacity:<storage>` for the room',
        since: 'with `limit: "rule"` only: ISO time the condition began',
      },
      when: 'The cap in force, as the drain computes and records it: when the first drain starts (`previous: null` in each process), then at every change of the operator\'s cap (`shardmove control`, seen within a poll interval), the pause, a maintenance window, a [throttle rule on Prometheus](operations.md#rules-and-room-from-prometheus) that holds or cannot be read (`limit: "rule"`, `reason` such as `rule disk-busy: 0.95 {device="sda"} above 0.9: no new move while it holds`), or the throttle\'s cap (`reason` such as `API latency p90 ... above throttle.latency_p90 ...`, `Gitaly unhealthy ...`, `recovering: ...`). The same value as `status`, the progress line, the metrics file\'s `shardmove_concurrency_cap` and the HTML report\'s timeline. A new wording of the same cap is not a change. `limit` was added within version 1: older lines have none; `rule` and `since` likewise.',
    },
  ),
  declare(
    'run.paused',
    {
      by: z.enum(PAUSE_HOLDERS),
      reason: z.string(),
      rule: z.string().optional(),
      until: z.iso.datetime().nullable().optional(),
    },
    {
      fields: {
        by: "who or what holds it. `control`: `shardmove control --pause`; `breaker`: the failure breaker, `retry.pause_after`; `rule`: a throttle rule on Prometheus; `capacity`: a destination out of room; `window`: outside every maintenance window; `throttle`: the throttle at 0, Gitaly unhealthy; `queue`: a bulk move's job still in Sidekiq's queue; `ratelimit`: the instance's application rate limit holds the run's reads until its window ends; `outage`: the instance does not answer (network errors, timeouts, 502/503/504), for up to `instance.outage_wait`",
        reason: 'in words, as `cap.changed` says it',
        rule: 'with `by` `rule` or `capacity` only: the rule, `capacity:<storage>` for the room',
        until:
          'with `by: "window"`: when the next window opens, ISO; null when none will. With `by: "ratelimit"`: when the rate limit\'s window ends',
      },
      when: 'The run stopped scheduling new moves (moves in flight are still polled to their end), recorded by the drain as the cap in force drops to 0: within a poll interval of `shardmove control --pause` or the breaker tripping, when a rule starts to hold, a window closes. Also written when a run starts held, and again when what holds a held run changes (a window closes while a rule holds, say). Added within version 1.',
    },
  ),
  declare(
    'run.unpaused',
    { by: z.enum(PAUSE_HOLDERS), cap: count },
    {
      fields: { by: 'what held it until now, as in `run.paused`', cap: 'moves in flight allowed from now on' },
      when: 'The run schedules new moves again: `shardmove control --unpause`, the rule or the room released, a window opened. Added within version 1.',
    },
  ),
  declare(
    'breaker.tripped',
    { failures: count, withinMs: count, reason: z.string() },
    {
      fields: {
        failures: 'moves that failed',
        withinMs: 'the window they failed in, ms: `retry.pause_after`',
        reason: '',
      },
      when: 'The failure breaker paused the run ([operations.md: The failure breaker](operations.md#the-failure-breaker)); `run.paused` with `by: "breaker"` follows. `shardmove control --unpause` goes on. Added within version 1.',
    },
  ),
  declare(
    'window.opened',
    { window: z.string(), closesAt: z.iso.datetime().nullable() },
    {
      fields: { window: '', closesAt: 'or null' },
      when: 'A maintenance window opened (`window` as the plan writes it; `closesAt` when the open time ends, ISO 8601). Also written at the start of a run inside a window.',
    },
  ),
  declare(
    'window.closed',
    { window: z.string(), nextOpensAt: z.iso.datetime().nullable() },
    {
      fields: { window: '', nextOpensAt: 'or null' },
      when: 'Outside every window: nothing new is scheduled until `nextOpensAt`. Also written at the start of a run outside every window (`window` is then empty).',
    },
  ),
  declare(
    'progress',
    {
      step: z.string().nullable(),
      total: count,
      done: count,
      inFlight: count,
      waiting: count,
      retrying: count,
      quarantined: count,
      staying: count,
      movesPerMinute: z.number().min(0),
      etaMs: z.number().min(0).nullable(),
      elapsedMs: count,
    },
    {
      fields: {
        step: 'or null',
        total: '',
        done: '',
        inFlight: '',
        waiting: '',
        retrying: '',
        quarantined: '',
        staying:
          'left on its source as planned: a partial drain whose `move.until` bound is reached leaves the items it never placed, and `move.select` leaves those it does not choose; `etaMs` does not wait for them',
        movesPerMinute: "this process's rate, as on the progress line; 0 while it is still measuring",
        etaMs: 'or null: unknown while measuring or held',
        elapsedMs: '',
      },
      when: "At the start, then every `--events-interval` (default `30s`, from `1s` to `1h`). Counts are items over every kind and source known so far, each in one of `done`, `inFlight`, `waiting`, `quarantined` and `staying` (they add up to `total`); `waiting` includes `retrying`. The rate counts only the moves that ended in this process (those it inherited in flight from an earlier one do not count), over the last 10 minutes, once 5 of them ended; a held run starts measuring again when it goes on. It is the progress line's rate, and the metrics file's ETA is the same.",
    },
  ),
  /** Added in version 1: readers of older lines see none. */
  declare(
    'network.split',
    { network: z.number().int(), bytes: z.number().min(0), extraBytes: z.number().min(0) },
    {
      fields: {
        network: "its root project's id",
        bytes:
          "what the network lands with on one destination: each member with the pool's objects, and one pool copy where the release makes one",
        extraBytes: "the pool's bytes: what each extra destination costs; 0 before GitLab 16.3, which copies no pool",
      },
      when: 'A fork network fits on no single destination with room for all of it, so its members are placed one by one and each destination they land on gets its own copy of the pool ([operations.md: Fork networks](operations.md#fork-networks)). Written once per network, when its first member is placed. Added within version 1.',
    },
  ),
  declare(
    'lock.taken_over',
    { previous: z.object({ pid: z.number().int(), host: z.string() }), reason: z.enum(['dead', 'stale']) },
    {
      fields: {
        previous: '`{pid, host}`',
        reason: '`dead`: its process is gone on this host; `stale`: its heartbeat was older than its lease',
      },
      when: "This run took over another run's lock ([operations.md: The run lock as a lease](operations.md#the-run-lock-as-a-lease)).",
    },
  ),
  declare(
    'lease.lost',
    { holder: z.object({ pid: z.number().int(), host: z.string() }).nullable() },
    {
      fields: { holder: '`{pid, host}` of the run that holds the lock now, or null: unlocked, or unknown' },
      when: 'Another runner took this run\'s lock over (or `shardmove unlock` removed it) while this one was paused or stalled: it stopped writing the checkpoint and ends; `run.finished` with `outcome: "leaseLost"` follows. Added within version 1.',
    },
  ),
  declare(
    'run.stopping',
    { by: z.enum(['control', 'file', 'console']), step: z.string(), inFlight: count },
    {
      fields: {
        by: '`control`: `shardmove control --stop`; `file`: the stop file beside the checkpoint; `console`: the web console (`shardmove serve`)',
        step: 'the step the run is in',
        inFlight: 'moves still in flight, followed to their end before the run exits',
      },
      when: 'A stop from outside was seen: nothing new starts; the run exits with `run.finished` (`outcome: "stopped"`, exit code 6) once nothing is in flight ([operations.md: Stopping a run from outside](operations.md#stopping-a-run-from-outside)). Added within version 1.',
    },
  ),
  declare(
    'run.finished',
    {
      outcome: z.enum(RUN_OUTCOMES),
      exitCode: z.number().int(),
      error: z.object({ code: z.string(), message: z.string() }).nullable(),
      quarantined: z.number().int().nullable(),
    },
    {
      fields: {
        outcome: '',
        exitCode: '',
        error: '`{code, message}` or null',
        quarantined: 'count, or null when unknown',
      },
      when: 'The last line.',
    },
  ),
] as const;

type Declared = typeof DECLARED;

/** The schemas of a list of declarations, as the tuple zod's union takes (`map` cannot say it keeps the length). */
type SchemasOf<T extends readonly { schema: unknown }[]> = { -readonly [K in keyof T]: T[K]['schema'] };

export const RunEventSchema = z.discriminatedUnion('type', DECLARED.map((d) => d.schema) as SchemasOf<Declared>);

export type RunEvent = z.infer<typeof RunEventSchema>;
export type RunEventType = RunEvent['type'];
/** An event as its producer builds it: the sink adds `v`, `seq` and `at`. */
export type RunEventBody = RunEvent extends infer E
  ? E extends RunEvent
    ? Omit<E, 'v' | 'seq' | 'at'>
    : never
  : never;
/** The body of one type. */
export type RunEventBodyOf<T extends RunEventType> = Extract<RunEventBody, { type: T }>;

/** True when A and B are the same set of names. */
type SameNames<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Every declared type has its name in ../plan/event-names.ts, and every name there its declaration here. */
const NAMES_DECLARED: SameNames<RunEventType, RunEventName> = true;
void NAMES_DECLARED;

/** Every type, in the documented order (docs/events.md). */
export const RUN_EVENT_TYPES: readonly RunEventType[] = DECLARED.map((d) => d.schema.shape.type.value);

/** The fields every line has: no type's own. */
const BASE_FIELDS = new Set(['v', 'seq', 'at', 'type']);

/** What docs/events.md says of one type: its fields in the schema's order, each with its words, and when it comes. */
export interface RunEventTypeDoc {
  type: RunEventType;
  fields: { name: string; words: string }[];
  when: string;
}

/** What docs/events.md says of each type, in the documented order (./event-docs.ts renders it). */
export const RUN_EVENT_DOCS: readonly RunEventTypeDoc[] = DECLARED.map((d) => {
  const words: Readonly<Record<string, string>> = d.doc.fields;
  return {
    type: d.schema.shape.type.value,
    fields: Object.keys(d.schema.shape)
      .filter((name) => !BASE_FIELDS.has(name))
      .map((name) => ({ name, words: words[name] ?? '' })),
    when: d.doc.when,
  };
});
