/**
 * One `run`: load the plan, open and lock the checkpoint, create or restore the machine's actor
 * with the real effects, save the persisted snapshot after every transition, and turn the final
 * state into an exit code. On SIGINT/SIGTERM: stop scheduling, let the in-flight step return, save,
 * exit 130. Restores are not transitions: the restored step's actor is simply invoked again, and
 * every actor is safe to repeat because it resumes from the item rows in the same checkpoint.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { createActor } from 'xstate';
import type { Snapshot } from 'xstate';
import type { ActorDeps } from '../actors/types.js';
import type { RequestEvent } from '../api/client.js';
import type { InstanceApi } from '../api/types.js';
import { MACHINE_VERSION, runMachine } from '../machine/machine.js';
import type { RunContext, RunInput } from '../machine/types.js';
import { formatProblem } from '../plan/errors.js';
import type { Plan } from '../plan/types.js';
import { renderFinalReport } from '../report/final.js';
import type { FinalReportInput } from '../report/final.js';
import { startProgress } from '../report/progress.js';
import { rateAndEta } from '../report/summary.js';
import type { CheckpointStore, RunControl } from '../store/types.js';
import { INTERNAL, RuntimeError } from './errors.js';
import { chooseStart } from './resume.js';
import { tokenOutlivedWarning } from './token-deadline.js';
import { createRunLogger, SecretSet } from './logger.js';
import { createOauthWriteback } from './oauth-writeback.js';
import { createAuditBuffer } from './audit.js';
import { createEffects } from './effects.js';
import { checkpointPath, logPath } from './paths.js';
import type { RunOptions, RuntimeServices } from './types.js';

export type { RunOptions, RuntimeServices } from './types.js';

/** Exit codes of a run that got as far as the machine (README: Exit codes). */
const EXIT_BY_STATE: Record<string, number> = { done: 0, doneWithQuarantine: 3, failed: 1 };
const EXIT_INTERRUPTED = 130;

/**
 * Runs or resumes the plan; resolves to the exit code. Throws (with a stable code) when the plan is
 * invalid, the checkpoint is locked by a live process, or the plan changed without --accept-plan-change.
 */
export async function executeRun(opts: RunOptions, injected: Partial<RuntimeServices> = {}): Promise<number> {
  const services: RuntimeServices = isComplete(injected) ? injected : { ...(await import('./services.js')).defaultServices(), ...injected };
  const { plan, hash, warnings: planWarnings } = await services.loadPlan(opts.planFile, { env: opts.env, cwd: opts.cwd });
  const secrets = new SecretSet();
  const creds = plan.instance.credentials;
  if (creds.type === 'token') secrets.add(creds.token);
  else secrets.add(creds.accessToken, creds.refreshToken, creds.clientSecret);

  const file = checkpointPath({ planName: plan.name, statePath: opts.statePath, dryRun: opts.dryRun, cwd: opts.cwd });
  mkdirSync(dirname(file), { recursive: true });
  const logFile = logPath(file);
  const log = createRunLogger(logFile, secrets, opts.env.LOG_LEVEL ?? 'info');
  for (const w of planWarnings) opts.stderr.write(`${secrets.scrub(formatProblem(w))}\n`);

  const store = services.openCheckpoint(file);
  const audit = createAuditBuffer(store);
  let api: InstanceApi | undefined;
  try {
    store.acquireLock({ pid: services.pid, host: services.host, startedAt: services.clock.now() }, services.isAlive);
    noteLiveControl(store.readControl(), opts, plan, log);
    const saved = store.loadRun();
    // Refusals (a changed plan) come before anything is written.
    let start = chooseStart(saved, hash, opts);
    const released = opts.retryQuarantined ? releaseQuarantined(store, opts, services.clock.now(), log) : 0;
    if (released > 0) start = chooseStart(saved, hash, { ...opts, released });
    if (start.kind === 'fresh' && start.reason) {
      log.warn({ reason: start.reason }, 'starting the machine from pre-flight');
      store.appendEvent('run.restart', { reason: start.reason }, services.clock.now());
    }
    const oauth = createOauthWriteback(opts.planFile, opts.env, plan, secrets, log);
    const earlyWarnings = oauth.warning ? [oauth.warning] : [];
    // Also said now, not only in the final report: the operator can still switch to token files.
    for (const w of earlyWarnings) opts.stderr.write(`warning: ${w}\n`);
    const onResponse = (e: RequestEvent) => {
      log.debug({ http: e }, 'http');
      // The event log keeps every mutating request (the audit trail), reads only in the debug log.
      if (e.mutating) audit.add('http.mutating', { ...e }, services.clock.now());
    };
    api = services.createApi(plan, { readOnly: opts.dryRun, onRefresh: oauth.onRefresh, onResponse });
    const input: RunInput = {
      sources: plan.move.from,
      destination: plan.move.to,
      kinds: plan.move.kinds,
      verify: plan.verify,
      geoResync: plan.geo.resync,
      dryRun: opts.dryRun,
      warnings: [...planWarnings.map((w) => (w.path ? `plan ${w.path}: ${w.message}` : `plan: ${w.message}`)), ...earlyWarnings],
      previousWeights: start.previousWeights,
      startedAt: services.clock.now(),
    };
    return await driveMachine({ opts, services, plan, hash, store, api, log, logFile, secrets, input, snapshot: start.snapshot });
  } finally {
    await api?.close().catch(() => undefined);
    audit.flush();
    store.releaseLock();
    store.close();
    log.flush();
  }
}

/** `--retry-quarantined`: release the quarantined items and say how many. */
function releaseQuarantined(store: CheckpointStore, opts: RunOptions, now: number, log: Logger): number {
  const n = store.releaseQuarantined(now);
  log.info({ released: n }, 'quarantined items released for another try');
  opts.stderr.write(
    n > 0
      ? `note: ${n} quarantined item(s) get another try; items quarantined as stuck stay until their move has ended\n`
      : 'note: --retry-quarantined: no quarantined item to release (items stuck on a running move stay until it ends)\n',
  );
  return n;
}

/**
 * Overrides set with `shardmove control` outlive the process that was running: say so at the start,
 * so that a run resumed after a pause does not sit there silently.
 */
function noteLiveControl(control: RunControl, opts: RunOptions, plan: Plan, log: Logger): void {
  if (opts.dryRun || (!control.paused && control.concurrency === null)) return;
  const cap = control.concurrency ?? plan.move.concurrency;
  const note = control.paused
    ? `this run is paused (shardmove control): it schedules no moves until \`shardmove control ${opts.planFile} --unpause\``
    : `the concurrency cap is ${cap} (shardmove control; the plan says ${plan.move.concurrency}); \`--concurrency plan\` goes back to the plan's`;
  log.info({ paused: control.paused, concurrency: cap }, 'live control in force at start');
  opts.stderr.write(`note: ${note}\n`);
}

function isComplete(s: Partial<RuntimeServices>): s is RuntimeServices {
  return ['loadPlan', 'openCheckpoint', 'createApi', 'actors', 'clock', 'isAlive', 'pid', 'host'].every((k) => k in s);
}

interface DriveArgs {
  opts: RunOptions;
  services: RuntimeServices;
  plan: Plan;
  hash: string;
  store: CheckpointStore;
  api: InstanceApi;
  log: Logger;
  logFile: string;
  secrets: SecretSet;
  input: RunInput;
  snapshot: Snapshot<unknown> | undefined;
}

async function driveMachine(a: DriveArgs): Promise<number> {
  const { opts, services, plan, store, log } = a;
  const clock = services.clock;
  const startedAt = clock.now();
  const deps: ActorDeps = { api: a.api, store, plan, clock, log, signal: opts.signal, dryRun: opts.dryRun };
  const effects = createEffects(services.actors, deps, log);

  const actor = createActor(runMachine.provide({ actors: effects.logic }), a.snapshot ? { snapshot: a.snapshot, input: a.input } : { input: a.input });
  const stepLabel = (c: RunContext): string => (c.step === 'drain' && c.sources[c.sourceIndex] ? `drain ${c.sources[c.sourceIndex]}/${c.kinds[c.kindIndex]}` : c.step);
  let lastLabel = '';
  const extraWarnings: string[] = [];
  // Once per run, when a drain starts: does the token outlive the estimated end?
  const checkTokenDeadline = (c: RunContext) => {
    if (extraWarnings.length > 0 || !c.tokenExpiresAt) return;
    const { etaMs } = rateAndEta(store.summary(clock.now()), clock.now() - startedAt);
    const warning = tokenOutlivedWarning(c.tokenExpiresAt, clock.now(), etaMs);
    if (!warning) return;
    extraWarnings.push(warning);
    log.warn({ tokenExpiresAt: c.tokenExpiresAt, etaMs }, 'token expires before the estimated end');
    opts.stderr.write(`warning: ${warning}\n`);
  };
  const persist = () => {
    store.saveRun({ planName: plan.name, planHash: a.hash, machineVersion: MACHINE_VERSION, snapshot: actor.getPersistedSnapshot() });
  };
  const progress = startProgress(opts.stdout, () => ({ step: stepLabel(actor.getSnapshot().context), summary: store.summary(clock.now()), elapsedMs: clock.now() - startedAt }));
  deps.onProgress = () => progress.poke();

  let resolveFinal: (v: 'final') => void = () => undefined;
  const finished = new Promise<'final'>((resolve, reject) => {
    resolveFinal = resolve;
    actor.subscribe({
      next: (snap) => {
        if (effects.interrupted) return;
        persist();
        const label = snap.status === 'done' ? String(snap.value) : stepLabel(snap.context);
        if (label !== lastLabel) {
          lastLabel = label;
          store.appendEvent('step.entered', { step: label }, clock.now());
          log.info({ step: label }, 'step entered');
          if (label.startsWith('drain ')) checkTokenDeadline(snap.context);
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
    if (opts.signal.aborted) void onAbort();
    else opts.signal.addEventListener('abort', () => void onAbort(), { once: true });
  });

  store.appendEvent('run.started', { resumed: Boolean(a.snapshot), dryRun: opts.dryRun, pid: services.pid }, startedAt);
  log.info({ plan: plan.name, resumed: Boolean(a.snapshot), dryRun: opts.dryRun, checkpoint: store.file }, 'run started');
  actor.start();
  // A restored run that had already ended emits nothing: it is final at once.
  if (actor.getSnapshot().status === 'done') resolveFinal('final');
  else persist();
  let outcome: 'final' | 'interrupted';
  try {
    outcome = await Promise.race([finished, stopped]);
  } finally {
    progress.stop();
  }
  if (outcome === 'interrupted') {
    persist();
    actor.stop();
    store.appendEvent('run.interrupted', { step: stepLabel(actor.getSnapshot().context) }, clock.now());
    log.warn('checkpoint saved after interruption');
    opts.stderr.write('interrupted; run again to continue\n');
    return EXIT_INTERRUPTED;
  }
  const snap = actor.getSnapshot();
  actor.stop();
  const state = String(snap.value);
  const code = EXIT_BY_STATE[state];
  if (code === undefined) throw new RuntimeError(INTERNAL, `the run machine stopped in unexpected state ${state}`);
  const summary = store.summary(clock.now());
  store.appendEvent('run.finished', { state, error: snap.context.error, quarantined: summary.quarantined.length }, clock.now());
  log.info({ state, error: snap.context.error, quarantined: summary.quarantined.length }, 'run finished');
  const report: FinalReportInput = {
    state,
    context: snap.context,
    summary,
    elapsedMs: clock.now() - startedAt,
    logFile: a.logFile,
    checkpointFile: store.file,
    extraWarnings,
  };
  if (opts.dryRun) report.estimate = { ...estimateSizes(store, snap.context), concurrency: plan.move.concurrency };
  opts.stdout.write(a.secrets.scrub(renderFinalReport(report)));
  return code;
}

/** Known sizes of the pending items, summed by the store (memory stays flat at any size). */
function estimateSizes(store: CheckpointStore, c: RunContext): { bytes: number; sized: number; maxBytes: number } {
  const out = { bytes: 0, sized: 0, maxBytes: 0 };
  for (const d of Object.values(c.drains)) {
    const s = store.sizeStats(d.kind, d.source, 'pending');
    out.bytes += s.bytes;
    out.sized += s.sized;
    out.maxBytes = Math.max(out.maxBytes, s.maxBytes);
  }
  return out;
}
