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
import { StepError, WEIGHTS_MISMATCH } from '../actors/index.js';
import type { RequestEvent } from '../api/client.js';
import type { InstanceApi } from '../api/types.js';
import type { RunContext } from '../machine/types.js';
import { checkMergedWeights } from '../plan/rules.js';
import type { Plan } from '../plan/types.js';
import { RuntimeError, WEIGHTS_CHANGED } from './errors.js';
import { createAuditBuffer } from './audit.js';
import { DEFAULT_LEASE_MS, keepLease } from './lease.js';
import { createRunLogger, SecretSet } from './logger.js';
import { assertRealRun } from './mode.js';
import { createOauthWriteback } from './oauth-writeback.js';
import { locateCheckpoint, logPath } from './paths.js';
import { LockedError } from '../store/errors.js';
import { lockHolder, openExistingCheckpoint } from './status.js';
import type { RuntimeServices } from './types.js';

/** One storage whose weight changes. */
export interface WeightChange {
  storage: string;
  from: number;
  to: number;
}

/**
 * What to PUT so the instance has `previous` again (pure). A PUT replaces the whole hash, so the
 * storages the instance has now but `previous` did not name are sent as 0, which is what an absent
 * storage weighed before (GitLab counts only the storages in the hash).
 */
export function restoreTarget(
  previous: Record<string, number>,
  current: Record<string, number>,
): { target: Record<string, number>; changes: WeightChange[] } {
  const target: Record<string, number> = {};
  for (const k of Object.keys(current)) target[k] = 0;
  Object.assign(target, previous);
  const changes = Object.keys(target)
    .sort()
    .map((storage) => ({ storage, from: current[storage] ?? 0, to: target[storage] ?? 0 }))
    .filter((c) => c.from !== c.to);
  return { target, changes };
}

/** Two weight hashes as GitLab weighs them: a storage absent from one weighs 0 there. */
export function sameWeights(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean {
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) if ((a[k] ?? 0) !== (b[k] ?? 0)) return false;
  return true;
}

/**
 * The weights a run may have left on the instance, as far as its checkpoint tells: what its weights
 * step reported (`newWeights`), and what it writes from the plan's weights over those it found (a
 * run killed between its PUT and the checkpoint write recorded only the first read).
 */
export function weightsLeftBy(
  context: Pick<Partial<RunContext>, 'previousWeights' | 'newWeights'> | undefined,
  plan: Pick<Plan, 'weights' | 'move'>,
): Record<string, number>[] {
  const out: Record<string, number>[] = [];
  if (context?.newWeights) out.push(context.newWeights);
  if (context?.previousWeights) out.push(checkMergedWeights(context.previousWeights, plan.weights, plan).merged);
  return out;
}

/** One storage of a later change: what the run left, what the instance has now, what a restore would write. */
export interface LaterWeight {
  storage: string;
  left: number;
  now: number;
  write: number;
}

/**
 * The instance's weights changed since the run left them (another run, or an operator, set them):
 * the storages that differ, or null when the weights are still those the run left, or already those
 * a restore writes. Pure. A restore over a later change is refused without `--overwrite-weights`.
 */
export function laterWeightChange(
  previous: Readonly<Record<string, number>>,
  left: readonly Readonly<Record<string, number>>[],
  current: Readonly<Record<string, number>>,
): LaterWeight[] | null {
  const { target } = restoreTarget(previous, current);
  if (sameWeights(current, target) || left.length === 0 || left.some((l) => sameWeights(l, current))) return null;
  const shown = left[0] as Readonly<Record<string, number>>;
  const keys = [...new Set([...Object.keys(shown), ...Object.keys(current), ...Object.keys(target)])].sort();
  return keys
    .map((storage) => ({
      storage,
      left: shown[storage] ?? 0,
      now: current[storage] ?? 0,
      write: target[storage] ?? 0,
    }))
    .filter((w) => w.left !== w.now || w.now !== w.write);
}

/** Refuses (SHARDMOVE_WEIGHTS_CHANGED, exit 4) to write the weights back over a later change. */
export function weightsChangedError(change: readonly LaterWeight[], by: string, flag: string): RuntimeError {
  const rows = change.map((w) => `${w.storage}: ${by} left ${w.left}, now ${w.now}, would write ${w.write}`);
  return new RuntimeError(
    WEIGHTS_CHANGED,
    `refusing: the instance's weights changed since ${by} ended (${rows.join('; ')}); writing the weights of before it would undo that later change. ` +
      `Nothing was written. If the change is to be undone too, run again with ${flag}`,
  );
}

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
  /** Asked once the change is known and non-empty; false leaves everything as it is. */
  confirm(changes: WeightChange[], info: { file: string; url: string; later: LaterWeight[] | null }): Promise<boolean>;
}

export type RestoreOutcome =
  | { kind: 'nothing-recorded'; file: string }
  | { kind: 'unchanged'; file: string; weights: Record<string, number> }
  | { kind: 'declined'; file: string; changes: WeightChange[] }
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
  const { plan } = await services.loadPlan(opts.planFile, { env: opts.env, cwd: opts.cwd });
  const command = opts.command ?? 'shardmove weights restore PLAN';
  const file = locateCheckpoint({
    planFile: opts.planFile,
    planName: plan.name,
    planCheckpoint: plan.checkpoint,
    statePath: opts.statePath,
    role: 'run',
    cwd: opts.cwd,
  }).file;
  const secrets = new SecretSet();
  const creds = plan.instance.credentials;
  if (creds.type === 'token') secrets.add(creds.token);
  else secrets.add(creds.accessToken, creds.refreshToken, creds.clientSecret);
  // The preview reads only: a refusal, "nothing to do", or an answer of no leaves the checkpoint
  // and its directory as they were (no lock written, no log created). The lock is taken once the
  // operator said yes, and the weights are read again under it.
  const recorded = readRecordedRun(file, services);
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
  const api: InstanceApi = services.createApi(plan, { readOnly: false, onRefresh: oauth.onRefresh, onResponse });
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
    const log = openLog();
    audit = createAuditBuffer(store);
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
      await api.setWeights(target);
      const readBack = await api.getWeights();
      if (restoreTarget(target, readBack).changes.length > 0) {
        throw new StepError(
          WEIGHTS_MISMATCH,
          `the instance reports weights ${JSON.stringify(readBack)} after writing ${JSON.stringify(target)}`,
        );
      }
      store.appendEvent('weights.restored', { from: current, to: readBack }, services.clock.now());
      log.info({ from: current, to: readBack }, 'weights restored');
      return { kind: 'restored', file, changes, weights: readBack };
    } finally {
      lease?.stop();
      try {
        audit.flush();
      } finally {
        store.releaseLock();
        store.close();
        log.flush();
      }
    }
  } finally {
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
): Pick<Partial<RunContext>, 'previousWeights' | 'newWeights'> | null {
  const store = openExistingCheckpoint(file, { readOnly: true });
  try {
    assertRealRun(store, file);
    // A live run on this host; any other holder is for acquireLock to judge (a lease may have expired).
    const holder = lockHolder(store);
    if (holder?.alive === true && holder.pid !== services.pid)
      throw new LockedError(file, holder, services.clock.now());
    return recordedContext(store);
  } finally {
    store.close();
  }
}
