/**
 * Drives the run machine from its start (or restored snapshot) to its end: provides the actors,
 * saves the persisted snapshot after every transition, records the steps entered, tells the run's
 * observers (the progress line among them), and on SIGINT/SIGTERM lets the step in flight return before saving. Returns the outcome; what it
 * means for the exit code and how it is printed is the CLI's business.
 */
import { migrationSpan, withThisProcess } from '../report/span.js';
import type { MigrationSpan } from '../report/span.js';
import { LEFT_SELECTION_LISTED, leftSelectionOf } from '../report/left-selection.js';
import { networksOfRun } from './status.js';
import type { Logger } from 'pino';
import { createActor } from 'xstate';
import type { Snapshot } from 'xstate';
import type { ActorDeps } from '../actors/index.js';
import { recordRateHold } from '../actors/index.js';
import { isFinalState } from '../events/vocabulary.js';
import type { InstanceApi } from '../api/types.js';
import { MACHINE_VERSION, drainLabel, runMachine } from '../machine/machine.js';
import type { RunContext, RunInput } from '../machine/types.js';
import type { Plan } from '../plan/types.js';
import type { FinalReportInput } from '../report/final.js';
import { PaceMeter } from '../report/pace.js';
import type { CheckpointStore } from '../store/types.js';
import { createEffects } from './effects.js';
import { scheduleOf } from '../schedule/gate.js';
import type { SchedulingGate } from '../schedule/gate.js';
import type { PrometheusClient } from '../api/prometheus.js';
import { isLeaseLostError } from '../store/lease.js';
import { recheckCopies } from './copies.js';
import { INTERNAL, RuntimeError } from './errors.js';
import { realPlanPath } from './plan-owner.js';
import { refreshRelease } from './holds/release-refresh.js';
import { notifyObservers } from './observe/observer.js';
import type { SecretSet } from './observe/logger.js';
import { noteConsumed, quietForStop, stoppedOutcome, watchRunForStop } from './control/stop-run.js';
import { tokenOutlivedWarning } from './holds/token-deadline.js';
import type { RunOptions, RunOutcome, RuntimeServices } from './types.js';

/** What one drive needs: the run's options, its open resources and the machine's input or snapshot. */
export interface DriveArgs {
  opts: RunOptions;
  services: RuntimeServices;
  plan: Plan;
  hash: string;
  /** The plan the hash covers, as canonical JSON (plan/hash.ts), kept with every snapshot. */
  planRecord?: string;
  store: CheckpointStore;
  api: InstanceApi;
  log: Logger;
  logFile: string;
  secrets: SecretSet;
  input: RunInput;
  snapshot: Snapshot<unknown> | undefined;
  /** Maintenance windows and throttle, when the plan has them. */
  gate?: SchedulingGate | undefined;
  /** The operator's Prometheus, when the plan names one (pre-flight runs every rule's query once). */
  prometheus?: PrometheusClient | undefined;
  /** Whether this goes on from an earlier process's work in the checkpoint (./resume.ts); absent: when a snapshot is restored. */
  resumed?: boolean;
  /** Instance outages (./outage-hold.ts): given the drain's deps, the hold is recorded as their cap. */
  outage?: { attach(deps: ActorDeps): void } | undefined;
  /** The log's last sequence number before this process took the lock (observers read on from it). */
  fromSeq: number;
  /** The whole migration before this process (../report/span.ts): the report covers it all. */
  before?: MigrationSpan;
  /** True once the run lock was lost: a stop request and the stop file are then left to its new holder. */
  leaseLost?: () => boolean;
}

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
  const deps: ActorDeps = {
    api: a.api,
    store,
    plan,
    clock,
    log,
    signal,
    dryRun: opts.dryRun,
    ...(a.gate ? { gate: a.gate } : {}),
    ...(a.prometheus ? { prometheus: a.prometheus } : {}),
    // Read when asked: pre-flight sets it in the machine's context before any drain places anything.
    instanceVersion: () => actor.getSnapshot().context.instanceVersion ?? null,
    stopAsked: () => stop.asked(),
    ...(opts.acceptForeignMoves ? { acceptForeignMoves: true } : {}),
    ...(opts.refusedBeforePreflight?.length ? { refusedBeforePreflight: opts.refusedBeforePreflight } : {}),
    named,
  };
  // The instance's rate limit holds reads beside the drain's loop too (a listing, pre-flight's
  // reads): its start and end are recorded once a second, so every output shows the hold.
  const rateHolds = a.api.rateHold
    ? clock.setInterval(() => {
        try {
          recordRateHold(deps);
        } catch {
          // A busy or refused checkpoint write: the next look records it.
        }
      }, 1_000)
    : null;
  rateHolds?.unref();
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
    if (extraWarnings.length > 0 || !c.tokenExpiresAt) return;
    const { etaMs } = pace.read(clock.now(), store.summary(clock.now()), false);
    const warning = tokenOutlivedWarning(c.tokenExpiresAt, clock.now(), etaMs);
    if (!warning) return;
    extraWarnings.push(warning);
    log.warn({ tokenExpiresAt: c.tokenExpiresAt, etaMs }, 'token expires before the estimated end');
    opts.stderr.write(`warning: ${warning}\n`);
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

  // A machine started again over an earlier process's items (after exit 1) is a resume too.
  const resumed = a.resumed ?? Boolean(a.snapshot);
  store.appendEvent(
    'run.started',
    {
      resumed,
      dryRun: opts.dryRun,
      pid: services.pid,
      // Which plan the checkpoint belongs to (./plan-owner.ts): its file, however the command named it.
      planFile: realPlanPath(opts.planFile, opts.cwd),
    },
    startedAt,
  );
  log.info({ plan: plan.name, resumed, dryRun: opts.dryRun, checkpoint: store.file }, 'run started');
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
    const late = [...effects.lateWrites];
    if (stop.obeyed)
      return stoppedOutcome({
        ...a,
        stop,
        step,
        late,
        elapsedMs: clock.now() - startedAt,
        span: withThisProcess(a.before ?? migrationSpan([], startedAt), startedAt, clock.now()),
      });
    // What the interruption does not stop: GitLab goes on with every move already posted.
    const inFlight = postedMoves(store, clock.now());
    store.appendEvent('run.interrupted', { step, inFlight }, clock.now());
    log.warn({ inFlight }, 'checkpoint saved after interruption; moves posted go on on the instance');
    for (const w of late) opts.stderr.write(`note: ${w}\n`);
    if (!a.leaseLost?.()) noteConsumed(stop, opts);
    return { kind: 'interrupted', inFlight };
  }
  const snap = actor.getSnapshot();
  actor.stop();
  if (!a.leaseLost?.()) noteConsumed(stop, opts);
  const state = String(snap.value);
  if (!isFinalState(state)) throw new RuntimeError(INTERNAL, `the run machine stopped in unexpected state ${state}`);
  // Before the copies left behind are listed, where their items live now is read once.
  let copies = null;
  if (!opts.dryRun) {
    try {
      copies = await recheckCopies(store, a.api, {
        destination: snap.context.destination,
        clock,
        signal: opts.signal,
      });
    } catch (err) {
      // A fenced write means the lock was lost: the caller says so. Anything else leaves the
      // copies as the checkpoint records them, said as not re-checked.
      if (isLeaseLostError(err)) throw err;
      log.warn({ err }, 'the copies left behind could not be re-checked');
    }
  }
  const summary = store.summary(clock.now(), true);
  store.appendEvent(
    'run.finished',
    { outcome: state, error: snap.context.error, quarantined: summary.quarantined.length },
    clock.now(),
  );
  log.info({ state, error: snap.context.error, quarantined: summary.quarantined.length }, 'run finished');
  const report: FinalReportInput = {
    state,
    context: snap.context,
    summary,
    elapsedMs: clock.now() - startedAt,
    span: withThisProcess(a.before ?? migrationSpan([], startedAt), startedAt, clock.now()),
    logFile: a.logFile,
    checkpointFile: store.file,
    extraWarnings,
    copies: { checks: copies },
    givenList: store.givenList()?.file ?? null,
    leftSelection: leftSelectionOf(store.leftSelection(LEFT_SELECTION_LISTED)),
    networks: networksOfRun(store, snap.context),
  };
  if (opts.dryRun) {
    report.estimate = {
      ...estimateSizes(store, snap.context),
      concurrency: plan.move.concurrency,
      rateLimited: rateLimitedListings(store, snap.context, a.api),
    };
    const schedule = scheduleOf(plan);
    if (schedule) report.schedule = { schedule, now: clock.now() };
  }
  return { kind: 'final', state, report, redact: (text) => a.secrets.scrub(text) };
}

/** The routes a real run lists page by page, and the key of the limit on each. */
const LISTING_ROUTES: Partial<Record<string, { key: string; route: string }>> = {
  projects: { key: 'projects_api', route: 'GET /projects' },
  groups: { key: 'groups_api', route: 'GET /groups' },
};

/**
 * The listing pages a real run would read on routes the instance limits: each source's items of a
 * kind, 100 a page, listed by the drain and again by verification (GitLab's limits, read from the
 * application settings by the client's pacer).
 */
function rateLimitedListings(store: CheckpointStore, c: RunContext, api: InstanceApi) {
  const limits = api.rateLimits?.() ?? {};
  const out: { route: string; pages: number; budget: number; windowMs: number }[] = [];
  for (const [kind, r] of Object.entries(LISTING_ROUTES)) {
    const limit = r ? limits[r.key] : undefined;
    if (!r || !limit) continue;
    let pages = 0;
    for (const d of Object.values(c.drains)) {
      if (d.kind !== kind) continue;
      const n = Object.values(store.countStates(d.kind, d.source)).reduce((x, y) => x + y, 0);
      pages += 2 * Math.max(1, Math.ceil(n / 100));
    }
    if (pages > 0) out.push({ route: r.route, pages, budget: limit.budget, windowMs: limit.intervalMs });
  }
  return out;
}

/**
 * Known sizes of the pending items the run would move (a reached move.until bound leaves the rest),
 * summed by the store (memory stays flat at any size).
 */
function estimateSizes(store: CheckpointStore, c: RunContext): { bytes: number; sized: number; maxBytes: number } {
  const out = { bytes: 0, sized: 0, maxBytes: 0 };
  for (const d of Object.values(c.drains)) {
    const s = store.movingSizeStats(d.kind, d.source);
    out.bytes += s.bytes;
    out.sized += s.sized;
    out.maxBytes = Math.max(out.maxBytes, s.maxBytes);
  }
  return out;
}

/** Items whose move was posted and not seen to end: in flight, or posted with the answer not yet recorded. */
function postedMoves(store: CheckpointStore, now: number): number {
  return store
    .summary(now)
    .counts.filter((c) => c.state === 'in_flight' || c.state === 'scheduling')
    .reduce((n, c) => n + c.n, 0);
}
