/**
 * `shardmove revert`: moves every item a forward run moved back to the storage it came from, as a
 * run of its own (the same machine, drain, cap, windows, throttle, lease, retries, events, report
 * and metrics) with its own checkpoint beside the forward one (`state/<name>.revert.db`).
 *
 * Before anything is written it checks that it works where the forward run worked: under the same
 * plan (./revert-identity.ts: the plan's hash, with the fields that differ named), on the same
 * instance (it must hold the forward run's own moves), with no move of the forward run still queued
 * or running, and with the weights still those the forward run left (or `--overwrite-weights`).
 *
 * How its items get into its checkpoint: they are read from the forward checkpoint (items the
 * forward run made a move for), each is read on the instance once with its move list
 * (./revert-judge.ts), and all are written into the revert's checkpoint in one transaction, as
 * pending rows for the drain and `left` rows for those skipped, with every listing round marked
 * done. No source is ever listed: a storage the forward run moved items to holds other items that
 * must stay there, and listing it could admit them. Seeding once, all or nothing, is what makes a
 * resume exact: a kill before it leaves nothing (the next process reads again), a kill after it
 * leaves rows the drain resumes from like any run's.
 *
 * The forward checkpoint's lock is held from start to end: a forward run cannot start (or resume)
 * while a revert moves its items back, and a revert is refused while the forward run holds it.
 */
import type { Logger } from 'pino';
import type { RequestEvent } from '../../api/client.js';
import type { InstanceApi } from '../../api/types.js';
import type { RunContext } from '../../machine/types.js';
import { planHashInput } from '../../plan/hash.js';
import type { LoadedPlan } from '../../plan/load.js';
import type { Plan } from '../../plan/types.js';
import { LeaseLostError } from '../../store/errors.js';
import type { RuntimeError } from '../errors.js';
import { DEFAULT_LEASE_MS, keepLease } from '../ownership/lease.js';
import type { LeaseKeeper } from '../ownership/lease.js';
import { assertCheckpointOfPlan } from '../ownership/plan-owner.js';
import { createRunLogger, secretsOf } from '../observe/logger.js';
import { createOauthWriteback } from '../holds/oauth-writeback.js';
import { logPath, revertCheckpointPath, runCheckpointOf } from '../paths.js';
import { copiesMadeLive } from '../copies.js';
import { revertActors } from '../../actors/index.js';
import type { StepError } from '../../actors/index.js';
import { bulkJobItems, withBulkJobItems } from './revert-bulk.js';
import {
  assertRecorded,
  checkForwardPlan,
  checkRevertPlan,
  recordedUrlOf,
  revertHash,
  unrecordedSample,
} from './revert-identity.js';
import { forwardMovedItems, revertDrains } from '../../actors/index.js';
import type { AliveMove, RevertItem, RevertSeedList, RevertSet, SkippedItem } from '../../actors/index.js';
import { locateRevertItems } from './revert-judge.js';
import { aliveRefusal, assertForward, forwardDestination, inFlightRefusal, planOfRevert } from './revert-plan.js';
import { groupItems, readRevertState, readSkipped } from './revert-state.js';
import type { RevertGroup, RevertState } from './revert-state.js';
import { executeRun } from '../run.js';
import { createRelayGate, createRunOutage } from '../holds/outage-hold.js';
import type { RunOutage } from '../holds/outage-hold.js';
import { readRevertList, recordingNames, refuseOtherOpenItems, renamedSinceList, selectByList } from './revert-only.js';
import type { NotMovedByForward, RevertList } from './revert-only.js';
import type { ItemsFormat } from '../lists/items-format.js';
import { openExistingCheckpoint } from '../status.js';
import type { RunOptions, RunOutcome, RuntimeServices } from '../types.js';
import { laterWeightChange, restoreTarget, weightsChangedError, weightsLeftBy } from '../../actors/index.js';
import type { LaterWeight, WeightChange } from '../../actors/index.js';
import type { ForwardCheckpoint } from '../../store/views.js';

export type { AliveMove, RevertItem, SkippedItem } from '../../actors/index.js';
export type { RevertGroup } from './revert-state.js';

export { revertCheckpointPath };

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
  /** The instance's weights changed since the forward run left them (null: they did not). */
  laterWeights: LaterWeight[] | null;
  /** Moves of the forward run still queued or running on the instance: the revert refuses while there are any. */
  alive: AliveMove[];
  /** `--only FILE`: the list, its items the forward run did not move, and the forward run's items left out. */
  list?: RevertPreviewList | null;
}

/** What a `revert --only` list selects. */
export interface RevertPreviewList {
  file: string;
  /** Items of the list the forward run did not move: not touched. */
  notMoved: NotMovedByForward[];
  /** Items of the list an earlier revert took already (moved back, or still to move in its checkpoint). */
  taken: number;
  /** The forward run's items no revert took and this list leaves out: they stay on the destination. */
  outside: number;
}

export interface RevertOptions extends Pick<
  RunOptions,
  'planFile' | 'statePath' | 'leaseMs' | 'env' | 'cwd' | 'signal' | 'stdout' | 'stderr' | 'observers'
> {
  dryRun: boolean;
  /** Give the revert's quarantined items another retry.max_attempts tries (as `run --retry-quarantined`). */
  retryQuarantined?: boolean;
  /** Revert under a plan that differs from the forward run's, or resume the revert under a changed one. */
  acceptPlanChange?: boolean;
  /** Write the weights of before the forward run although they were changed since it left them. */
  overwriteWeights?: boolean;
  /** The command that runs this revert again (`shardmove revert PLAN ...`), named in every hint. */
  command: string;
  /** The command that resumes the forward run (`shardmove run PLAN ...`), for the refusals that need it. */
  forwardCommand: string;
  /** `--only FILE`: move back only the items of this reviewed list (`format` null: from the file's name or first character). */
  only?: { file: string; format: ItemsFormat | null };
  /** Asked once the preview is known and there is something to do; false changes nothing. */
  confirm(preview: RevertPreview): Promise<boolean>;
}

export type RevertOutcome =
  | { kind: 'nothing'; forwardFile: string; reason: string }
  /** A dry run's preview; `refusal`: what the revert itself would refuse now (exit 4). */
  | { kind: 'preview'; preview: RevertPreview; refusal: RuntimeError | StepError | null }
  | { kind: 'declined'; preview: RevertPreview }
  /** Interrupted (SIGINT/SIGTERM) before its run started: nothing was written. */
  | { kind: 'stopped'; forwardFile: string }
  | { kind: 'ran'; outcome: RunOutcome; revertFile: string; skipped: SkippedItem[] };

/**
 * Reverts the forward run of the plan whose checkpoint is `statePath` (default state/<name>.db).
 * Throws SHARDMOVE_NO_CHECKPOINT without one; SHARDMOVE_CHECKPOINT_MODE for a dry run's or a
 * revert's checkpoint; SHARDMOVE_LOCKED while the forward run holds it; SHARDMOVE_MOVES_IN_FLIGHT
 * while moves of the forward run are in flight or still queued on the instance;
 * SHARDMOVE_PLAN_CHANGED for another plan; SHARDMOVE_INSTANCE_CHANGED for another instance;
 * SHARDMOVE_WEIGHTS_CHANGED when the weights changed since the forward run left them.
 */
export async function executeRevert(
  opts: RevertOptions,
  injected: Partial<RuntimeServices> = {},
): Promise<RevertOutcome> {
  const services: RuntimeServices = { ...(await import('../services.js')).defaultServices(), ...injected };
  const loaded = await services.loadPlan(opts.planFile, { env: opts.env, cwd: opts.cwd });
  const { plan } = loaded;
  // The list is read and checked before anything else is opened or contacted.
  const list = opts.only ? readRevertList({ ...opts.only, cwd: opts.cwd, planFile: opts.planFile }, loaded) : null;
  const forwardFile = runCheckpointOf(plan, opts);
  const revertFile = revertCheckpointPath(forwardFile);
  const secrets = secretsOf(plan);
  const forward = openExistingCheckpoint(forwardFile, { readOnly: false });
  let log: Logger | undefined;
  let lease: LeaseKeeper | undefined;
  let api: InstanceApi | undefined;
  let early: RunOutage | undefined;
  try {
    assertForward(forward, forwardFile, revertFile);
    if (!opts.acceptPlanChange)
      assertCheckpointOfPlan(forward, forwardFile, {
        file: opts.planFile,
        cwd: opts.cwd,
        name: plan.name,
        hash: loaded.hash,
      });
    log = createRunLogger(logPath(revertFile), secrets, opts.env.LOG_LEVEL ?? 'info');
    const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    const now = services.clock.now();
    forward.acquireLock({ pid: services.pid, host: services.host, startedAt: now }, services.isAlive, {
      ms: leaseMs,
      now,
    });
    lease = keepLease(forward, leaseMs, services.clock, log);
    const inFlight = forward.countInFlight();
    if (inFlight > 0) throw inFlightRefusal(forwardFile, inFlight, opts.forwardCommand, opts.command);
    const forwardSaved = forward.loadRun();
    const forwardContext = (forwardSaved?.snapshot as { context?: Partial<RunContext> } | null)?.context;
    const forwardWeights = forwardContext?.previousWeights ?? null;
    const state = readRevertState(revertFile, services);
    const again = { accept: opts.acceptPlanChange ?? false, again: opts.command, hash: loaded.hash };
    // The forward run's plan first: another URL is refused before anything is asked of it.
    if (!state.saved) checkForwardPlan({ ...again, forwardFile, saved: forwardSaved, plan });
    // Under a list, nothing outside it may move: rows an earlier revert left to move must be its.
    if (list)
      refuseOtherOpenItems(
        state.open.filter((r) => r.state !== 'quarantined' || opts.retryQuarantined),
        list,
        { revertFile, last: state.lastList, command: opts.command },
      );

    // One client for the reads, the confirmation and the run: an OAuth refresh token is used once.
    const oauth = createOauthWriteback(opts.planFile, opts.env, plan, secrets, log);
    let onRefresh = oauth.onRefresh;
    let onResponse: (e: RequestEvent) => void = () => undefined;
    // Outages hold the reads before the run as they hold the run; its own gate takes over with the client
    // (and records the hold in the revert's checkpoint, which does not exist before the run).
    early = readsOutage(plan, opts, services, log);
    const relay = createRelayGate(early.gate);
    api = services.createApi(plan, {
      readOnly: opts.dryRun,
      onRefresh: (t) => onRefresh(t),
      onResponse: (e) => onResponse(e),
      outage: relay.gate,
      clock: services.clock,
    });
    const readAt = services.clock.now();
    let reads: ForwardReads;
    try {
      reads = await readForward({
        api,
        forward,
        context: forwardContext,
        plan,
        seeded: state.seeded,
        known: state.known,
        list,
        signal: opts.signal,
        where: { url: plan.instance.url, recordedUrl: recordedUrlOf(forwardSaved), forwardFile },
      });
    } catch (err) {
      // Ctrl-C while reading: nothing was written, and the next process reads again.
      if (opts.signal.aborted) return { kind: 'stopped', forwardFile };
      throw err;
    }
    const { moved, set } = reads;
    if (moved.length === 0)
      return { kind: 'nothing', forwardFile, reason: `${forwardFile} records no item moved by the forward run` };
    const drains = revertDrains(moved);
    const revertPlan = planOfRevert(plan, drains, moved);
    checkRevertPlan({ ...again, saved: state.saved, plan });
    const left = weightsLeftBy(forwardContext, plan);
    // A list moves back part of the drain: its weights stay as they are (its destinations stay in use).
    const current = forwardWeights && !list ? await api.getWeights() : null;
    const laterWeights = forwardWeights && current ? laterWeightChange(forwardWeights, left, current) : null;
    const preview = buildPreview({
      forwardFile,
      revertFile,
      url: plan.instance.url,
      set,
      state,
      weights: forwardWeights && current ? restoreTarget(forwardWeights, current).changes : [],
      laterWeights,
      list: reads.selection && list ? { file: list.file, ...reads.selection } : null,
    });
    const refusal =
      preview.alive.length > 0
        ? aliveRefusal(preview.alive, forwardFile, opts.command)
        : laterWeights && !opts.overwriteWeights
          ? weightsChangedError(laterWeights, 'the forward run', `${opts.command} --overwrite-weights`)
          : null;
    if (opts.dryRun) return { kind: 'preview', preview, refusal };
    if (refusal) throw refusal;
    // Items taken by this process (a new list, or the rest after one) are drained, not the end replayed.
    const adding = state.seeded && set !== null && set.items.length + set.skipped.length > 0;
    if ((!state.finished || opts.retryQuarantined || adding) && !(await opts.confirm(preview)))
      return { kind: 'declined', preview };
    if (opts.signal.aborted) return { kind: 'stopped', forwardFile };

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
        ...(adding
          ? {
              startOver: `${set.items.length + set.skipped.length} more item(s) taken${list ? ` from the list ${list.file}` : ''}`,
            }
          : {}),
        signal: AbortSignal.any([opts.signal, lease.signal]),
      },
      {
        ...services,
        // The revert's checkpoint keeps the plan as loaded (its fields, under the revert's hash of them):
        // a later revert names what changed in the file, not in the plan derived from it.
        loadPlan: async (): Promise<LoadedPlan> => ({
          ...loaded,
          plan: revertPlan,
          hash: revertHash(loaded.hash),
          hashInput: loaded.hashInput ?? planHashInput(plan),
        }),
        createApi: (_p, o) => {
          onRefresh = o.onRefresh;
          onResponse = o.onResponse;
          if (o.outage) {
            early?.close();
            relay.use(o.outage);
          }
          // The run closes what it is given; this client is closed here, after the run.
          return { ...shared, close: async () => undefined };
        },
        actors: revertActors(services.actors, {
          seed: set,
          readAt,
          drains,
          forward: forwardFile,
          forwardWeights,
          weightsLeft: left,
          overwriteWeights: opts.overwriteWeights ?? false,
          command: opts.command,
          keepWeights: list !== null,
          outside: reads.outside,
          ...seedListOf(list, reads),
        }),
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
    early?.close();
    await api?.close().catch(() => undefined);
    forward.releaseLock();
    forward.close();
    log?.flush();
  }
}

/** The gate of the reads before the run: said on stderr and in the log (no checkpoint of the revert's yet). */
function readsOutage(plan: Plan, opts: RevertOptions, services: RuntimeServices, log: Logger): RunOutage {
  return createRunOutage({
    plan,
    env: opts.env,
    store: { appendEvent: () => undefined },
    clock: services.clock,
    log,
    stderr: opts.stderr,
    signal: opts.signal,
    meanwhile: 'the revert has written nothing yet, and reads again once it answers',
  });
}

/** The list a `revert --only` seeds from, as its `revert.seeded` event records it. */
function seedListOf(list: RevertList | null, reads: ForwardReads): { list?: RevertSeedList } {
  if (!list || !reads.selection) return {};
  return {
    list: {
      file: list.file,
      digest: list.digest,
      items: list.items.length,
      notMoved: reads.selection.notMoved.length,
      outside: reads.outside.length,
    },
  };
}

/** What the reads before any write found: the forward run's items, and their verdicts (null: seeded earlier). */
interface ForwardReads {
  moved: RevertItem[];
  set: RevertSet | null;
  /** `--only`: what the list selects (null without a list). */
  selection: Omit<RevertPreviewList, 'file'> | null;
  /** The forward run's items no revert took and this one leaves out (not in the list). */
  outside: RevertItem[];
}

/**
 * The forward run's items (its rows with a move of its own, and its bulk jobs' moves it never
 * recorded), then either every item read with its move list (a first process), or a few of the
 * forward run's moves asked again (a revert that resumes). Reads only; refuses another instance.
 */
async function readForward(a: {
  api: InstanceApi;
  forward: ForwardCheckpoint;
  context: Partial<RunContext> | undefined;
  plan: Plan;
  seeded: boolean;
  /** Items the revert's checkpoint holds already (`kind:id`): not read or taken again. */
  known: ReadonlySet<string>;
  list: RevertList | null;
  signal: AbortSignal;
  where: { url: string; recordedUrl: string | null; forwardFile: string };
}): Promise<ForwardReads> {
  const { context, plan } = a;
  const only = context?.destination ?? plan.move.to[0]!;
  const recorded = forwardMovedItems(a.forward, (row) => forwardDestination(only, row));
  const sources = [...new Set([...(context?.sources ?? []), ...plan.move.from])];
  const destinations = [...new Set([...(context?.destinations ?? []), ...plan.move.to])];
  const moved = withBulkJobItems(recorded, await bulkJobItems(a.api, a.forward, sources, destinations));
  if (moved.length === 0) return { moved, set: null, selection: null, outside: [] };
  const isKnown = (i: RevertItem) => a.known.has(`${i.kind}:${i.id}`);
  const picked = a.list ? selectByList(moved, a.list, a.where.forwardFile) : null;
  const wanted = picked ? picked.chosen : moved;
  const chosenKeys = new Set(wanted.map((i) => `${i.kind}:${i.id}`));
  const outside = moved.filter((i) => !isKnown(i) && !chosenKeys.has(`${i.kind}:${i.id}`));
  const selection = picked
    ? { notMoved: picked.notMoved, taken: wanted.filter(isKnown).length, outside: outside.length }
    : null;
  const toRead = wanted.filter((i) => !isKnown(i));
  if (a.seeded && toRead.length === 0) {
    // An earlier process read every item it took; the instance must still be the one holding the forward run's moves.
    const sample = await unrecordedSample(a.api, moved);
    assertRecorded(sample.unrecorded, { ...a.where, checked: sample.checked });
    return { moved, set: null, selection, outside };
  }
  const reading = a.list ? recordingNames(a.api) : { api: a.api, names: new Map<string, string>() };
  const set = await locateRevertItems(reading.api, toRead, a.signal);
  assertRecorded(set.unrecorded, { ...a.where, checked: toRead.length });
  if (a.list) {
    // What was reviewed must be what is there: an item renamed since the list was made is named, not moved.
    const { keep, renamed } = renamedSinceList(set.items, a.list, reading.names);
    set.items = keep;
    set.skipped.push(...renamed);
  }
  return { moved, set, selection, outside };
}

function buildPreview(a: {
  forwardFile: string;
  revertFile: string;
  url: string;
  set: RevertSet | null;
  state: RevertState;
  weights: WeightChange[];
  laterWeights: LaterWeight[] | null;
  list: RevertPreviewList | null;
}): RevertPreview {
  // A process that takes items adds them to what an earlier one left to move.
  const groups = a.set ? mergeGroups(a.state.remaining, groupItems(a.set.items)) : a.state.remaining;
  return {
    forwardFile: a.forwardFile,
    revertFile: a.revertFile,
    url: a.url,
    resuming: a.set === null,
    groups,
    total: groups.reduce((n, g) => n + g.n, 0),
    skipped: a.set ? [...a.state.skipped, ...a.set.skipped] : a.state.skipped,
    weights: a.weights,
    laterWeights: a.laterWeights,
    alive: a.set ? a.set.alive : [],
    list: a.list,
  };
}

function mergeGroups(earlier: readonly RevertGroup[], added: readonly RevertGroup[]): RevertGroup[] {
  const out = earlier.map((g) => ({ ...g }));
  for (const g of added) {
    const same = out.find((o) => o.kind === g.kind && o.from === g.from && (o.to === g.to || o.to === ''));
    if (same) same.n += g.n;
    else out.push({ ...g });
  }
  return out;
}
