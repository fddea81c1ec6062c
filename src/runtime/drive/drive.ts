/**
 * Drives the run machine from its start (or restored snapshot) to its end: provides the actors,
 * saves the persisted snapshot after every transition, records the steps entered, tells the run's
 * observers (the progress line among them), and on SIGINT/SIGTERM lets the step in flight return before saving. Returns the outcome; what it
 * means for the exit code and how it is printed is the CLI's business.
 */
import { createActor } from 'xstate';
import type { ActorDeps } from '../../actors/index.js';
import { recordRateHold } from '../../actors/index.js';
import type { InstanceApi } from '../../api/types.js';
import { MACHINE_VERSION, drainLabel, runMachine } from '../../machine/machine.js';
import type { RunContext } from '../../machine/types.js';
import { PaceMeter } from '../../report/pace.js';
import type { Clock, Timer } from '../../shared/clock.js';
import { quietForStop, watchRunForStop } from '../control/stop-run.js';
import type { StopWatch } from '../control/stop.js';
import { refreshRelease } from '../holds/release-refresh.js';
import { tokenOutlivedWarning } from '../holds/token-deadline.js';
import { notifyObservers } from '../observe/observer.js';
import { realPlanPath } from '../ownership/plan-owner.js';
import type { RunOutcome } from '../types.js';
import { assumedCap } from '../auto-estimate.js';
import type { DriveArgs } from './args.js';
import { createEffects } from './effects.js';
import { finalEnding, interruptedEnding } from './ending.js';

/** Runs the machine until it is final or interrupted. Throws INTERNAL if it stops in a non-final state. */
export async function driveMachine(a: DriveArgs): Promise<RunOutcome> {
  const { opts, services, plan, store, log } = a;
  const clock = services.clock;
  const startedAt = clock.now();
  // This process's rate and ETA, one meter for the token check and every observer.
  const pace = new PaceMeter(startedAt, (from) => store.ownMovesSince(from, startedAt));
  // A stop from outside (control --stop, the stop file) ends the run as Ctrl-C does, once nothing is in flight.
  const stop = watchRunForStop({
    store,
    clock,
    log,
    opts,
    quiet: () => quietForStop(store, actor.getSnapshot().context, deps),
    step: () => currentStep(),
  });
  const signal = AbortSignal.any([opts.signal, stop.signal]);
  // How the run was named, for every command it prints or records.
  const named = { planFile: opts.planFile, statePath: opts.statePath };
  const deps = actorDepsOf(a, {
    signal,
    named,
    stop,
    instanceVersion: () => actor.getSnapshot().context.instanceVersion ?? null,
  });
  const rateHolds = startRateHolds(a.api, deps, clock);
  a.outage?.attach(deps);
  let failDrive: (err: unknown) => void = () => undefined;
  const effects = createEffects(services.actors, deps, log, (err) => failDrive(err));

  // The release is read at every start: a resume after an upgrade follows the new one.
  const snapshot = await refreshRelease(a.snapshot, a.api, log);
  const actor = createActor(
    runMachine.provide({ actors: effects.logic }),
    snapshot ? { snapshot, input: a.input } : { input: a.input },
  );
  const stepLabel = (c: RunContext): string =>
    c.step === 'drain' && c.sources[c.sourceIndex] ? drainLabel(c) : c.step;
  let lastLabel = '';
  const extraWarnings: string[] = [];
  // Once per run, when a drain starts: does the token outlive the estimated end?
  const checkTokenDeadline = (c: RunContext) => {
    if (extraWarnings.length === 0) extraWarnings.push(...tokenDeadlineWarning(a, pace, c));
  };
  const persist = () => {
    store.saveRun({
      planName: plan.name,
      planHash: a.hash,
      machineVersion: MACHINE_VERSION,
      snapshot: actor.getPersistedSnapshot(),
      plan: a.planRecord ?? null,
    });
  };
  const observers = opts.observers ?? [];
  deps.onProgress = () => {
    stop.check();
    notifyObservers(observers, log, 'progress');
  };

  let resolveFinal: (v: 'final') => void = () => undefined;
  const finished = new Promise<'final'>((resolve, reject) => {
    resolveFinal = resolve;
    failDrive = reject;
    actor.subscribe({
      next: (snap) => {
        if (effects.interrupted) return;
        // An error thrown here would escape XState as an uncaught exception: end the drive with it
        // instead (a write refused because the lease was lost, a full disk).
        try {
          persist();
          const label = snap.status === 'done' ? String(snap.value) : stepLabel(snap.context);
          if (label !== lastLabel) {
            lastLabel = label;
            store.appendEvent('step.started', { step: label }, clock.now());
            log.info({ step: label }, 'step entered');
            if (label.startsWith('drain ')) checkTokenDeadline(snap.context);
          }
        } catch (err) {
          reject(err);
          return;
        }
        if (snap.status === 'done') resolve('final');
      },
      error: (err) => reject(err),
    });
  });
  const stopped = new Promise<'interrupted'>((resolve) => {
    const onAbort = async () => {
      await effects.interrupt();
      resolve('interrupted');
    };
    if (signal.aborted) void onAbort();
    else signal.addEventListener('abort', () => void onAbort(), { once: true });
  });

  recordStart(a, startedAt);
  function currentStep(): string {
    const snap = actor.getSnapshot();
    return snap.status === 'done' ? String(snap.value) : stepLabel(snap.context);
  }
  notifyObservers(observers, log, 'started', {
    plan,
    checkpoint: store.file,
    host: services.host,
    fromSeq: a.fromSeq,
    store,
    notifications: store.notifications,
    clock,
    startedAt,
    ...(a.before ? { before: a.before } : {}),
    pace,
    dryRun: opts.dryRun,
    step: currentStep,
    instanceVersion: () => actor.getSnapshot().context.instanceVersion ?? null,
    stays: () => actor.getSnapshot().context.verification?.stays ?? null,
    named,
    signal,
  });
  actor.start();
  // A restored run that had already ended emits nothing: it is final at once.
  if (actor.getSnapshot().status === 'done') resolveFinal('final');
  else persist();
  // A stop asked for before this run started (the stop file left in place) is obeyed at once.
  stop.start();
  let ending: 'final' | 'interrupted';
  try {
    ending = await Promise.race([finished, stopped]);
  } catch (err) {
    actor.stop();
    throw err;
  } finally {
    clock.clearInterval(rateHolds);
    stop.close();
  }
  if (ending === 'interrupted') {
    persist();
    actor.stop();
    const step = stepLabel(actor.getSnapshot().context);
    return interruptedEnding(a, { stop, startedAt, step, late: [...effects.lateWrites] });
  }
  const snap = actor.getSnapshot();
  actor.stop();
  return finalEnding(a, { stop, startedAt, snap, extraWarnings });
}

/** What every actor of this run receives (ActorDeps, ../../actors/types.ts). */
function actorDepsOf(
  a: DriveArgs,
  r: {
    signal: AbortSignal;
    named: NonNullable<ActorDeps['named']>;
    stop: StopWatch;
    instanceVersion: NonNullable<ActorDeps['instanceVersion']>;
  },
): ActorDeps {
  const { opts } = a;
  return {
    api: a.api,
    store: a.store,
    plan: a.plan,
    clock: a.services.clock,
    log: a.log,
    signal: r.signal,
    dryRun: opts.dryRun,
    // The twin rehearses at the cap the estimate assumed, never at auto's max.
    ...(opts.dryRun ? { dryRunCap: assumedCap(a.plan, a.store.file).cap } : {}),
    ...(a.gate ? { gate: a.gate } : {}),
    ...(a.prometheus ? { prometheus: a.prometheus } : {}),
    // Read when asked: pre-flight sets it in the machine's context before any drain places anything.
    instanceVersion: r.instanceVersion,
    stopAsked: () => r.stop.asked(),
    ...(opts.acceptForeignMoves ? { acceptForeignMoves: true } : {}),
    ...(opts.refusedBeforePreflight?.length ? { refusedBeforePreflight: opts.refusedBeforePreflight } : {}),
    named: r.named,
  };
}

/**
 * The instance's rate limit holds reads beside the drain's loop too (a listing, pre-flight's
 * reads): its start and end are recorded once a second, so every output shows the hold.
 */
function startRateHolds(api: InstanceApi, deps: ActorDeps, clock: Clock): Timer | null {
  const rateHolds = api.rateHold
    ? clock.setInterval(() => {
        try {
          recordRateHold(deps);
        } catch {
          // A busy or refused checkpoint write: the next look records it.
        }
      }, 1_000)
    : null;
  rateHolds?.unref();
  return rateHolds;
}

/** The warning, said once, when the token expires before the estimated end; none otherwise. */
function tokenDeadlineWarning(a: DriveArgs, pace: PaceMeter, c: RunContext): string[] {
  if (!c.tokenExpiresAt) return [];
  const { store, log, opts } = a;
  const clock = a.services.clock;
  const { etaMs } = pace.read(clock.now(), store.summary(clock.now()), false);
  const warning = tokenOutlivedWarning(c.tokenExpiresAt, clock.now(), etaMs);
  if (!warning) return [];
  log.warn({ tokenExpiresAt: c.tokenExpiresAt, etaMs }, 'token expires before the estimated end');
  opts.stderr.write(`warning: ${warning}\n`);
  return [warning];
}

/** The run's start, recorded in the checkpoint and the log. */
function recordStart(a: DriveArgs, startedAt: number): void {
  const { opts, plan, store, log, services } = a;
  // A machine started again over an earlier process's items (after exit 1) is a resume too.
  const resumed = a.resumed ?? Boolean(a.snapshot);
  store.appendEvent(
    'run.started',
    {
      resumed,
      dryRun: opts.dryRun,
      pid: services.pid,
      // Which plan the checkpoint belongs to (../ownership/plan-owner.ts): its file, however the command named it.
      planFile: realPlanPath(opts.planFile, opts.cwd),
    },
    startedAt,
  );
  log.info({ plan: plan.name, resumed, dryRun: opts.dryRun, checkpoint: store.file }, 'run started');
}
