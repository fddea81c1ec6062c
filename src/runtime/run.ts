/**
 * One `run`: load the plan, open and lock the checkpoint, decide between a fresh start and a
 * restore, wire the client (audit trail, OAuth write-back), drive the machine (./drive.ts) and
 * release everything. On SIGINT/SIGTERM the step in flight returns and the checkpoint is saved.
 * Restores are not transitions: the restored step's actor is simply invoked again, and every actor
 * is safe to repeat because it resumes from the item rows in the same checkpoint.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { RequestEvent } from '../api/client.js';
import type { InstanceApi } from '../api/types.js';
import type { RunInput } from '../machine/types.js';
import { formatProblem } from '../plan/errors.js';
import type { Plan } from '../plan/types.js';
import type { CheckpointStore, RunControl } from '../store/types.js';
import { createAuditBuffer } from './audit.js';
import { driveMachine } from './drive.js';
import { createRunLogger, SecretSet } from './logger.js';
import { notifyObservers, stopObservers } from './observer.js';
import { createOauthWriteback } from './oauth-writeback.js';
import { checkpointPath, logPath } from './paths.js';
import { chooseStart } from './resume.js';
import type { RunOptions, RunOutcome, RuntimeServices } from './types.js';

export type { RunOptions, RunOutcome, RuntimeServices } from './types.js';

/**
 * Runs or resumes the plan; resolves to how it ended. Throws (with a stable code) when the plan is
 * invalid, the checkpoint is locked by a live process, or the plan changed without --accept-plan-change.
 */
export async function executeRun(opts: RunOptions, injected: Partial<RuntimeServices> = {}): Promise<RunOutcome> {
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
  const observers = opts.observers ?? [];
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
      notifyObservers(observers, log, 'response', e);
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
    await stopObservers(observers, log);
    store.releaseLock();
    store.close();
    log.flush();
  }
}

function isComplete(s: Partial<RuntimeServices>): s is RuntimeServices {
  return ['loadPlan', 'openCheckpoint', 'createApi', 'actors', 'clock', 'isAlive', 'pid', 'host'].every((k) => k in s);
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
