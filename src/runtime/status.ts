/**
 * Reading a checkpoint for `status`, safely while a run writes it: read-only connection (WAL lets
 * readers in) with a busy timeout, no lock taken, nothing written. The lock row tells a live run
 * (its holder's pid is alive) from an interrupted one (no holder, or a dead one after kill -9).
 */
import { LEFT_SELECTION_LISTED, leftSelectionOf } from '../report/left-selection.js';
import { existsSync } from 'node:fs';
import { forwardMovedItems } from '../actors/index.js';
import { openCheckpoint } from '../store/checkpoint.js';
import { checkpointBusyTimeout } from '../store/busy.js';
import type { Checkpoint } from '../store/checkpoint.js';
import type { SavedRun } from '../store/types.js';
import { ITEM_STATES } from '../store/types.js';
import { failedMoves } from '../report/failed-moves.js';
import type { FailedMove } from '../report/failed-moves.js';
import type { RunContext } from '../machine/types.js';
import { networksView } from '../report/networks.js';
import type { NetworksView } from '../report/networks.js';
import { buildStatusReport, capView } from '../report/status.js';
import type { LockView, RevertView, StatusReport, StatusSources } from '../report/status.js';
import { releasedAtOf } from '../report/pace.js';
import { AUTO_PREFIX } from '../events/hold.js';
import { withCopyKnowledge } from './copies.js';
import { NO_CHECKPOINT, RuntimeError } from './errors.js';
import { isAlive, thisHost } from './ownership/process.js';
import { revertCheckpointPath } from './paths.js';
import type { StatusStore } from '../store/views.js';

/**
 * Opens the checkpoint at `file` beside a run that may hold it (no lock taken, busy timeout); throws
 * SHARDMOVE_NO_CHECKPOINT when the file does not exist, rather than creating one that `run` would
 * then start from.
 */
export function openExistingCheckpoint(file: string, opts: { readOnly: boolean; checked?: boolean }): Checkpoint {
  if (!existsSync(file)) {
    throw new RuntimeError(NO_CHECKPOINT, `no checkpoint at ${file}: the plan has not run yet (or pass --state FILE)`);
  }
  return openCheckpoint(file, {
    readOnly: opts.readOnly,
    busyTimeoutMs: checkpointBusyTimeout(),
    ...(opts.checked ? { checked: true } : {}),
  });
}

/** The lock holder with its liveness; a holder on another host cannot be probed (alive: null). */
export function lockHolder(store: StatusStore): LockView | null {
  const holder = store.readLock();
  return holder ? { ...holder, alive: holder.host === thisHost() ? isAlive(holder.pid) : null } : null;
}

/** The plan as a command was given it: its name and `move.concurrency` (null when it did not load whole). */
export interface PlanGiven {
  name: string;
  concurrency: number | null;
  /** The schedule's time zone (UTC without one); null when the plan did not load whole. */
  timezone?: string | null;
  /** Whether its `move.concurrency` is `auto` (undefined: not known, the plan did not load whole). */
  auto?: boolean;
}

/**
 * The plan's `move.concurrency` for a checkpoint: the given plan's when it is the checkpoint's plan
 * (same name), else the cap the run last recorded as the plan's; null when neither says, and under
 * `move.concurrency: auto` (see planAutoOf).
 */
export function planCapOf(store: StatusStore, plan: PlanGiven | null): number | null {
  const saved = store.loadRun();
  if (plan && (!saved || saved.planName === plan.name)) {
    if (plan.concurrency !== null) return plan.concurrency;
    // Under auto the plan has no number: the limiter's last cap is no plan's cap.
    if (plan.auto === true) return null;
  }
  const recorded = store.lastEventsOf(['cap.changed'], 100).find((e) => e.data.limit === 'plan');
  if (recorded?.data.reason.startsWith(AUTO_PREFIX)) return null;
  return recorded ? recorded.data.ceiling : null;
}

/**
 * Whether the checkpoint's run has `move.concurrency: auto`: the given plan's word when it is the
 * checkpoint's plan, else whether the checkpoint keeps a limiter's state or the cap the run last
 * recorded as the plan's is the limiter's (`auto: ...`).
 */
export function planAutoOf(store: StatusStore, plan: PlanGiven | null): boolean {
  const saved = store.loadRun();
  if (plan && plan.auto !== undefined && (!saved || saved.planName === plan.name)) return plan.auto;
  if (store.getAutoCap() !== null) return true;
  const recorded = store.lastEventsOf(['cap.changed'], 100).find((e) => e.data.limit === 'plan');
  return recorded?.data.reason.startsWith(AUTO_PREFIX) ?? false;
}

/** The caps recorded by the running process that `status` looks through for the end of a hold (bounded read). */
const CAPS_READ = 1_000;

/**
 * What the run's pace is computed from (../report/pace.ts paceOf), read from the checkpoint as the
 * run process reads it for its own line: its start (the last `run.started`), when its last hold
 * ended (its recorded caps), and its own moves that ended. Null before any run started.
 */
export function paceSourceOf(store: StatusStore): NonNullable<StatusSources['pace']> | null {
  const started = store.lastEventOf(['run.started']);
  if (!started) return null;
  const caps = store
    .lastEventsOf(['cap.changed'], CAPS_READ)
    .filter((e) => e.seq > started.seq)
    .reverse()
    .map((e) => ({ at: e.at, cap: e.data.cap }));
  return {
    startedAt: started.at,
    releasedAt: releasedAtOf(caps),
    ownMovesSince: (from) => store.ownMovesSince(from, started.at),
  };
}

/**
 * The fork networks a checkpoint knows (report/networks.ts); `memberList`: with every member. An
 * unplaced member goes to the run's destination when it has only one.
 */
export function readNetworks(store: StatusStore, saved: SavedRun | null, memberList = false): NetworksView {
  return networksOfRun(store, (saved?.snapshot as { context?: RunContext } | undefined)?.context, memberList);
}

/** The same, for a run's own context (the final summary). */
export function networksOfRun(
  store: StatusStore,
  c: Pick<RunContext, 'destination' | 'destinations'> | undefined,
  memberList = false,
): NetworksView {
  const destinations = c ? (c.destinations ?? [c.destination]) : [];
  return networksView(store.networks(), store.networkMembers(), {
    destination: destinations.length === 1 ? destinations[0]! : null,
    memberList,
  });
}

/**
 * The status of the checkpoint at `file`; throws SHARDMOVE_NO_CHECKPOINT when there is none.
 * `networkMembers`: list every fork network's members (`status --json --items`).
 */
export function readStatus(
  file: string,
  now: number,
  plan: PlanGiven | null = null,
  opts: { networkMembers?: boolean; checked?: boolean } = {},
): StatusReport {
  // `checked`: the caller had the whole file checked already (the console, at its first look).
  const store = openExistingCheckpoint(file, { readOnly: true, checked: opts.checked === true });
  try {
    const saved = store.loadRun();
    return withCopyKnowledge(file, store, (copies) =>
      buildStatusReport(file, saved, store.summary(now), now, {
        lock: lockHolder(store),
        thresholds: store.readThresholds().overrides,
        planConcurrency: planCapOf(store, plan),
        planAuto: planAutoOf(store, plan),
        cap: capView(store.lastEventOf(['cap.changed'])),
        failures: recentFailures(store, versionOf(saved)),
        last: store.lastEventOf(['run.finished', 'run.interrupted', 'run.stopped']),
        timezone: plan?.timezone ?? 'UTC',
        copies,
        notifications: store.notifications.waiting(),
        givenList: store.givenList()?.file ?? null,
        leftSelection: leftSelectionOf(store.leftSelection(LEFT_SELECTION_LISTED)),
        networks: readNetworks(store, saved, opts.networkMembers),
        pace: paceSourceOf(store),
        revert: readRevertView(file, store, now),
      }),
    );
  } finally {
    store.close();
  }
}

/** The run's context as its last snapshot saved it (weights, Geo, ...), or null before any (read-only). */
export function readRunContext(file: string, opts: { checked?: boolean } = {}): RunContext | null {
  const store = openExistingCheckpoint(file, { readOnly: true, checked: opts.checked === true });
  try {
    return (store.loadRun()?.snapshot as { context?: RunContext } | undefined)?.context ?? null;
  } finally {
    store.close();
  }
}

/** One change of the cap in force, as the run recorded it (`cap.changed`). */
export interface CapChange {
  at: number;
  cap: number;
  ceiling: number;
  limit: string;
  reason: string;
}

/** The newest `count` changes of the cap, newest first (read-only, no lock; `checked` as readStatus). */
export function readCapChanges(file: string, count: number, opts: { checked?: boolean } = {}): CapChange[] {
  const store = openExistingCheckpoint(file, { readOnly: true, checked: opts.checked === true });
  try {
    return store
      .lastEventsOf(['cap.changed'], count)
      .map((e) => ({ at: e.at, cap: e.data.cap, ceiling: e.data.ceiling, limit: e.data.limit, reason: e.data.reason }));
  } finally {
    store.close();
  }
}

/** The instance's GitLab version pre-flight recorded in the saved run, if any. */
function versionOf(saved: SavedRun | null): string | null {
  const context = (saved?.snapshot as { context?: { instanceVersion?: string | null } } | undefined)?.context;
  return context?.instanceVersion ?? null;
}

/** Failed moves and what followed each, read from the newest events of those types. */
const FAILURE_EVENTS_READ = 500;

/** The newest failed moves in the checkpoint's log, with the attempt and outcome of each. */
export function recentFailures(store: StatusStore, version: string | null = null): FailedMove[] {
  const events = store.lastEventsOf(['move.failed', 'item.retry', 'move.quarantined'], FAILURE_EVENTS_READ);
  return failedMoves(events, (kind, id) => store.getItem(kind, id)?.name ?? null, undefined, version);
}

/** How many events of `type` the checkpoint's log holds (e.g. `item.retry` for the demo's summary). */
export function countEvents(file: string, type: string): number {
  const store = openCheckpoint(file, { readOnly: true, busyTimeoutMs: checkpointBusyTimeout() });
  try {
    let n = 0;
    let after = 0;
    for (;;) {
      const page = store.readEvents(after, 10_000);
      if (page.length === 0) return n;
      n += page.filter((e) => e.type === type).length;
      after = page[page.length - 1]!.seq;
    }
  } finally {
    store.close();
  }
}

/**
 * What a forward run's `status` and `report` say of its revert: whether one ran beside it (its
 * checkpoint `<name>.revert.db`), when, in what state (running, done, failed ...), how many items
 * went back to which storage, and how many of the forward run's items are still where it put them.
 * Read-only, from the two checkpoints alone (no instance is contacted).
 */
const EVERY_ROW = Number.MAX_SAFE_INTEGER;
const REVERT_KINDS = ['projects', 'snippets', 'groups'] as const;

/**
 * The revert of the forward checkpoint `forwardFile`, or null when none ran (no revert checkpoint
 * beside it, or `forwardFile` is a revert's own). `forward`: the forward checkpoint, open.
 */
export function readRevertView(forwardFile: string, forward: StatusStore, now: number): RevertView | null {
  if (forwardFile.endsWith('.revert.db')) return null;
  const file = revertCheckpointPath(forwardFile);
  if (!existsSync(file)) return null;
  let store;
  try {
    store = openExistingCheckpoint(file, { readOnly: true });
  } catch {
    return {
      file,
      state: 'unreadable',
      startedAt: null,
      endedAt: null,
      back: [],
      toMove: 0,
      quarantined: 0,
      skipped: 0,
      forwardItems: 0,
      stillThere: 0,
      notTaken: 0,
      lists: [],
    };
  }
  try {
    const saved = store.loadRun();
    const last = store.lastEventOf(['run.finished', 'run.interrupted', 'run.stopped']);
    const status = buildStatusReport(file, saved, store.summary(now), now, { lock: lockHolder(store), last });
    const taken = new Set<string>();
    const backBy = new Map<string, number>();
    let toMove = 0;
    let quarantined = 0;
    let skipped = 0;
    for (const kind of REVERT_KINDS) {
      for (const state of ITEM_STATES)
        for (const row of store.itemsInState(kind, null, state, EVERY_ROW)) taken.add(`${kind}:${row.id}`);
      for (const row of store.itemsInState(kind, null, 'moved', EVERY_ROW)) {
        if (row.moveId === null) skipped++;
        else backBy.set(row.destination ?? '?', (backBy.get(row.destination ?? '?') ?? 0) + 1);
      }
      skipped += store.itemsInState(kind, null, 'left', EVERY_ROW).length;
      quarantined += store.itemsInState(kind, null, 'quarantined', EVERY_ROW).length;
      for (const state of ['pending', 'scheduling', 'in_flight'] as const)
        toMove += store.itemsInState(kind, null, state, EVERY_ROW).length;
    }
    const back = [...backBy.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([storage, n]) => ({ storage, n }));
    const ofForward = forwardMovedItems(forward, (row) => row.destination ?? '');
    // Moved there by the forward run, and taken by no revert (not in any list): still there.
    const notTaken = ofForward.filter((i) => i.forwardState === 'moved' && !taken.has(`${i.kind}:${i.id}`)).length;
    const first = store.eventsOf(['run.started'], 0, 1)[0];
    const lists = store
      .eventsOf(['revert.seeded'], 0, 1000)
      .map((e) => e.data.list?.file)
      .filter((f): f is string => typeof f === 'string');
    return {
      file,
      state: status.state,
      startedAt: first?.at ?? null,
      endedAt: status.state === 'running' ? null : (status.ended?.at ?? null),
      back,
      toMove,
      quarantined,
      skipped,
      forwardItems: ofForward.length,
      // Not moved back yet (still to move, quarantined), or taken by no revert: where the forward run put them.
      stillThere: notTaken + toMove + quarantined,
      notTaken,
      lists: [...new Set(lists)],
    };
  } finally {
    store.close();
  }
}
