/**
 * One `run`: load the plan, open and lock the checkpoint, decide between a fresh start and a
 * restore, wire the client (audit trail, OAuth write-back), drive the machine (./drive/drive.ts) and
 * release everything. On SIGINT/SIGTERM the step in flight returns and the checkpoint is saved.
 * Restores are not transitions: the restored step's actor is simply invoked again, and every actor
 * is safe to repeat because it resumes from the item rows in the same checkpoint.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Claim } from './ownership/claim-record.js';
import type { Logger } from 'pino';
import type { RequestEvent } from '../api/client.js';
import type { InstanceApi } from '../api/types.js';
import type { RunInput } from '../machine/types.js';
import { formatProblem } from '../plan/errors.js';
import { verifies } from '../plan/verify-field.js';
import { canonicalJson, planHashInput } from '../plan/hash.js';
import { diffPlanRecords, formatPlanChanges } from '../plan/plan-diff.js';
import type { Plan } from '../plan/types.js';
import { THROTTLE_DEFAULTS } from '../plan/values.js';
import type { ThrottleRule } from '../plan/values.js';
import { createPrometheusClient } from '../api/prometheus.js';
import type { PrometheusClient } from '../api/prometheus.js';
import { createGate, scheduleOf } from '../schedule/gate.js';
import { createRuleWatch, describeRule } from '../schedule/rules.js';
import type { SchedulingGate } from '../schedule/gate.js';
import { formatWindowTime, nextChange, openWindow } from '../time/windows.js';
import { busyRefusal, isBusyError } from '../store/busy.js';
import { LeaseLostError } from '../store/errors.js';
import { isLeaseLostError } from '../store/lease.js';
import type { CheckpointStore, LockHolder, RunControl } from '../store/types.js';
import type { Clock } from '../shared/clock.js';
import { createAuditBuffer } from './observe/audit.js';
import { driveMachine } from './drive/drive.js';
import { DEFAULT_LEASE_MS, keepLease } from './ownership/lease.js';
import type { LeaseKeeper } from './ownership/lease.js';
import { createRunLogger, refuseLogName, secretsOf } from './observe/logger.js';
import { assertMode } from './mode.js';
import { assertGivenList } from './lists/only-checkpoint.js';
import { assertCheckpointOfPlan } from './ownership/plan-owner.js';
import { notifyObservers, stopObservers } from './observe/observer.js';
import { createOauthWriteback } from './holds/oauth-writeback.js';
import { locateCheckpoint, logPath, otherCheckpointNote, revertCheckpointPath, runCheckpointOf } from './paths.js';
import { describeDrain, liveDrains } from './ownership/drain-registry.js';
import type { LiveDrain } from './ownership/drain-registry.js';
import { createRunOutage } from './holds/outage-hold.js';
import type { RunOutage } from './holds/outage-hold.js';
import { controlCommand } from '../shared/control-command.js';
import { CHECKPOINT_MODE, RuntimeError } from './errors.js';
import { CheckpointUnusableError } from '../store/errors.js';
import { chooseStart, describeResume, planFixed, startedOver } from './resume.js';
import { eventsInPages, migrationSpan } from '../report/span.js';
import type { StartOptions } from './resume.js';
import type { RunEnd, RunOptions, RunOutcome, RuntimeServices } from './types.js';

export type { RunEnd, RunOptions, RunOutcome, RuntimeServices } from './types.js';

/**
 * A drain that was reverted is not resumed by accident: a run that had ended failed or with
 * quarantined items would start its drains again and move everything off the sources once more.
 */
function refuseRevertedDrain(file: string, opts: Pick<RunOptions, 'mode' | 'dryRun'>): void {
  if ((opts.mode ?? 'run') === 'run' && !opts.dryRun && existsSync(revertCheckpointPath(file))) {
    throw new RuntimeError(
      CHECKPOINT_MODE,
      `refusing: this drain was reverted (${revertCheckpointPath(file)} holds its revert), and resuming ${file} would move the items off the sources again. ` +
        "Start a new drain with a new --state file, or move the revert's checkpoint away to resume this one on purpose",
    );
  }
}

/** The machine's input: what the plan asks, and what this start adds (warnings, weights, first start). */
function runInputOf(
  plan: Plan,
  opts: Pick<RunOptions, 'dryRun'>,
  extra: Pick<RunInput, 'warnings' | 'previousWeights' | 'startedAt'>,
): RunInput {
  return {
    sources: plan.move.from,
    destination: plan.move.to[0]!,
    destinations: [...plan.move.to],
    kinds: plan.move.kinds,
    // The one schedule is the throttled drain's: a bulk plan drains kind by kind.
    order: plan.move.mode === 'throttled' ? (plan.move.order ?? 'together') : 'by-kind',
    verify: verifies(plan.verify),
    geoResync: plan.geo.resync,
    dryRun: opts.dryRun,
    ...extra,
  };
}

/**
 * Runs or resumes the plan; resolves to how it ended. Throws (with a stable code) when the plan is
 * invalid, the checkpoint is locked by a live process, or the plan changed without --accept-plan-change.
 */
export async function executeRun(opts: RunOptions, injected: Partial<RuntimeServices> = {}): Promise<RunOutcome> {
  const services: RuntimeServices = isComplete(injected)
    ? injected
    : { ...(await import('./services.js')).defaultServices(), ...injected };
  const loaded = await services.loadPlan(opts.planFile, { env: opts.env, cwd: opts.cwd });
  const { plan, hash, warnings: planWarnings } = loaded;
  // What the hash covers, kept in the checkpoint: a later refusal names the fields that changed.
  const planRecord = canonicalJson(loaded.hashInput ?? planHashInput(plan));
  const secrets = secretsOf(plan);

  const place = locateCheckpoint({
    planFile: opts.planFile,
    planName: plan.name,
    planCheckpoint: plan.checkpoint,
    statePath: opts.statePath,
    role: opts.dryRun ? 'dry-run' : 'run',
    cwd: opts.cwd,
  });
  const file = place.file;
  // The checkpoint first (the store creates its directory): a file that is no checkpoint, or one
  // this process cannot write, is refused before the log is created beside it. Its whole-file check
  // may have run already, beside the loading of this module (./precheck/precheck.ts).
  const pre = opts.precheck ? await opts.precheck : null;
  if (pre?.file === file && pre.checked && pre.problem)
    throw new CheckpointUnusableError(file, pre.problem, pre.message ?? `${file} is not a usable checkpoint`);
  const logFile = logPath(file);
  // A log name planted as a symlink or device is refused before the checkpoint is created beside it.
  refuseLogName(logFile);
  const store = services.openCheckpoint(file, pre?.file === file && pre.checked ? { checked: true } : undefined);
  let log: Logger;
  try {
    log = createRunLogger(logFile, secrets, opts.env.LOG_LEVEL ?? 'info');
  } catch (err) {
    store.close();
    throw err;
  }
  for (const w of planWarnings) opts.stderr.write(`${secrets.scrub(formatProblem(w))}\n`);
  const elsewhere = otherCheckpointNote(place);
  if (elsewhere) opts.stderr.write(`note: ${elsewhere}\n`);

  const observers = opts.observers ?? [];
  const audit = createAuditBuffer(store, services.clock, (err) =>
    log.warn({ err, leaseLost: isLeaseLostError(err) }, 'audit lines could not be written and were dropped'),
  );
  let api: InstanceApi | undefined;
  let prometheus: PrometheusClient | undefined;
  let lease: LeaseKeeper | undefined;
  let drain: Claim | undefined;
  let outage: RunOutage | undefined;
  let end: RunEnd | undefined;
  try {
    // Before the lock: a refused run leaves the other kind's checkpoint exactly as it was.
    assertMode(store, file, opts.mode ?? (opts.dryRun ? 'dry-run' : 'run'));
    // Another plan's checkpoint (named by --state, or one a plan of the same name shares) is not
    // resumed as this plan's changed one; the flag takes a plan renamed or moved on purpose.
    if (!opts.acceptPlanChange)
      assertCheckpointOfPlan(store, file, { file: opts.planFile, cwd: opts.cwd, name: plan.name, hash });
    refuseRevertedDrain(file, opts);
    // Observers read this process's events from here on: the lock it takes is the first.
    const fromSeq = store.lastEventSeq();
    const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    const now = services.clock.now();
    const got = store.acquireLock({ pid: services.pid, host: services.host, startedAt: now }, services.isAlive, {
      ms: leaseMs,
      now,
    });
    if (got.reason === 'stale' && got.previous) noteTakeover(got.previous, now, opts, log);
    // One drain per storage on this host, under the lock (which decides between two runs of this
    // checkpoint): refused at once while another checkpoint's run drains one of the sources.
    if (!opts.dryRun && services.claimDrain) drain = claimRunDrain(services.claimDrain, plan, file, opts, log);
    lease = keepLease(store, leaseMs, services.clock, log);
    // Under the lock, before anything is written: a reviewed list runs in a checkpoint of its own.
    assertGivenList(store, file, opts, services.clock.now());
    const signal = AbortSignal.any([opts.signal, lease.signal]);
    noteLiveControl(store.readControl(), opts, plan, log);
    const saved = store.loadRun();
    const mode = opts.mode ?? (opts.dryRun ? 'dry-run' : 'run');
    // The whole migration before this process: every earlier process's start and end, from the log.
    const before = migrationSpan(
      eventsInPages((after, limit) => store.readEvents(after, limit)),
      services.clock.now(),
    );
    // Refusals (a changed plan) come before anything is written.
    const startOpts: StartOptions = {
      acceptPlanChange: opts.acceptPlanChange,
      dryRun: opts.dryRun,
      fixed: () => saved !== null && planFixed(store, saved, { dryRun: opts.dryRun, now: services.clock.now() }),
      planChanges: () => (saved?.plan ? formatPlanChanges(diffPlanRecords(saved.plan, planRecord)) : null),
    };
    let start = startedOver(chooseStart(saved, hash, startOpts), opts.startOver);
    const released = opts.retryQuarantined ? releaseQuarantined(store, opts, services.clock.now(), log) : 0;
    if (released > 0) start = chooseStart(saved, hash, { ...startOpts, released });
    if (start.kind === 'fresh' && start.reason) {
      log.warn({ reason: start.reason }, 'starting the machine from pre-flight');
      store.appendEvent('run.restart', { reason: start.reason }, services.clock.now());
    }
    if (start.note) opts.stderr.write(`note: ${start.note}\n`);
    const resuming = describeResume({
      saved,
      start,
      summary: store.summary(services.clock.now()),
      mode,
      file,
      now: services.clock.now(),
      firstStartedAt: before.startedAt,
    });
    if (resuming) {
      log.info({ checkpoint: file, says: resuming }, 'resuming');
      opts.stderr.write(`${resuming}\n`);
    }
    const oauth = createOauthWriteback(opts.planFile, opts.env, plan, secrets, log);
    const earlyWarnings = oauth.warning ? [oauth.warning] : [];
    // Also said now, not only in the final report: the operator can still switch to token files.
    for (const w of earlyWarnings) opts.stderr.write(`warning: ${w}\n`);
    let gate: SchedulingGate | undefined;
    const onResponse = (e: RequestEvent) => {
      log.debug({ http: e }, 'http');
      gate?.noteResponse(e.status, e.durationMs);
      notifyObservers(observers, log, 'response', e);
      // The event log keeps every mutating request (the audit trail), reads only in the debug log.
      if (e.mutating) audit.add({ ...e }, services.clock.now());
    };
    outage = createRunOutage({ plan, env: opts.env, store, clock: services.clock, log, stderr: opts.stderr, signal });
    api = services.createApi(plan, {
      readOnly: opts.dryRun,
      onRefresh: oauth.onRefresh,
      onResponse,
      outage: outage.gate,
      clock: services.clock,
    });
    if (plan.prometheus)
      prometheus = (services.createPrometheus ?? createPrometheusClient)({
        url: plan.prometheus.url,
        token: plan.prometheus.token,
        timeoutMs: plan.prometheus.timeoutMs,
        signal,
      });
    if (!opts.dryRun) gate = startGate(plan, api, prometheus, store, opts, services.clock, log);
    const input = runInputOf(plan, opts, {
      warnings: [
        ...planWarnings.map((w) => (w.path ? `plan ${w.path}: ${w.message}` : `plan: ${w.message}`)),
        ...earlyWarnings,
      ],
      previousWeights: start.previousWeights,
      // The migration's first start, kept by a machine started over from pre-flight too.
      startedAt: before.startedAt ?? services.clock.now(),
    });
    let outcome: RunOutcome;
    try {
      outcome = await driveMachine({
        opts: { ...opts, signal, ...dryRunDrains(services, plan, file, opts) },
        services,
        plan,
        hash,
        planRecord,
        store,
        api,
        log,
        logFile,
        secrets,
        input,
        snapshot: start.snapshot,
        resumed: start.resumes ?? start.kind === 'restore',
        gate,
        prometheus,
        outage,
        fromSeq,
        before,
        leaseLost: () => lease?.lost ?? false,
      });
    } catch (err) {
      // A fenced write may surface anywhere (an actor, a snapshot save): it means one thing.
      if (lease.lost || isLeaseLostError(err)) throw new LeaseLostError(store.file, store.readLock());
      throw err;
    }
    if (lease.lost) throw new LeaseLostError(store.file, store.readLock());
    end = { outcome };
    return outcome;
  } catch (caught) {
    // A write that waited past the busy timeout (another process holds the write lock): the run
    // stops where it is, with the holder named, not as an internal error.
    const err = busyRefusal(caught, store, { self: { pid: services.pid, host: services.host }, during: !!lease });
    // Only a run that held the lock has an end to tell: a refusal before it never started.
    if (lease) end = { error: err };
    throw err;
  } finally {
    lease?.stop();
    drain?.release();
    outage?.close();
    await api?.close().catch(() => undefined);
    await prometheus?.close().catch(() => undefined);
    flushAudit(audit, log);
    if (end && opts.onEnd) tellEnd(opts.onEnd, end, log);
    await stopObservers(observers, log);
    releaseUnlessBusy(store, log);
    store.close();
    log.flush();
  }
}

/**
 * The run's scheduling gate, when the plan has windows or a throttle. Every change of window or cap
 * is an audit event with its reason; a run started outside every window says so at once.
 */
function startGate(
  plan: Plan,
  api: InstanceApi,
  prometheus: PrometheusClient | undefined,
  store: CheckpointStore,
  opts: RunOptions,
  clock: Clock,
  log: Logger,
): SchedulingGate | undefined {
  const schedule = scheduleOf(plan);
  const now = clock.now();
  const rules = [...(plan.throttle?.rules ?? []), ...capacityRules(plan)];
  if (!schedule && !plan.throttle && rules.length === 0) return undefined;
  if (opts.ignoreSchedule && schedule) {
    store.appendEvent('schedule.ignored', { windows: plan.schedule?.windows ?? [], timezone: schedule.timezone }, now);
    log.warn({ windows: plan.schedule?.windows }, '--ignore-schedule: maintenance windows are not enforced');
    opts.stderr.write(
      'warning: --ignore-schedule: moves are scheduled outside the maintenance windows (logged in the audit events)\n',
    );
  } else if (schedule && openWindow(schedule, now) === null) {
    const next = nextChange(schedule, now);
    opts.stderr.write(
      `note: outside every maintenance window; nothing is scheduled until ${next === null ? 'a window opens' : formatWindowTime(next, schedule.timezone)}\n`,
    );
  }
  const watch =
    prometheus && rules.length > 0
      ? createRuleWatch({
          rules,
          client: prometheus,
          everyMs: plan.throttle?.healthEveryMs ?? THROTTLE_DEFAULTS.healthEveryMs,
          onError: plan.prometheus!.onError,
          signal: opts.signal,
          bounds: () => store.readThresholds().rules,
          onChange: (c) => {
            store.appendEvent('rule.changed', { ...c }, clock.now());
            log.info({ rule: c }, 'throttle rule changed status');
            // Said on stderr too: a run held by a rule, or by a Prometheus it cannot read, must say why.
            if (c.status === 'error') {
              const then =
                plan.prometheus!.onError === 'pause'
                  ? 'no new move until it answers (prometheus.on_error: pause)'
                  : 'the rule is ignored until it answers (prometheus.on_error: ignore)';
              opts.stderr.write(`warning: ${describeRule(c)}: ${then}\n`);
            } else if (c.status === 'holding') {
              opts.stderr.write(
                `note: ${describeRule(c)}: ${c.action === 'pause' ? 'no new move while it holds' : 'the throttle cuts its cap'}\n`,
              );
            } else if (c.previous === 'error' || c.previous === 'holding') {
              opts.stderr.write(
                `note: rule ${c.rule} no longer holds${c.previous === 'error' ? ' (Prometheus answers again)' : ''}\n`,
              );
            }
          },
        })
      : undefined;
  return createGate({
    plan,
    api,
    ...(watch ? { rules: watch } : {}),
    latencyP90Ms: () => store.readThresholds().latencyP90Ms,
    ignoreSchedule: opts.ignoreSchedule ?? false,
    onChange: (c) => {
      const at = clock.now();
      const { type, ...data } = c;
      store.appendEvent(type, data, at);
      log.info(
        { ...c },
        c.type === 'throttle.cap'
          ? 'throttle changed the cap'
          : c.type === 'window.opened'
            ? 'maintenance window opened'
            : 'maintenance window closed',
      );
    },
  });
}

/**
 * The destination's room, watched during the run as a pause rule named `capacity:<storage>`: its
 * free bytes (re-read every throttle.health_every) below capacity.keep_free stop new moves. A
 * declared size cannot change under the run, so only a PromQL `free` is watched.
 */
function capacityRules(plan: Plan): ThrottleRule[] {
  const out: ThrottleRule[] = [];
  for (const to of plan.move.to) {
    const free = plan.capacity?.storages[to];
    if (free && 'query' in free)
      out.push({
        name: `capacity:${to}`,
        query: free.query,
        above: null,
        below: plan.capacity!.keepFreeBytes,
        action: 'pause',
        forMs: 0,
      });
  }
  return out;
}

/** This run's records in the per-host registry of drains (./ownership/drain-registry.ts), said when one was taken over or cannot be kept. */
function claimRunDrain(
  claim: NonNullable<RuntimeServices['claimDrain']>,
  plan: Plan,
  file: string,
  opts: RunOptions,
  log: Logger,
): Claim {
  return claim({
    instanceUrl: plan.instance.url,
    storages: plan.move.from,
    plan: plan.name,
    planFile: resolve(opts.cwd, opts.planFile),
    checkpoint: file,
    env: opts.env,
    onTakeover: (stale) =>
      log.info(
        { stale: { pid: stale.pid, checkpoint: stale.checkpoint } },
        'took over a drain record of a run that is gone',
      ),
    onError: (err) => {
      log.warn({ err }, 'the registry of drains on this host cannot be used');
      opts.stderr.write(
        `warning: cannot record this drain in the registry of drains on this host (${err instanceof Error ? err.message : String(err)}): a second run of these storages under another checkpoint would not be refused here\n`,
      );
    },
  });
}

/**
 * A dry run claims no storage, but says what a real run would meet on this host: another
 * checkpoint's live run of these storages (./ownership/drain-registry.ts).
 */
function dryRunDrains(
  services: RuntimeServices,
  plan: Plan,
  file: string,
  opts: RunOptions,
): Pick<RunOptions, 'refusedBeforePreflight'> {
  if (!opts.dryRun || !services.claimDrain) return {};
  const real = runCheckpointOf(plan, { planFile: opts.planFile, statePath: undefined, cwd: opts.cwd });
  let live: LiveDrain[];
  try {
    live = liveDrains({ instanceUrl: plan.instance.url, storages: plan.move.from, env: opts.env, checkpoint: file });
  } catch {
    return {};
  }
  // The plan's own real run, going on beside its rehearsal, is the run a real `run` would resume.
  const others = live.filter((d) => d.checkpoint !== real);
  if (others.length === 0) return {};
  return {
    refusedBeforePreflight: others.map(
      (d) => `another run drains ${d.storage} of this instance on this host: ${describeDrain(d)}`,
    ),
  };
}

function isComplete(s: Partial<RuntimeServices>): s is RuntimeServices {
  return ['loadPlan', 'openCheckpoint', 'createApi', 'actors', 'clock', 'isAlive', 'pid', 'host'].every((k) => k in s);
}

/**
 * The last audit lines. After a takeover they cannot be written any more (the new holder writes its
 * own), and a failure here must not hide how the run ended: logged, not thrown.
 */
function flushAudit(audit: { flush(): void }, log: Logger): void {
  try {
    audit.flush();
  } catch (err) {
    log.warn({ err, leaseLost: isLeaseLostError(err) }, 'could not write the last audit lines');
  }
}

/** The caller hears how the run ended; what it throws is logged, never hiding that end. */
function tellEnd(onEnd: (end: RunEnd) => void, end: RunEnd, log: Logger): void {
  try {
    onEnd(end);
  } catch (err) {
    log.warn({ err }, 'the run end could not be told');
  }
}

/** A stale lock from another process was taken over: say so loudly (the audit event names it too). */
function noteTakeover(previous: LockHolder, now: number, opts: RunOptions, log: Logger): void {
  const ageS = Math.round((now - (previous.heartbeatAt ?? previous.startedAt)) / 1000);
  const leaseS = Math.round((previous.leaseMs ?? 0) / 1000);
  log.warn({ previous, heartbeatAgeS: ageS }, 'took over a stale run lock');
  opts.stderr.write(
    `warning: took over the run lock of pid ${previous.pid} on ${previous.host}: its last heartbeat was ${ageS}s ago (its lease: ${leaseS}s). ` +
      'If that process still runs, it stops at its next checkpoint write\n',
  );
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
    ? `this run is paused (shardmove control): it schedules no moves until \`${controlCommand(opts)} --unpause\``
    : `the concurrency cap is ${cap} (shardmove control; the plan says ${plan.move.concurrency}); \`--concurrency plan\` goes back to the plan's`;
  log.info({ paused: control.paused, concurrency: cap }, 'live control in force at start');
  opts.stderr.write(`note: ${note}\n`);
}

/**
 * Releases the run lock; when the checkpoint is still busy (another process holds its write lock),
 * leaves it: the lock names this process, which is gone once it exits, so the next run takes it over.
 */
function releaseUnlessBusy(store: Pick<CheckpointStore, 'releaseLock'>, log: Logger): void {
  try {
    store.releaseLock();
  } catch (err) {
    if (!isBusyError(err)) throw err;
    log.warn({ err }, 'could not release the run lock: the checkpoint is busy; the next run takes it over');
  }
}
