/**
 * `shardmove weights restore`: puts back the storage weights that a run's checkpoint recorded
 * before its first write (the machine's `previousWeights`, read by the weights step before it
 * wrote anything). The preview only reads the checkpoint (refusing one a live run holds); once
 * the operator says yes it takes the run lock, so it never races a run, reads the weights again
 * and makes the one PUT only if they are still what was shown; changes nothing when the instance
 * already has those weights, and refuses to undo a later change of the weights (another run, an
 * operator) without `--overwrite-weights`.
 */
import type { Logger } from 'pino';
import {
  StepError,
  WEIGHTS_MISMATCH,
  laterWeightChange,
  restoreTarget,
  weightsChangedError,
  weightsLeftBy,
  writeRestoredWeights,
} from '../actors/index.js';
import type { LaterWeight, WeightChange } from '../actors/index.js';
import type { RequestEvent } from '../api/client.js';
import type { InstanceApi } from '../api/types.js';
import type { RunContext } from '../machine/types.js';
import { createAuditBuffer } from './observe/audit.js';
import { createRunOutage } from './holds/outage-hold.js';
import type { CheckpointStore } from '../store/types.js';
import { DEFAULT_LEASE_MS, keepLease } from './ownership/lease.js';
import { createRunLogger, SecretSet } from './observe/logger.js';
import { assertRealRun } from './mode.js';
import { createOauthWriteback } from './holds/oauth-writeback.js';
import { logPath, runCheckpointOf } from './paths.js';
import { LockedError } from '../store/errors.js';
import { assertCheckpointOfPlan } from './ownership/plan-owner.js';
import type { PlanOfCommand } from './ownership/plan-owner.js';
import { lockHolder, openExistingCheckpoint } from './status.js';
import type { RuntimeServices } from './types.js';

export interface RestoreOptions {
  planFile: string;
  statePath?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  stderr: NodeJS.WritableStream;
  /** Write them although the instance's weights changed since the run left them. */
  overwriteWeights?: boolean;
  /** The command that runs this restore again (for the refusal of a later change). */
  command?: string;
  /** Ctrl-C, SIGTERM or SIGHUP: once aborted, the weights are not written (when the PUT is not yet sent). */
  signal?: AbortSignal;
  /** Asked once the change is known and non-empty; false leaves everything as it is. */
  confirm(changes: WeightChange[], info: { file: string; url: string; later: LaterWeight[] | null }): Promise<boolean>;
}

export type RestoreOutcome =
  | { kind: 'nothing-recorded'; file: string }
  | { kind: 'unchanged'; file: string; weights: Record<string, number> }
  | { kind: 'declined'; file: string; changes: WeightChange[] }
  | { kind: 'interrupted'; file: string }
  | { kind: 'restored'; file: string; changes: WeightChange[]; weights: Record<string, number> };

/**
 * Restores the recorded weights. Throws SHARDMOVE_NO_CHECKPOINT when the plan never ran,
 * SHARDMOVE_LOCKED while a run holds the checkpoint, SHARDMOVE_WEIGHTS_CHANGED when the weights
 * changed since the run left them (unless `overwriteWeights`), SHARDMOVE_WEIGHTS_MISMATCH when the
 * instance reads back something else than what was written, or when its weights changed while the
 * operator was asked.
 */
export async function restoreWeights(
  opts: RestoreOptions,
  injected: Partial<RuntimeServices> = {},
): Promise<RestoreOutcome> {
  const services: RuntimeServices = { ...(await import('./services.js')).defaultServices(), ...injected };
  const { plan, hash } = await services.loadPlan(opts.planFile, { env: opts.env, cwd: opts.cwd });
  const command = opts.command ?? 'shardmove weights restore PLAN';
  const file = runCheckpointOf(plan, opts);
  const secrets = new SecretSet();
  const creds = plan.instance.credentials;
  if (creds.type === 'token') secrets.add(creds.token);
  else secrets.add(creds.accessToken, creds.refreshToken, creds.clientSecret);
  // The preview reads only: a refusal, "nothing to do", or an answer of no leaves the checkpoint
  // and its directory as they were (no lock written, no log created). The lock is taken once the
  // operator said yes, and the weights are read again under it.
  const recorded = readRecordedRun(file, services, { file: opts.planFile, cwd: opts.cwd, name: plan.name, hash });
  const previous = recorded?.previousWeights ?? null;
  if (!previous) return { kind: 'nothing-recorded', file };
  // The log beside the checkpoint is created on its first line: a refreshed OAuth token, or the lock.
  let logger: Logger | undefined;
  const openLog = () => (logger ??= createRunLogger(logPath(file), secrets, opts.env.LOG_LEVEL ?? 'info'));
  let audit: ReturnType<typeof createAuditBuffer> | undefined;
  const oauth = createOauthWriteback(opts.planFile, opts.env, plan, secrets, {
    info: (obj: object, msg: string) => openLog().info(obj, msg),
    error: (obj: object, msg: string) => openLog().error(obj, msg),
  });
  const onResponse = (e: RequestEvent) => {
    if (e.mutating) audit?.add({ ...e }, services.clock.now());
  };
  // Outages hold the restore as they hold a run (same HELD line, events, exit 7 once
  // instance.outage_wait ran out); the events go to the checkpoint once it is open for the write.
  let events: Pick<CheckpointStore, 'appendEvent'> | null = null;
  const outage = createRunOutage({
    plan,
    env: opts.env,
    store: { appendEvent: (type, data, at) => events?.appendEvent(type, data, at) },
    clock: services.clock,
    // The log beside the checkpoint is created on its first line: here, an outage's.
    log: { warn: (obj, msg) => openLog().warn(obj, msg), info: (obj, msg) => openLog().info(obj, msg) },
    stderr: opts.stderr,
    signal: opts.signal ?? new AbortController().signal,
    meanwhile: 'nothing is written until it answers',
  });
  const api: InstanceApi = services.createApi(plan, {
    readOnly: false,
    onRefresh: oauth.onRefresh,
    onResponse,
    outage: outage.gate,
    clock: services.clock,
  });
  try {
    const seen = await api.getWeights();
    const shown = restoreTarget(previous, seen);
    if (shown.changes.length === 0) return { kind: 'unchanged', file, weights: seen };
    // Another run, or an operator, set the weights since this run left them: not undone silently.
    const later = laterWeightChange(previous, weightsLeftBy(recorded ?? undefined, plan), seen);
    if (later && !opts.overwriteWeights) throw weightsChangedError(later, 'the run', `${command} --overwrite-weights`);
    if (!(await opts.confirm(shown.changes, { file, url: plan.instance.url, later })))
      return { kind: 'declined', file, changes: shown.changes };

    const store = openExistingCheckpoint(file, { readOnly: false });
    events = store;
    const log = openLog();
    audit = createAuditBuffer(store, services.clock);
    let lease: ReturnType<typeof keepLease> | undefined;
    try {
      assertRealRun(store, file);
      const now = services.clock.now();
      store.acquireLock({ pid: services.pid, host: services.host, startedAt: now }, services.isAlive, {
        ms: DEFAULT_LEASE_MS,
        now,
      });
      lease = keepLease(store, DEFAULT_LEASE_MS, services.clock, log);
      // Under the lock: the change the operator said yes to, or nothing.
      const current = await api.getWeights();
      const { target, changes } = restoreTarget(recordedWeights(store) ?? previous, current);
      if (changes.length === 0) return { kind: 'unchanged', file, weights: current };
      if (JSON.stringify(changes) !== JSON.stringify(shown.changes)) {
        throw new StepError(
          WEIGHTS_MISMATCH,
          `the instance's weights changed while the change was shown (now ${JSON.stringify(current)}); nothing was written: run weights restore again`,
        );
      }
      store.assertLease();
      // Interrupted during the answer or the reads: the PUT is not sent.
      if (opts.signal?.aborted) return { kind: 'interrupted', file };
      const readBack = await writeRestoredWeights(api, target);
      store.appendEvent('weights.restored', { from: current, to: readBack }, services.clock.now());
      log.info({ from: current, to: readBack }, 'weights restored');
      return { kind: 'restored', file, changes, weights: readBack };
    } finally {
      lease?.stop();
      try {
        audit.flush();
      } finally {
        events = null;
        store.releaseLock();
        store.close();
        log.flush();
      }
    }
  } finally {
    outage.close();
    await api.close().catch(() => undefined);
  }
}

/** What the run recorded of the weights (before its first write, and after its own), from its checkpoint. */
function recordedContext(store: {
  loadRun(): { snapshot: unknown } | null;
}): Pick<Partial<RunContext>, 'previousWeights' | 'newWeights'> | null {
  return (store.loadRun()?.snapshot as { context?: Partial<RunContext> } | null)?.context ?? null;
}

/** The weights the run recorded before its first write, from its checkpoint. */
function recordedWeights(store: { loadRun(): { snapshot: unknown } | null }): Record<string, number> | null {
  return recordedContext(store)?.previousWeights ?? null;
}

/**
 * The recorded weights, read without writing anything: refuses a dry run's checkpoint and one a
 * live run holds (SHARDMOVE_LOCKED), as the writing phase would.
 */
function readRecordedRun(
  file: string,
  services: RuntimeServices,
  plan: PlanOfCommand,
): Pick<Partial<RunContext>, 'previousWeights' | 'newWeights'> | null {
  const store = openExistingCheckpoint(file, { readOnly: true });
  try {
    assertRealRun(store, file);
    // Another plan's weights are not put back under this one.
    assertCheckpointOfPlan(store, file, plan);
    // A live run on this host; any other holder is for acquireLock to judge (a lease may have expired).
    const holder = lockHolder(store);
    if (holder?.alive === true && holder.pid !== services.pid)
      throw new LockedError(file, holder, services.clock.now());
    return recordedContext(store);
  } finally {
    store.close();
  }
}
