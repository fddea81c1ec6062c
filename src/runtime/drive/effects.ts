/**
 * The wrapper that provides the machine's seven named actors (the map `RunActors`, declared with
 * the actors in ../actors/) to the machine. The runtime provides the real map (./services.ts),
 * tests inject their own the same way. The wrapper keeps an interrupted run's results away from
 * the machine: once interrupted, a step's result never arrives, so the saved snapshot keeps the
 * step in flight and a restore invokes it again (every actor is safe to repeat).
 */
import type { Logger } from 'pino';
import { fromPromise } from 'xstate';
import type { AnyActorLogic } from 'xstate';
import type { ActorDeps, RunActors } from '../../actors/index.js';
import type { DrainInput, GeoOutput, VerifyInput, WeightsOutput } from '../../machine/types.js';
import { isBusyError } from '../../store/busy.js';

/** The actors as XState logic for `runMachine.provide`, and the switch that interrupts them. */
export interface Effects {
  readonly logic: Record<keyof RunActors, AnyActorLogic>;
  /** True once `interrupt` was called (or the signal was already aborted when the effects were made). */
  readonly interrupted: boolean;
  /** Stops results from reaching the machine and resolves when every step in flight has returned. */
  interrupt(): Promise<void>;
  /**
   * What the instance was changed with by a step that was in flight when the run was interrupted
   * (a write sent before the stop or Ctrl-C came, which the checkpoint does not record): for the
   * run's last words, so that an interrupted run never hides a write it made.
   */
  readonly lateWrites: readonly string[];
}

/**
 * Wraps `actors` around `deps`: each invocation is logged, tracked while in flight, and gated by
 * `interrupt`. A step that fails because the checkpoint stayed busy (another process held its write
 * lock past the busy timeout) is not a failure of the step: it goes to `onBusy`, which ends the run,
 * and never to the machine, which would record it as the step's failure in that same checkpoint.
 */
export function createEffects(
  actors: RunActors,
  deps: ActorDeps,
  log: Logger,
  onBusy: (err: unknown) => void = () => undefined,
): Effects {
  let interrupted = deps.signal.aborted;
  const inflight = new Set<Promise<unknown>>();
  const lateWrites: string[] = [];
  // Noted in the step's own promise, which `interrupt` waits for: said before the run ends.
  const noteLate = (name: keyof RunActors, value: unknown): void => {
    const late = interrupted ? lateWrite(name, value) : null;
    if (late) {
      lateWrites.push(late);
      log.warn({ step: name }, late);
    }
  };
  const never = () => new Promise<never>(() => undefined);
  const effect = <I, O>(name: keyof RunActors, fn: (input: I) => Promise<O>) =>
    fromPromise<O, I>(async ({ input }) => {
      if (interrupted) return never();
      log.info({ step: name, input }, 'step started');
      const p = fn(input).then((value) => {
        noteLate(name, value);
        return value;
      });
      inflight.add(p);
      let result: { ok: true; value: O } | { ok: false; error: unknown };
      try {
        result = { ok: true, value: await p };
      } catch (error) {
        result = { ok: false, error };
      } finally {
        inflight.delete(p);
      }
      if (interrupted) return never();
      if (!result.ok && isBusyError(result.error)) {
        log.error({ step: name, err: result.error }, 'the checkpoint stayed busy: the run stops');
        onBusy(result.error);
        return never();
      }
      if (!result.ok) {
        log.error({ step: name, err: result.error }, 'step failed');
        throw result.error;
      }
      log.info({ step: name }, 'step finished');
      return result.value;
    });
  const logic: Record<keyof RunActors, AnyActorLogic> = {
    preflight: effect('preflight', () => actors.preflight(deps)),
    storages: effect('storages', () => actors.storages(deps)),
    readWeights: effect('readWeights', () => actors.readWeights(deps)),
    weights: effect('weights', (i: { previous: Record<string, number> }) => actors.weights(deps, i)),
    drain: effect('drain', (i: DrainInput) => actors.drain(deps, i)),
    verify: effect('verify', (i: VerifyInput) => actors.verify(deps, i)),
    geo: effect('geo', () => actors.geo(deps)),
  };
  return {
    logic,
    get interrupted() {
      return interrupted;
    },
    lateWrites,
    async interrupt() {
      interrupted = true;
      log.warn({ inFlight: inflight.size }, 'interrupted; waiting for the step in flight to return');
      await Promise.allSettled([...inflight]);
    },
  };
}

/** What a step that ended after the interruption wrote to the instance, in words; null: nothing. */
function lateWrite(name: keyof RunActors, value: unknown): string | null {
  if (name === 'weights') {
    const w = value as WeightsOutput;
    return w.written
      ? `the weights were written (their PUT was sent before the stop came): repository_storages_weighted is now ${JSON.stringify(w.current)}`
      : null;
  }
  if (name === 'geo') {
    const sites = (value as GeoOutput).sites.filter((s) => s.error === null && s.results.length > 0);
    return sites.length > 0
      ? `the Geo resync was requested of ${sites.map((s) => `"${s.name}"`).join(', ')} before the stop came`
      : null;
  }
  return null;
}
