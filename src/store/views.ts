/**
 * The checkpoint as each of its users sees it. The store is one object over one SQLite file
 * (./checkpoint.ts implements every method of ./types.ts), but no user needs all of it: each one
 * here names the methods a concern calls, so a reader knows from a module's parameter types what it
 * may read and write, and the type checker refuses a call outside its view. The one Checkpoint
 * object is passed wherever a view is wanted; the methods' documentation is on ./types.ts.
 */
import type { ShapeTable } from './shape.js';
import type { ActorStore, CheckpointStore } from './types.js';

/** Appending to the audit log: the one write of the steps that only record what they did. */
export type EventLogWriter = Pick<ActorStore, 'appendEvent'>;

/** One row by its key: `move.select`'s judgement and the items a partial drain leaves (../actors/select.ts, ../actors/stays.ts). */
export type ItemLookup = Pick<ActorStore, 'getItem'>;

/**
 * The write gates and the operator's cap (../actors/write-gate.ts, ../actors/cap.ts): the live
 * overrides, read at every turn, and the events that record a cap or a hold.
 */
export type GateStore = Pick<ActorStore, 'appendEvent' | 'readControl'> & AutoCapStore;

/** `move.concurrency: auto`'s limiter (../actors/auto-cap.ts): its saved state, and the moves in flight it judges by. */
export type AutoCapStore = Pick<ActorStore, 'countInFlight' | 'getAutoCap' | 'setAutoCap'>;

/**
 * Pre-flight and the capacity check (../actors/preflight.ts, ../actors/capacity.ts,
 * ../actors/foreign-moves.ts): reads of the rows a drain already knows, and their findings logged.
 */
export type PreflightStore = EventLogWriter & Pick<ActorStore, 'getBulk' | 'getItem' | 'itemsInState' | 'networks'>;

/** The weights and the Geo resync steps (../actors/weights.ts, ../actors/geo.ts): the gates only. */
export type WeightsStore = GateStore;

/** The drain's move-duration model (../actors/drain/move-model.ts): one saved model per kind. */
export type MoveModelStore = Pick<ActorStore, 'getMoveModel' | 'setMoveModel'>;

/**
 * Where the drain places items (../actors/drain/placement.ts): what each destination holds so far,
 * the fork networks and their members' destinations, and a split network logged.
 */
export type PlacementStore = EventLogWriter &
  Pick<ActorStore, 'networks' | 'getNetwork' | 'networkMembers' | 'networkPlacements'> &
  Pick<ActorStore, 'placedBytes' | 'placedNetworkMembers'>;

/**
 * The drain (../actors/drain/): listing rounds, the item rows' states from due to moved, placement
 * on the destinations and fork networks, bulk bookkeeping, the move model, the breaker's pause and
 * the census of a dry run. Not the run lock, the machine snapshot, the summary or the seeding of a
 * revert or a reviewed list.
 */
export type DrainStore = GateStore &
  PlacementStore &
  MoveModelStore &
  Pick<
    ActorStore,
    // Listing rounds (enumerate.ts, given.ts, records.ts, relist.ts).
    | 'getCursor'
    | 'startRound'
    | 'recordPage'
    | 'touchListed'
    | 'countStaleListed'
    | 'absentItems'
    | 'markSeen'
    | 'finishRound'
    | 'recordUnlistable'
    | 'unlistable'
    // Reading and moving the rows (loop.ts, schedule-batch.ts, poll.ts, outcome.ts, reconcile.ts).
    | 'batch'
    | 'getItem'
    | 'itemsByIds'
    | 'itemsInState'
    | 'countStates'
    | 'countInFlight'
    | 'dueItems'
    | 'nextDueAt'
    | 'openItems'
    | 'setSelected'
    | 'leaveSelection'
    | 'markIntent'
    | 'markIntentFromQuarantine'
    | 'markInFlight'
    | 'markMoveState'
    | 'markRunning'
    | 'markMoved'
    | 'markPending'
    | 'markLeft'
    | 'markQuarantined'
    // Placement beyond placement.ts's: pins, bounds, the order of unplaced rows (until.ts, networks.ts).
    | 'pinDestination'
    | 'noteNetwork'
    | 'duePlacedItems'
    | 'unplacedPendingIds'
    | 'unplacedPendingKeys'
    | 'countUnplaced'
    | 'nextPlacedDueAt'
    | 'getBound'
    | 'setBound'
    // Bulk moves, the breaker, content checks, the census (bulk.ts, breaker.ts, content.ts, census.ts).
    | 'getBulk'
    | 'setBulk'
    | 'writeControl'
    | 'readThresholds'
    | 'eventsOf'
    | 'shape'
  >;

/** The verify step (../actors/verify.ts, ../actors/verify-content.ts): reads the rows, records its checks. */
export type VerifyStore = EventLogWriter &
  Pick<ActorStore, 'countStates' | 'eventsOf' | 'getBound' | 'getBulk' | 'getItem' | 'itemsInState' | 'leaveSelection'>;

/**
 * Seeding a revert's checkpoint from the forward run's items, and the revert's own verify
 * (../actors/revert.ts, ../actors/revert-items.ts): one listing round of given rows, each pinned
 * back where it came from.
 */
export type RevertSeedStore = GateStore &
  Pick<
    ActorStore,
    | 'batch'
    | 'countStates'
    | 'finishRound'
    | 'getCursor'
    | 'getItem'
    | 'itemsInState'
    | 'markLeft'
    | 'pinDestination'
    | 'recordPage'
    | 'startRound'
  >;

/**
 * Seeding a checkpoint from a reviewed item list (`run --only`, ../actors/given-list.ts): the list's
 * digest once, its rows as one listing round, pinned and grouped into their fork networks.
 */
export type GivenListSeedStore = EventLogWriter &
  Pick<
    ActorStore,
    | 'batch'
    | 'finishRound'
    | 'givenList'
    | 'markLeft'
    | 'noteNetwork'
    | 'pinDestination'
    | 'recordPage'
    | 'setGivenList'
    | 'startRound'
  >;

/** A checkpoint opened to read what a run did: its saved run and its summary, closed once read. */
export type SavedRunReader = Pick<CheckpointStore, 'close' | 'loadRun' | 'summary'>;

/**
 * The forward checkpoint as `shardmove revert` holds it (../runtime/revert/): locked so no run
 * resumes it meanwhile, read for what it moved, never written otherwise.
 */
export type ForwardCheckpoint = SavedRunReader &
  Pick<CheckpointStore, 'acquireLock' | 'readLock' | 'releaseLock'> &
  Pick<CheckpointStore, 'countInFlight' | 'getBulk' | 'getItem' | 'itemsInState' | 'lastEventOf' | 'mode'>;

/** A reviewed item list read from a checkpoint (../runtime/lists/): its rows, its seed and the run's end. */
export type ListStore = SavedRunReader & Pick<CheckpointStore, 'getBound' | 'givenList' | 'itemsInState'>;

/**
 * `shardmove status`, the web console and the reports (../runtime/status.ts, ../cli/status*.ts,
 * ../serve/): reads only, on a connection opened read-only.
 */
export type StatusStore = SavedRunReader &
  // The event log and the lock.
  Pick<CheckpointStore, 'eventsOf' | 'lastEventOf' | 'lastEventsOf' | 'ownMovesSince' | 'readEvents' | 'readLock'> &
  // The rows, the seed of a reviewed list and the fork networks.
  Pick<CheckpointStore, 'getItem' | 'givenList' | 'itemsInState' | 'leftSelection' | 'networkMembers' | 'networks'> &
  Pick<CheckpointStore, 'notifications' | 'readThresholds' | 'getAutoCap'>;

/**
 * The observers of a run (../runtime/observe/, the progress line, the metrics file): the summary and
 * the event log read as they grow, the live overrides.
 */
export type ObserverStore = Pick<
  CheckpointStore,
  'getItem' | 'lastEventOf' | 'lastEventSeq' | 'readControl' | 'readEvents' | 'summary'
>;

/**
 * `shardmove control` and the stop of a run (../runtime/control/): the live overrides and thresholds,
 * what is in flight, and the saved run they apply to.
 */
export type ControlStore = SavedRunReader &
  Pick<CheckpointStore, 'file' | 'batch' | 'appendEvent' | 'countInFlight' | 'getBulk'> &
  // The live overrides and thresholds.
  Pick<CheckpointStore, 'readControl' | 'writeControl' | 'readThresholds' | 'writeThreshold'>;

/**
 * `shardmove twin` (../twin/): a finished dry run's checkpoint read for the census it took (with
 * the census table's own reads of every item, ./shape.ts), the sizes it would move and the fork
 * networks it found.
 */
export type TwinStore = Pick<
  CheckpointStore,
  'file' | 'lastEventOf' | 'loadRun' | 'mode' | 'movingSizeStats' | 'networkMembers' | 'networks' | 'summary'
> & { readonly shape: ShapeTable };
