/**
 * `shardmove revert`: moves every item a forward run moved back to the storage it came from, as a
 * run of its own (the same machine, drain, cap, windows, throttle, lease, retries, events, report
 * and metrics) with its own checkpoint beside the forward one (`state/<name>.revert.db`).
 *
 * How its items get into its checkpoint: they are read from the forward checkpoint (items moved by
 * a move of the forward run's own), each is read on the instance once, and all are written into the
 * revert's checkpoint in one transaction, as pending rows for the drain and `left` rows for those
 * already elsewhere, with every listing round marked done. No source is ever listed: a storage the
 * forward run moved items to holds other items that must stay there, and listing it could admit
 * them. Seeding once, all or nothing, is what makes a resume exact: a kill before it leaves nothing
 * (the next process reads again), a kill after it leaves rows the drain resumes from like any run's.
 *
 * The forward checkpoint's lock is held from start to end: a forward run cannot start (or resume)
 * while a revert moves its items back, and a revert is refused while the forward run holds it.
 */
import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import type { RequestEvent } from '../api/client.js';
import type { InstanceApi } from '../api/types.js';
import type { RunContext } from '../machine/types.js';
import type { LoadedPlan } from '../plan/load.js';
import type { Plan } from '../plan/types.js';
import { LeaseLostError } from '../store/errors.js';
import type { CheckpointStore, ItemRow, ItemState } from '../store/types.js';
import { CHECKPOINT_MODE, MOVES_IN_FLIGHT, RuntimeError } from './errors.js';
import { DEFAULT_LEASE_MS, keepLease } from './lease.js';
import type { LeaseKeeper } from './lease.js';
import { createRunLogger, SecretSet } from './logger.js';
import { modeRefusal } from './mode.js';
import { createOauthWriteback } from './oauth-writeback.js';
import { checkpointPath, logPath, revertCheckpointPath } from './paths.js';
import { copiesMadeLive } from './copies.js';
import { revertActors } from './revert-actors.js';
import { forwardMovedItems, locateRevertItems, revertDrains } from './revert-items.js';
import type { RevertItem, RevertSet, SkippedItem } from './revert-items.js';
import { executeRun } from './run.js';
import { openExistingCheckpoint } from './status.js';
import type { RunOptions, RunOutcome, RuntimeServices } from './types.js';
import { restoreTarget } from './weights-restore.js';
import type { WeightChange } from './weights-restore.js';

export type { RevertItem, SkippedItem } from './revert-items.js';

export { revertCheckpointPath };

/** Items to move back, per kind and pair of storages. */
export interface RevertGroup {
  kind: string;
  from: string;
  to: string;
  n: number;
}

/** What a revert is about to do, shown before it asks (and all a `--dry-run` does). */
export interface RevertPreview {
  forwardFile: string;
  revertFile: string;
  url: string;
  /** True when the revert's checkpoint already holds its items (a resume). */
  resuming: boolean;
  /** Items still to move back. */
  groups: RevertGroup[];
  total: number;
  skipped: SkippedItem[];
  /** The weights the revert writes first (empty: already those of before the forward run). */
  weights: WeightChange[];
}

export interface RevertOptions extends Pick<
  RunOptions,
  'planFile' | 'statePath' | 'leaseMs' | 'env' | 'cwd' | 'signal' | 'stdout' | 'stderr' | 'observers'
> {
  dryRun: boolean;
  /** Give the revert's quarantined items another retry.max_attempts tries (as `run --retry-quarantined`). */
  retryQuarantined?: boolean;
  /** Resume the revert although the plan changed since it started (as `run --accept-plan-change`). */
  acceptPlanChange?: boolean;
  /** Asked once the preview is known and there is something to do; false changes nothing. */
  confirm(preview: RevertPreview): Promise<boolean>;
}

export type RevertOutcome =
  | { kind: 'nothing'; forwardFile: string; reason: string }
  | { kind: 'preview'; preview: RevertPreview }
  | { kind: 'declined'; preview: RevertPreview }
  | { kind: 'ran'; outcome: RunOutcome; revertFile: string; skipped: SkippedItem[] };

/**
 * Reverts the forward run of the plan whose checkpoint is `statePath` (default state/<name>.db).
 * Throws SHARDMOVE_NO_CHECKPOINT without one, SHARDMOVE_CHECKPOINT_MODE for a dry run's or a
 * revert's checkpoint, SHARDMOVE_LOCKED while the forward run holds it, SHARDMOVE_MOVES_IN_FLIGHT
 * while moves of the forward run are still in flight.
 */
export async function executeRevert(
  opts: RevertOptions,
  injected: Partial<RuntimeServices> = {},
): Promise<RevertOutcome> {
  const services: RuntimeServices = { ...(await import('./services.js')).defaultServices(), ...injected };
  const loaded = await services.loadPlan(opts.planFile, { env: opts.env, cwd: opts.cwd });
  const { plan } = loaded;
  const forwardFile = checkpointPath({ planName: plan.name, statePath: opts.statePath, dryRun: false, cwd: opts.cwd });
  const revertFile = revertCheckpointPath(forwardFile);
  const secrets = secretsOf(plan);
  const forward = openExistingCheckpoint(forwardFile, { readOnly: false });
  let log: Logger | undefined;
  let lease: LeaseKeeper | undefined;
  let api: InstanceApi | undefined;
  try {
    assertForward(forward, forwardFile, revertFile);
    log = createRunLogger(logPath(revertFile), secrets, opts.env.LOG_LEVEL ?? 'info');
    const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    const now = services.clock.now();
    forward.acquireLock({ pid: services.pid, host: services.host, startedAt: now }, services.isAlive, {
      ms: leaseMs,
      now,
    });
    lease = keepLease(forward, leaseMs, services.clock, log);
    const inFlight = forward.countInFlight();
    if (inFlight > 0) {
      throw new RuntimeError(
        MOVES_IN_FLIGHT,
        `refusing: ${forwardFile} has ${inFlight} move(s) of the forward run in flight or being posted, which would land after the revert read it. ` +
          `Resume the forward run (shardmove run) and stop it once nothing is in flight (shardmove control --pause, then status), then revert`,
      );
    }
    const forwardContext = (forward.loadRun()?.snapshot as { context?: Partial<RunContext> } | null)?.context;
    const forwardWeights = forwardContext?.previousWeights ?? null;
    const moved = forwardMovedItems(forward, (row) =>
      forwardDestination(forwardContext?.destination ?? plan.move.to[0]!, row),
    );
    if (moved.length === 0)
      return { kind: 'nothing', forwardFile, reason: `${forwardFile} records no item moved by the forward run` };
    const drains = revertDrains(moved);
    const revertPlan = planOfRevert(plan, drains, moved);
    const state = readRevertState(revertFile, services);

    // One client for the reads, the confirmation and the run: an OAuth refresh token is used once.
    const oauth = createOauthWriteback(opts.planFile, opts.env, plan, secrets, log);
    let onRefresh = oauth.onRefresh;
    let onResponse: (e: RequestEvent) => void = () => undefined;
    api = services.createApi(revertPlan, {
      readOnly: opts.dryRun,
      onRefresh: (t) => onRefresh(t),
      onResponse: (e) => onResponse(e),
    });
    const readAt = services.clock.now();
    const set: RevertSet | null = state.seeded ? null : await locateRevertItems(api, moved, opts.signal);
    const preview = buildPreview({
      forwardFile,
      revertFile,
      url: plan.instance.url,
      set,
      state,
      weights: forwardWeights ? restoreTarget(forwardWeights, await api.getWeights()).changes : [],
    });
    if (opts.dryRun) return { kind: 'preview', preview };
    if ((!state.finished || opts.retryQuarantined) && !(await opts.confirm(preview)))
      return { kind: 'declined', preview };

    const shared = api;
    const outcome = await executeRun(
      {
        ...opts,
        planFile: opts.planFile,
        statePath: revertFile,
        dryRun: false,
        mode: 'revert',
        acceptPlanChange: opts.acceptPlanChange ?? false,
        retryQuarantined: opts.retryQuarantined ?? false,
        signal: AbortSignal.any([opts.signal, lease.signal]),
      },
      {
        ...services,
        loadPlan: async (): Promise<LoadedPlan> => ({ ...loaded, plan: revertPlan, hash: `revert:${loaded.hash}` }),
        createApi: (_p, o) => {
          onRefresh = o.onRefresh;
          onResponse = o.onResponse;
          // The run closes what it is given; this client is closed here, after the run.
          return { ...shared, close: async () => undefined };
        },
        actors: revertActors(services.actors, { seed: set, readAt, drains, forward: forwardFile, forwardWeights }),
      },
    );
    // The forward checkpoint's lock was taken over (or unlocked) under the revert: it stopped there.
    if (lease.lost) throw new LeaseLostError(forwardFile, forward.readLock());
    if (outcome.kind === 'final') {
      outcome.report.revertOf = forwardFile;
      // Copies the forward run listed as left behind on a storage an item went back to are its repository now.
      outcome.report.madeLive = copiesMadeLive(forward, forwardFile, services.clock.now());
    }
    return { kind: 'ran', outcome, revertFile, skipped: readSkipped(revertFile, services) };
  } finally {
    lease?.stop();
    await api?.close().catch(() => undefined);
    forward.releaseLock();
    forward.close();
    log?.flush();
  }
}

function secretsOf(plan: Plan): SecretSet {
  const secrets = new SecretSet();
  const creds = plan.instance.credentials;
  if (creds.type === 'token') secrets.add(creds.token);
  else secrets.add(creds.accessToken, creds.refreshToken, creds.clientSecret);
  if (plan.prometheus?.token) secrets.add(plan.prometheus.token);
  return secrets;
}

/** The forward checkpoint must hold a real run: a dry run moved nothing; a revert's is not reverted. */
function assertForward(store: CheckpointStore, file: string, revertFile: string): void {
  if (store.mode() === 'dry-run') {
    throw new RuntimeError(
      CHECKPOINT_MODE,
      `refusing: ${file} holds a dry run, which moved nothing; name the real run's checkpoint (state/<plan>.db unless it ran with --state)`,
    );
  }
  if (isRevertCheckpoint(store)) {
    throw new RuntimeError(
      CHECKPOINT_MODE,
      `refusing: ${file} holds a revert, not a forward run; to move those items again, run the plan (shardmove run) on its own checkpoint. Its revert would be kept in ${revertFile}`,
    );
  }
}

/** A revert's checkpoint (claimed as one by its first process). */
function isRevertCheckpoint(store: CheckpointStore): boolean {
  return store.mode() === 'revert';
}

/**
 * The storage the forward run moved a row's item to: its recorded destination (issue 23), or, in a
 * checkpoint written before items had one, the run's only destination (`only`: as its snapshot
 * recorded it, the plan's when it has none).
 */
function forwardDestination(only: string, row: ItemRow): string {
  return row.destination ?? only;
}

/**
 * The revert's plan: the forward plan with the directions swapped, every item pinned to the storage
 * it came from. Throttled whatever the forward mode was (a bulk POST would move everything on the
 * storage); no capacity section and no `move.until` (they are about the forward run's
 * destinations); the kinds and storages the forward run moved items of. Fork networks stay
 * together: each member goes back where it came from, which is where the network was.
 */
function planOfRevert(
  plan: Plan,
  drains: { kinds: Plan['move']['kinds']; sources: string[] },
  items: readonly RevertItem[],
): Plan {
  const to = [...new Set(items.map((i) => i.to))].sort();
  const { capacity: _capacity, ...rest } = plan;
  const { until: _until, ...move } = plan.move;
  return { ...rest, move: { ...move, from: drains.sources, to, kinds: drains.kinds, mode: 'throttled' } };
}

/** The revert's checkpoint as it stands before this process: items seeded, run finished. */
interface RevertState {
  seeded: boolean;
  finished: boolean;
  remaining: RevertGroup[];
  skipped: SkippedItem[];
}

const ALL = Number.MAX_SAFE_INTEGER;
const OPEN_STATES: readonly ItemState[] = ['pending', 'scheduling', 'in_flight'];

function readRevertState(file: string, services: RuntimeServices): RevertState {
  const none: RevertState = { seeded: false, finished: false, remaining: [], skipped: [] };
  if (!existsSync(file)) return none;
  const store = services.openCheckpoint(file, { readOnly: true });
  try {
    const held = store.mode();
    if (held !== null && held !== 'revert') throw modeRefusal(file, held, 'revert');
    const counts = store.summary(services.clock.now()).counts;
    if (counts.length === 0) return none;
    const snap = store.loadRun()?.snapshot as { status?: string; value?: unknown } | null | undefined;
    const remaining = counts
      .filter((c) => OPEN_STATES.includes(c.state as ItemState) && c.n > 0)
      .map((c) => ({ kind: c.kind, from: c.source, to: '', n: c.n }));
    return {
      seeded: true,
      finished: snap?.status === 'done' && snap.value === 'done',
      remaining,
      skipped: skippedIn(store),
    };
  } finally {
    store.close();
  }
}

function readSkipped(file: string, services: RuntimeServices): SkippedItem[] {
  const store = services.openCheckpoint(file, { readOnly: true });
  try {
    return skippedIn(store);
  } finally {
    store.close();
  }
}

/** Items the revert left alone: seeded as skipped, or found elsewhere by the drain before their POST. */
function skippedIn(store: CheckpointStore): SkippedItem[] {
  const out: SkippedItem[] = [];
  for (const kind of ['projects', 'snippets', 'groups'] as const) {
    for (const row of store.itemsInState(kind, null, 'left', ALL)) {
      out.push({
        kind,
        id: row.id,
        name: row.name,
        sizeBytes: row.sizeBytes,
        from: row.source,
        to: row.destination ?? '',
        forwardMoveId: 0,
        storage: null,
        reason: row.lastError ?? 'left the storage',
      });
    }
    for (const row of store.itemsInState(kind, null, 'moved', ALL)) {
      if (row.moveId === null)
        out.push({
          kind,
          id: row.id,
          name: row.name,
          sizeBytes: row.sizeBytes,
          from: row.source,
          to: row.destination ?? '',
          forwardMoveId: 0,
          storage: null,
          reason: row.lastError ?? 'already back',
        });
    }
  }
  return out;
}

function buildPreview(a: {
  forwardFile: string;
  revertFile: string;
  url: string;
  set: RevertSet | null;
  state: RevertState;
  weights: WeightChange[];
}): RevertPreview {
  const groups = a.set ? groupItems(a.set.items) : a.state.remaining;
  return {
    forwardFile: a.forwardFile,
    revertFile: a.revertFile,
    url: a.url,
    resuming: a.set === null,
    groups,
    total: groups.reduce((n, g) => n + g.n, 0),
    skipped: a.set ? a.set.skipped : a.state.skipped,
    weights: a.weights,
  };
}

function groupItems(items: readonly RevertItem[]): RevertGroup[] {
  const by = new Map<string, RevertGroup>();
  for (const it of items) {
    const key = `${it.kind}\u0000${it.from}\u0000${it.to}`;
    const g = by.get(key) ?? { kind: it.kind, from: it.from, to: it.to, n: 0 };
    g.n++;
    by.set(key, g);
  }
  return [...by.values()];
}
