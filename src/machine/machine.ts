/**
 * The run as one XState machine: pre-flight -> storages -> weights -> drain (each source, each kind)
 * -> verify -> geo -> done | doneWithQuarantine | failed. Pure: every effect is an actor named here
 * and provided by the runtime (or by a test) with `.provide()`; the placeholders below only fail.
 *
 * Restores are not transitions: XState restarts in-flight invoked actors and re-runs no entry
 * actions, so everything a step needs to resume (the drain indices, the previous weights) lives in
 * the context, and the machine has no `after` timers (a restore would drop them); waits belong to
 * the actors, which keep absolute deadlines in the checkpoint.
 */
import { assign, fromPromise, setup } from 'xstate';
import type { DoneActorEvent, ErrorActorEvent } from 'xstate';
import { codeOf } from '../shared/errors.js';
import { ActorNotProvidedError, INTERNAL, VERIFY_FAILED } from './errors.js';
import type {
  DrainInput,
  DrainOutput,
  DrainPair,
  GeoOutput,
  PreflightOutput,
  RunContext,
  RunInput,
  StepFailure,
  StepName,
  StoragesOutput,
  VerifyInput,
  VerifyOutput,
  WeightsOutput,
} from './types.js';

/** Stored with every snapshot; a checkpoint written by another version is not restored blindly. */
export const MACHINE_VERSION = 1;

/** Final state values and what they mean. */
export type { FinalState } from '../events/vocabulary.js';

function notProvided(name: string) {
  return async (): Promise<never> => {
    throw new ActorNotProvidedError(name);
  };
}

/** Turns whatever an actor threw into plain, persistable data. */
export function toStepFailure(step: StepName, error: unknown): StepFailure {
  const code = codeOf(error) ?? INTERNAL;
  const message = error instanceof Error ? error.message : String(error);
  return { step, code, message };
}

function drainKey(source: string, kind: string): string {
  return `${source}/${kind}`;
}

/** The (source, kind) the drain step is on, from the persisted indices. */
export function currentDrain(context: RunContext): DrainInput {
  const source = context.sources[context.sourceIndex];
  const kind = context.kinds[context.kindIndex];
  if (source === undefined || kind === undefined) throw new Error('drain indices out of range');
  return { source, kind };
}

/** Every (source, kind) of the run, in the order a drain per pair takes them: source by source, kind by kind. */
export function everyPair(context: Pick<RunContext, 'sources' | 'kinds' | 'access'>): DrainPair[] {
  return context.sources.flatMap((source) =>
    context.kinds.map((kind) => ({ source, kind, access: context.access?.[kind] ?? 'listing' })),
  );
}

/**
 * What the drain step is on, in words (status, the log): the pair of a drain per pair, or every
 * source and kind of the one schedule.
 */
export function drainLabel(
  context: Pick<RunContext, 'sources' | 'kinds' | 'sourceIndex' | 'kindIndex' | 'order'>,
): string {
  if (context.order === 'together') return `drain ${context.sources.join(',')}/${context.kinds.join(',')}`;
  return `drain ${context.sources[context.sourceIndex]}/${context.kinds[context.kindIndex]}`;
}

/** Where every step goes when its actor throws: `failed`, with the step and the cause recorded. */
function failAt(step: StepName) {
  return { target: '#run.failed', actions: { type: 'recordFailure', params: { step } } } as const;
}

export const runMachine = setup({
  types: {
    context: {} as RunContext,
    input: {} as RunInput,
  },
  actors: {
    preflight: fromPromise<PreflightOutput, void>(notProvided('preflight')),
    storages: fromPromise<StoragesOutput, void>(notProvided('storages')),
    readWeights: fromPromise<Record<string, number>, void>(notProvided('readWeights')),
    weights: fromPromise<WeightsOutput, { previous: Record<string, number> }>(notProvided('weights')),
    drain: fromPromise<DrainOutput, DrainInput>(notProvided('drain')),
    verify: fromPromise<VerifyOutput, VerifyInput>(notProvided('verify')),
    geo: fromPromise<GeoOutput, void>(notProvided('geo')),
  },
  actions: {
    recordFailure: assign({
      error: ({ event }, params: { step: StepName }) => toStepFailure(params.step, (event as ErrorActorEvent).error),
    }),
  },
  guards: {
    hasPreviousWeights: ({ context }) => context.previousWeights !== null,
    hasNoDrains: ({ context }) => context.sources.length === 0 || context.kinds.length === 0,
    isLastDrain: ({ context }) =>
      context.sourceIndex >= context.sources.length - 1 && context.kindIndex >= context.kinds.length - 1,
    skipsVerify: ({ context }) => context.dryRun || !context.verify,
    doesGeo: ({ context }) => context.geoResync && !context.dryRun,
    hasQuarantine: ({ context }) => Object.values(context.drains).some((d) => d.quarantined > 0),
    coversEveryPair: ({ event }) => (event as DoneActorEvent<DrainOutput>).output.perPair !== undefined,
    verifyFailed: ({ event }) => !(event as DoneActorEvent<VerifyOutput>).output.ok,
  },
}).createMachine({
  id: 'run',
  context: ({ input }) => ({
    sources: input.sources,
    destination: input.destination,
    destinations: input.destinations ?? [input.destination],
    kinds: input.kinds,
    verify: input.verify,
    geoResync: input.geoResync,
    dryRun: input.dryRun,
    ...(input.order ? { order: input.order } : {}),
    step: 'preflight',
    startedAt: input.startedAt ?? null,
    sourceIndex: 0,
    kindIndex: 0,
    previousWeights: input.previousWeights ?? null,
    newWeights: null,
    weightsWritten: false,
    instanceVersion: null,
    tokenExpiresAt: null,
    warnings: [...(input.warnings ?? [])],
    access: {},
    drains: {},
    verification: null,
    geo: null,
    error: null,
  }),
  initial: 'preflight',
  states: {
    preflight: {
      entry: assign({ step: 'preflight' }),
      invoke: {
        src: 'preflight',
        onDone: {
          target: 'storages',
          actions: assign(({ context, event }) => {
            const access = event.output.access ?? {};
            return {
              instanceVersion: event.output.version,
              enterprise: event.output.enterprise ?? null,
              tokenExpiresAt: event.output.tokenExpiresAt ?? null,
              warnings: [...context.warnings, ...event.output.warnings],
              notes: event.output.notes ?? [],
              wouldRefuse: event.output.wouldRefuse ?? [],
              access,
              // Kinds the instance cannot move at all are skipped (warned), not failed mid-run.
              kinds: context.kinds.filter((k) => access[k] !== 'unsupported'),
            };
          }),
        },
        onError: failAt('preflight'),
      },
    },
    storages: {
      entry: assign({ step: 'storages' }),
      invoke: {
        src: 'storages',
        onDone: {
          target: 'weights',
          actions: assign(({ context, event }) => ({ warnings: [...context.warnings, ...event.output.warnings] })),
        },
        onError: failAt('storages'),
      },
    },
    weights: {
      entry: assign({ step: 'weights' }),
      // Reading and writing are two states so the weights seen before any write are in the checkpoint
      // before the write starts: a crash mid-write cannot make the new weights look like the old ones.
      initial: 'choosing',
      states: {
        choosing: {
          always: [{ guard: 'hasPreviousWeights', target: 'writing' }, { target: 'reading' }],
        },
        reading: {
          invoke: {
            src: 'readWeights',
            onDone: { target: 'writing', actions: assign({ previousWeights: ({ event }) => event.output }) },
            onError: failAt('weights'),
          },
        },
        writing: {
          invoke: {
            src: 'weights',
            input: ({ context }) => ({ previous: context.previousWeights ?? {} }),
            onDone: {
              target: '#run.beforeDrain',
              actions: assign(({ context, event }) => ({
                newWeights: event.output.current,
                weightsWritten: context.weightsWritten || event.output.written,
                warnings: [...context.warnings, ...event.output.warnings],
              })),
            },
            onError: failAt('weights'),
          },
        },
      },
    },
    beforeDrain: {
      always: [{ guard: 'hasNoDrains', target: 'afterDrain' }, { target: 'drain' }],
    },
    drain: {
      entry: assign({ step: 'drain' }),
      invoke: {
        src: 'drain',
        input: ({ context }): DrainInput => {
          const at = currentDrain(context);
          const access = (kind: string) => context.access?.[kind as keyof typeof context.access] ?? 'listing';
          // The one schedule: one invocation drains every pair (a restored snapshot keeps the input it had).
          if (context.order === 'together')
            return { ...at, access: access(at.kind), ahead: null, pairs: everyPair(context) };
          const last =
            context.sourceIndex >= context.sources.length - 1 && context.kindIndex >= context.kinds.length - 1;
          const next = last || context.dryRun ? null : currentDrain({ ...context, ...nextDrain(context) });
          return { ...at, access: access(at.kind), ahead: next ? { ...next, access: access(next.kind) } : null };
        },
        onDone: [
          {
            guard: 'coversEveryPair',
            target: 'afterDrain',
            actions: assign({ drains: ({ context, event }) => recordPairs(context, event.output) }),
          },
          {
            guard: 'isLastDrain',
            target: 'afterDrain',
            actions: assign({ drains: ({ context, event }) => recordDrain(context, event.output) }),
          },
          {
            // Re-entering re-invokes the drain actor with the next (source, kind).
            target: 'drain',
            reenter: true,
            actions: assign(({ context, event }) => ({
              drains: recordDrain(context, event.output),
              ...nextDrain(context),
            })),
          },
        ],
        onError: failAt('drain'),
      },
    },
    afterDrain: {
      always: [{ guard: 'skipsVerify', target: 'afterVerify' }, { target: 'verify' }],
    },
    verify: {
      entry: assign({ step: 'verify' }),
      invoke: {
        src: 'verify',
        input: ({ context }): VerifyInput => ({ kinds: context.kinds, access: context.access ?? {} }),
        onDone: [
          {
            guard: 'verifyFailed',
            target: 'failed',
            actions: assign(({ event }) => ({
              verification: event.output,
              error: {
                step: 'verify' as const,
                code: VERIFY_FAILED,
                message: event.output.problems.length > 0 ? event.output.problems.join('; ') : 'verification failed',
              },
            })),
          },
          { target: 'afterVerify', actions: assign({ verification: ({ event }) => event.output }) },
        ],
        onError: failAt('verify'),
      },
    },
    afterVerify: {
      always: [{ guard: 'doesGeo', target: 'geo' }, { target: 'finishing' }],
    },
    geo: {
      entry: assign({ step: 'geo' }),
      invoke: {
        src: 'geo',
        onDone: {
          target: 'finishing',
          actions: assign(({ context, event }) => ({
            geo: event.output,
            warnings: [...context.warnings, ...event.output.warnings, ...geoSiteWarnings(event.output)],
          })),
        },
        onError: failAt('geo'),
      },
    },
    finishing: {
      always: [{ guard: 'hasQuarantine', target: 'doneWithQuarantine' }, { target: 'done' }],
    },
    done: { type: 'final', entry: assign({ step: 'done' }) },
    doneWithQuarantine: { type: 'final', entry: assign({ step: 'done' }) },
    failed: { type: 'final' },
  },
});

/** A site that could not be asked, or a registry class it refused: warnings, never a failed run. */
function geoSiteWarnings(output: GeoOutput): string[] {
  return output.sites.flatMap((s) => {
    const site = `site "${s.name}" (id ${s.siteId})`;
    if (s.error !== null) return [`Geo resync on ${site} failed: ${s.error}`];
    return s.results.flatMap((r) => r.errors.map((e) => `Geo resync of ${r.registryClass} on ${site}: ${e}`));
  });
}

function recordDrain(context: RunContext, output: DrainOutput): RunContext['drains'] {
  const at = currentDrain(context);
  return { ...context.drains, [drainKey(at.source, at.kind)]: { ...at, ...output } };
}

/** The one schedule's results, one entry per pair, as a drain per pair records its own. */
function recordPairs(context: RunContext, output: DrainOutput): RunContext['drains'] {
  const drains = { ...context.drains };
  for (const p of output.perPair ?? []) drains[drainKey(p.source, p.kind)] = p;
  return drains;
}

function nextDrain(context: RunContext): Pick<RunContext, 'sourceIndex' | 'kindIndex'> {
  if (context.kindIndex < context.kinds.length - 1)
    return { sourceIndex: context.sourceIndex, kindIndex: context.kindIndex + 1 };
  return { sourceIndex: context.sourceIndex + 1, kindIndex: 0 };
}
