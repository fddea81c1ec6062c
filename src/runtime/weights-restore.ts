/**
 * `shardmove weights restore`: puts back the storage weights that a run's checkpoint recorded
 * before its first write (the machine's `previousWeights`, read by the weights step before it
 * wrote anything). Takes the run lock for the whole time, so it never races a run; shows the
 * change and asks (through the caller) before the one PUT; changes nothing when the instance
 * already has those weights.
 */
import type { Logger } from 'pino';
import { StepError, WEIGHTS_MISMATCH } from '../actors/index.js';
import type { RequestEvent } from '../api/client.js';
import type { InstanceApi } from '../api/types.js';
import type { RunContext } from '../machine/types.js';
import { createAuditBuffer } from './audit.js';
import { DEFAULT_LEASE_MS, keepLease } from './lease.js';
import { createRunLogger, SecretSet } from './logger.js';
import { assertRealRun } from './mode.js';
import { createOauthWriteback } from './oauth-writeback.js';
import { checkpointPath, logPath } from './paths.js';
import { openExistingCheckpoint } from './status.js';
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

export interface RestoreOptions {
  planFile: string;
  statePath?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  stderr: NodeJS.WritableStream;
  /** Asked once the change is known and non-empty; false leaves everything as it is. */
  confirm(changes: WeightChange[], info: { file: string; url: string }): Promise<boolean>;
}

export type RestoreOutcome =
  | { kind: 'nothing-recorded'; file: string }
  | { kind: 'unchanged'; file: string; weights: Record<string, number> }
  | { kind: 'declined'; file: string; changes: WeightChange[] }
  | { kind: 'restored'; file: string; changes: WeightChange[]; weights: Record<string, number> };

/**
 * Restores the recorded weights. Throws SHARDMOVE_NO_CHECKPOINT when the plan never ran,
 * SHARDMOVE_LOCKED while a run holds the checkpoint, SHARDMOVE_WEIGHTS_MISMATCH when the instance
 * reads back something else than what was written.
 */
export async function restoreWeights(
  opts: RestoreOptions,
  injected: Partial<RuntimeServices> = {},
): Promise<RestoreOutcome> {
  const services: RuntimeServices = { ...(await import('./services.js')).defaultServices(), ...injected };
  const { plan } = await services.loadPlan(opts.planFile, { env: opts.env, cwd: opts.cwd });
  const file = checkpointPath({ planName: plan.name, statePath: opts.statePath, dryRun: false, cwd: opts.cwd });
  const secrets = new SecretSet();
  const creds = plan.instance.credentials;
  if (creds.type === 'token') secrets.add(creds.token);
  else secrets.add(creds.accessToken, creds.refreshToken, creds.clientSecret);
  const store = openExistingCheckpoint(file, { readOnly: false });
  const log: Logger = createRunLogger(logPath(file), secrets, opts.env.LOG_LEVEL ?? 'info');
  const audit = createAuditBuffer(store);
  let api: InstanceApi | undefined;
  let lease: ReturnType<typeof keepLease> | undefined;
  try {
    assertRealRun(store, file);
    const now = services.clock.now();
    store.acquireLock({ pid: services.pid, host: services.host, startedAt: now }, services.isAlive, {
      ms: DEFAULT_LEASE_MS,
      now,
    });
    lease = keepLease(store, DEFAULT_LEASE_MS, services.clock, log);
    const context = (store.loadRun()?.snapshot as { context?: Partial<RunContext> } | null)?.context;
    const previous = context?.previousWeights ?? null;
    if (!previous) return { kind: 'nothing-recorded', file };
    const oauth = createOauthWriteback(opts.planFile, opts.env, plan, secrets, log);
    const onResponse = (e: RequestEvent) => {
      if (e.mutating) audit.add({ ...e }, services.clock.now());
    };
    api = services.createApi(plan, { readOnly: false, onRefresh: oauth.onRefresh, onResponse });
    const current = await api.getWeights();
    const { target, changes } = restoreTarget(previous, current);
    if (changes.length === 0) return { kind: 'unchanged', file, weights: current };
    if (!(await opts.confirm(changes, { file, url: plan.instance.url }))) return { kind: 'declined', file, changes };
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
    await api?.close().catch(() => undefined);
    try {
      audit.flush();
    } finally {
      store.releaseLock();
      store.close();
      log.flush();
    }
  }
}
