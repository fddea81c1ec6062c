/**
 * The checkpoint contract: one SQLite file per plan (WAL). Two views of the same object: the
 * actors get an ActorStore (item rows, event log, live overrides), the runtime a CheckpointStore
 * (that, plus the lock, the machine snapshot and the summary). `openCheckpoint` in ./checkpoint.ts
 * implements both. No module takes either whole: each takes its view of them (./views.ts).
 */
import type {
  AuditEvent,
  AuditEventMap,
  AuditEventOf,
  AuditType,
  LockHolderData,
  StopBy,
  RunControl,
} from '../events/vocabulary.js';
import type { ItemRecord, UnlistableGap } from '../api/types.js';
import type { Kind } from '../plan/types.js';
import type { LiveThresholds, ThresholdBy, ThresholdName, ThresholdSetting } from './thresholds.js';

/** Who holds the run lock (declared with the events that record it). */
export type LockHolder = LockHolderData;

/** How `acquireLock` got the lock: its generation, and the holder it replaced (with why), if any. */
export interface LockAcquired {
  generation: number;
  previous: LockHolder | null;
  /** `dead`: the holder's process is gone (this host); `stale`: its heartbeat is older than its lease. */
  reason: 'dead' | 'stale' | null;
}

/** One row of the event log: an audit event of the one vocabulary (src/events/vocabulary.ts). */
export type StoredEvent = AuditEvent;

/**
 * A checkpoint holds a real run, a dry run or a revert (`shardmove revert`), never two of them: a
 * real run that resumed a dry run's checkpoint would report a rehearsal as done.
 */
export type RunMode = 'run' | 'dry-run' | 'revert';

export interface SavedRun {
  planName: string;
  planHash: string;
  machineVersion: number;
  /** The XState persisted snapshot (JSON). */
  snapshot: unknown;
  /**
   * The plan `planHash` covers, as canonical JSON without credentials (plan/hash.ts), for naming
   * the fields of a changed plan; null in checkpoints written before it was kept (schema 17).
   */
  plan?: string | null;
}

/** Counts per kind, source storage and item state, for `status`, progress lines and reports. */
export interface StatusSummary {
  counts: { kind: Kind; source: string; state: string; n: number }[];
  quarantined: { kind: Kind; id: number; source: string; name: string; reason: string; attempts: number }[];
  /** Items that reached a final moved state in the last 10 minutes (for rate and ETA). */
  movedLast10Min: number;
  /** Total items known (enumerated). */
  total: number;
  /** Stuck moves currently reported (in flight past poll.stuck_after). */
  stuck: { kind: Kind; id: number; moveId: number; moveState: string; since: number; readOnly: boolean | null }[];
  /**
   * Pending items that already had a failed attempt and wait for their retry, per kind and source
   * (a subset of the `pending` counts). Optional: stores that cannot tell leave it out.
   */
  retrying?: { kind: Kind; source: string; n: number }[];
  /** The live overrides in force. Optional: stores without them leave it out. */
  control?: RunControl;
  /**
   * Moved items whose source copy is left on the source storage: their move ended `cleanup failed`,
   * or failed after the repository was switched to the destination. Nothing deletes them; the
   * operator does. Optional: stores that cannot tell leave it out.
   */
  orphans?: OrphanCopy[];
  /**
   * Items the run is done with (quarantined, or left the source by other means) whose last move of
   * ours failed or stuck while it may have been copying: a copy may stay on that move's
   * destination. Optional: stores that cannot tell leave it out.
   */
  failedMoves?: FailedMove[];
  /** What is placed on each destination (many destinations): chosen, scheduled or moved. Optional: older stores leave it out. */
  placement?: DestinationPlacement[];
  /**
   * Partial drains (`move.until`): the sources whose bound is reached, and per kind and source the
   * pending items never placed there, which no move will take (they stay on the source, as the plan
   * asked). Optional: older stores leave them out. ../report/counts.ts turns them into the one count.
   */
  boundsReached?: string[];
  staying?: { kind: Kind; source: string; n: number }[];
  /**
   * The checkpoint holds the run of a reviewed list (`run --only`): its `left` items are listed
   * items no longer where the list says, which the run did not move (../report/counts.ts counts
   * them apart from the moved ones). Optional: absent means false.
   */
  listRun?: boolean;
}

/** The items placed on one destination: `bytes` sums the known sizes; `unsized` items have none in the API. */
export interface DestinationPlacement {
  destination: string;
  items: number;
  bytes: number;
  unsized: number;
  /** Of `items`, those whose move finished. */
  moved: number;
}

/** A repository copy left on its old storage by a move that otherwise took the item to its destination. */
export interface OrphanCopy {
  kind: Kind;
  id: number;
  name: string;
  /** The storage the copy is left on. */
  source: string;
  moveId: number | null;
  /** `cleanup failed`, or `failed` (failed after the switch). */
  moveState: string;
}

/**
 * An item the run is done with (quarantined, or gone from its source by other means) whose last move
 * of ours did not end on the destination: failed, or given up as stuck.
 */
export interface FailedMove {
  kind: Kind;
  id: number;
  name: string;
  /** The storage the item was on when its move was posted. */
  source: string;
  /** The move's destination, when the row records it (older checkpoints and bulk drains: null). */
  destination: string | null;
  moveId: number;
  /** The move's state as a poll last saw it before it ended (a failed move's row keeps the state before `failed`). */
  moveState: string | null;
  /** Quarantined as stuck in `moveState`, rather than failed. */
  stuck: boolean;
  /** `quarantined` or `left`. */
  state: string;
  /** Why, as recorded (GitLab's message, ours for a move without one, or why the item left). */
  reason: string | null;
}

/** The operator's live overrides of a run (`shardmove control`): declared with the vocabulary that records their changes. */
export type { RunControl } from '../events/vocabulary.js';

export const NO_CONTROL: RunControl = Object.freeze({
  concurrency: null,
  paused: false,
  pausedBy: null,
  stop: null,
  updatedAt: null,
});

/** A change of the live overrides; fields left out keep their value. `stop: null` clears a stop request. */
export interface ControlChange {
  concurrency?: number | null;
  paused?: boolean;
  pausedBy?: string;
  stop?: { by: StopBy } | null;
  /** The change came from the web console (`shardmove serve`): said in its `control.changed` event. */
  via?: 'console';
}

/**
 * What the actors may do with the checkpoint: read and write item rows, append to the event log,
 * read the operator's live overrides. The runtime passes this as `ActorDeps.store`, and each actor
 * declares its part of it (./views.ts): the lock, the snapshot and the summary belong to the runtime.
 */
export interface ActorStore extends ItemStore {
  /** Append-only log of every mutating request and decision, of the one vocabulary. Never pass secrets in `data`. */
  appendEvent<K extends AuditType>(type: K, data: AuditEventMap[K], at: number): void;
  /** The operator's live overrides (NO_CONTROL when none were set). Cheap: read on every drain loop turn. */
  readControl(): RunControl;
  /** Changes the live overrides; the actors use it for one thing: the failure breaker's pause. */
  writeControl(change: ControlChange, at: number): RunControl;
  /** Events of one of `types` after `afterSeq`, oldest first, at most `limit` (content verification pages through them). */
  eventsOf<K extends AuditType>(types: readonly K[], afterSeq: number, limit: number): AuditEventOf<K>[];
  /** The thresholds changed live (`shardmove control --breaker` ...): ./thresholds.ts. Cheap: read at every ended move. */
  readThresholds(): LiveThresholds;
}

/** The whole checkpoint as the runtime holds it: what the actors may do, plus the run-level part. */
export interface CheckpointStore extends ActorStore {
  readonly file: string;
  /** Notifications and their deliveries (the plan's `notify:`, schema 20): ./notifications.ts. */
  readonly notifications: NotifyStore;
  /**
   * Takes the run lock. Throws an error with code SHARDMOVE_LOCKED naming the holder when another
   * live process holds it; takes over a lock whose holder process is dead on this host (`isAlive`
   * false) or, with `lease`, whose heartbeat is older than its holder's lease period (src/store/lease.ts).
   * With `lease`, this store's writes are fenced from then on: once another process took the lock
   * over, every write throws SHARDMOVE_LEASE_LOST.
   */
  acquireLock(holder: LockHolder, isAlive: (pid: number) => boolean, lease?: { ms: number; now: number }): LockAcquired;
  /**
   * Renews the heartbeat of the lock this store holds. False when the lock is no longer ours (taken
   * over or unlocked): the caller must stop, as every further write is refused.
   */
  renewLock(now: number): boolean;
  /** Who holds the lock now (null: nobody). */
  readLock(): LockHolder | null;
  /**
   * Throws SHARDMOVE_LEASE_LOST when this store took the lock and no longer holds it (taken over,
   * or removed by `shardmove unlock`); does nothing otherwise.
   */
  assertLease(): void;
  releaseLock(): void;
  /**
   * `shardmove unlock`: removes the lock whoever holds it, logged as `lock.unlocked` naming the old
   * holder. The old holder, if it still runs, is fenced: its next write fails and it stops.
   * Returns the holder that was removed (null: there was no lock).
   */
  forceUnlock(by: { pid: number; host: string }, now: number): LockHolder | null;
  /**
   * Fixes the kind of run this checkpoint holds if nothing has yet, and returns the kind it holds:
   * a caller whose `mode` differs must not touch the checkpoint any further.
   */
  claimMode(mode: RunMode): RunMode;
  /** The kind of run the checkpoint holds (null: none claimed yet, or a file older than schema 11). */
  mode(): RunMode | null;
  /** The saved run, or null for a fresh checkpoint. */
  loadRun(): SavedRun | null;
  /** Writes the machine snapshot atomically (one transaction). */
  saveRun(run: SavedRun): void;
  /** Counts and lists for people; `fresh`: read the placement figures now rather than reuse those of the last few seconds. */
  summary(now: number, fresh?: boolean): StatusSummary;
  /** Events after `afterSeq`, oldest first, at most `limit` (reports, metrics). */
  readEvents(afterSeq?: number, limit?: number): StoredEvent[];
  /** The newest event's sequence number (0 when the log is empty). */
  lastEventSeq(): number;
  /** Moves scheduled at or after `scheduledFrom` that ended `moved` at or after `from` (a run process's own, for its pace). */
  ownMovesSince(from: number, scheduledFrom: number): number;
  /**
   * The newest event of one of `types` among the last `window` events (null: none there): for
   * `status`, the gate's state. Bounded, so a checkpoint with millions of events and none of these
   * answers quickly.
   */
  lastEventOf<K extends AuditType>(types: readonly K[], window?: number): AuditEventOf<K> | null;
  /**
   * The newest `limit` events of one of `types` among the last `window` events, newest first (for
   * `status`: the recent failed moves). Bounded the same way as lastEventOf.
   */
  lastEventsOf<K extends AuditType>(types: readonly K[], limit: number, window?: number): AuditEventOf<K>[];
  /**
   * `run --retry-quarantined`: quarantined items go back to `pending` with their attempts reset,
   * except those quarantined as stuck (their move may still run; a drain releases them once it
   * ended). Logged as a `quarantine.released` event. Returns how many were released.
   */
  releaseQuarantined(at: number): number;
  /**
   * Sets one threshold live (`value` null: back to the plan's) and logs it as a `threshold.changed`
   * event with the value before and who changed it, in one transaction. Returns both values.
   */
  writeThreshold(
    name: ThresholdName,
    value: ThresholdSetting['value'] | null,
    at: number,
    by: ThresholdBy,
  ): { previous: ThresholdSetting['value'] | null; value: ThresholdSetting['value'] | null };
  close(): void;
}

/**
 * Item-level checkpoint (added by the drain/verify work; additive). One row per item, keyed by
 * (kind, id). States:
 * - `pending`: on the source, no move of ours in flight; eligible once `nextAttemptAt` has passed.
 * - `scheduling`: intent recorded (attempts already counted), the POST may or may not have reached the
 *   instance. Never re-POSTed blindly: reconciled from the item's moves and current storage first.
 * - `in_flight`: a move id is known and the move was not terminal when last seen.
 * - `moved`: the move ended `finished` or `cleanup failed` (the item points at the destination); the
 *   end-of-source re-enumeration checks it independently and sends it back to `pending` if still listed.
 * - `left`: no longer listed on the source although no move of ours finished (moved by a bulk job or by
 *   someone else, or deleted).
 * - `quarantined`: gave up (attempts exhausted, stuck move, permanent rejection); `lastError` says why.
 * - `unselected`: on the source, but `move.select` does not choose it: it stays there as planned, and
 *   no move of ours was ever made for it (a row another selection chooses goes back to `pending`).
 */
export type ItemState = 'pending' | 'scheduling' | 'in_flight' | 'moved' | 'left' | 'quarantined' | 'unselected';

export const ITEM_STATES: readonly ItemState[] = [
  'pending',
  'scheduling',
  'in_flight',
  'moved',
  'left',
  'quarantined',
  'unselected',
];

/**
 * The reviewed item list a checkpoint was seeded from (`run --only FILE`): its digest (over the
 * items, not the file's bytes), the plan hash it was made under, and when. One per checkpoint.
 */
export interface GivenList {
  digest: string;
  /** The file as it was named when seeded (for messages). */
  file: string;
  planHash: string;
  items: number;
  seededAt: number;
}

export interface ItemRow {
  kind: Kind;
  id: number;
  source: string;
  name: string;
  sizeBytes: number | null;
  state: ItemState;
  /** Attempts started (intents recorded), the current one included. */
  attempts: number;
  moveId: number | null;
  moveState: string | null;
  lastError: string | null;
  /** ms since epoch: not scheduled again before this (retry backoff). */
  nextAttemptAt: number;
  /** ms since epoch when the current attempt's intent was recorded. */
  intentAt: number | null;
  /** ms since epoch when the current move was first seen in flight (stuck timer base while queued). */
  scheduledAt: number | null;
  /**
   * ms since epoch when the current move was first seen running (`started`/`replicated`), the base
   * of the running stuck limit; null while it is queued. Optional: stores without it leave it out.
   */
  runningAt?: number | null;
  movedAt: number | null;
  /** Set when quarantined as stuck (ms since epoch). */
  stuckAt: number | null;
  /** The item's read-only flag when known (stuck reports). */
  readOnly: boolean | null;
  /** Last enumeration round that listed the item on its source. */
  seenRound: number;
  /** ms since epoch when a listing last showed the item on its source (0: unknown). */
  listedAt: number;
  /**
   * Where the item goes among the destinations: chosen by its first intent, or pinned before it (a revert), and
   * never changed after. Null until then. Optional: stores without it leave it out.
   */
  destination?: string | null;
  /** The item's fork network (its root project's id), when it belongs to one. */
  network?: number | null;
  /**
   * The bytes the item ranks by in the largest-first order: its network's bytes for a network's
   * member, else null (its own size). Optional: stores without it leave it out.
   */
  rankBytes?: number | null;
}

/** A fork network's member as the checkpoint holds it. */
export interface NetworkMemberRow {
  /** The network: its root project's id. */
  network: number;
  id: number;
  name: string;
  source: string;
  destination: string | null;
  state: ItemState;
  sizeBytes: number | null;
}

/** A fork network as the checkpoint knows it (fork networks move as one unit). */
export interface NetworkRow {
  /** The root project's id. */
  id: number;
  /**
   * Where the network is anchored, when known: a member already on one of the plan's destinations
   * (the root or a fork on the way to it), else the root's storage (outside the plan, perhaps).
   */
  rootStorage: string | null;
  /** The pool's bytes, estimated as the root's repository size, when known. */
  poolBytes: number | null;
  /**
   * What the network lands with on one destination: its members listed on the sources, each with the
   * pool's objects (a member's copy holds its alternates'), plus one copy of the pool.
   */
  bytes: number;
}

/** Items placed on a destination (chosen, not left or quarantined), per (destination, kind, source). */
export interface PlacedRow {
  destination: string;
  kind: Kind;
  source: string;
  items: number;
  /** The known sizes' sum; `unsized` items are in `items` but not in `bytes`. */
  bytes: number;
  unsized: number;
  /** Of those, the items whose move finished (state `moved`), likewise. */
  movedItems: number;
  movedBytes: number;
  movedUnsized: number;
}

/** Where the enumeration of one (kind, source) stands. Round 1 is the first listing; later rounds re-check. */
export interface EnumCursor {
  round: number;
  afterId: number;
  done: boolean;
}

/** Bulk POST bookkeeping per (kind, source): intent before the POST, `posted` once it was accepted. */
export interface BulkRow {
  kind: Kind;
  source: string;
  state: 'intent' | 'posted';
  intentAt: number;
  /** Highest move id already attributed (discovery of new bulk moves starts above it). */
  seenMaxMoveId: number;
  /**
   * Move-records kinds (storage not exposed): when a later bulk POST for the source was seen to
   * create no new move, i.e. nothing of the kind was left on it (ms since epoch). Null until then.
   */
  confirmedAt?: number | null;
}

/** A state GitLab keeps outside its project entity, learnt by a dry run's census (./shape.ts). */
export type ItemFlag = 'hidden' | 'pending_delete';

/** One census listing of (kind, source) without a flag, for one enumeration round. */
export interface CensusRow {
  kind: Kind;
  source: string;
  flag: ItemFlag;
  round: number;
  /** Items found to carry the flag (once done). */
  flagged: number;
  /** ms since epoch when the listing finished; null while it is under way or was cut short. */
  doneAt: number | null;
}

/** What a dry run's census writes, for the twin: which listed items carry a flag. */
export interface CensusStore {
  censusOf(kind: Kind, source: string, flag: ItemFlag): CensusRow | null;
  /** Forgets the flag for the items of (kind, source) and opens the census of round `round`. */
  startCensus(kind: Kind, source: string, flag: ItemFlag, round: number): void;
  /** Ids of the pending items of (kind, source) with afterId < id <= uptoId (null: no bound), ascending, at most `limit`. */
  knownIds(kind: Kind, source: string, afterId: number, uptoId: number | null, limit: number): number[];
  flagItems(kind: Kind, ids: readonly number[], flag: ItemFlag): void;
  finishCensus(kind: Kind, source: string, flag: ItemFlag, round: number, flagged: number, now: number): void;
  /** Ids of the items of `kind` a census found carrying `flag`. */
  flaggedIds(kind: Kind, flag: ItemFlag): Set<number>;
}

/** The item-level part of the checkpoint: the drain and verify actors' rows (see ActorStore). */
export interface ItemStore {
  /** Hidden and pending-delete flags, learnt by a dry run (schema 14). */
  readonly shape: CensusStore;
  /** Runs `fn` in one transaction (nested calls join the outer one). */
  batch<T>(fn: () => T): T;
  getCursor(kind: Kind, source: string): EnumCursor | null;
  /** Starts enumeration round `round` from the beginning (afterId 0). */
  startRound(kind: Kind, source: string, round: number): void;
  /**
   * Records one listed page of round `round` in one transaction with the cursor: new items become
   * `pending`; `moved` or `left` items still listed go back to `pending` with `reason` (GitLab 345591).
   * Returns how many were new and how many came back.
   */
  recordPage(
    kind: Kind,
    source: string,
    round: number,
    items: readonly ItemRecord[],
    now: number,
  ): { added: number; back: ItemRow[] };
  /** Records that a fresh listing showed these items on `source` at `now`. */
  touchListed(kind: Kind, source: string, ids: readonly number[], now: number): void;
  /** Pending items of (kind, source) a listing last showed before `before` (ms since epoch). */
  countStaleListed(kind: Kind, source: string, before: number): number;
  /**
   * Pending items that round `round` has not (yet) seen on the source, lowest id first. Absence from
   * a listing proves nothing (offset pages over a changing set skip items; hidden projects may not
   * be listed): the caller confirms each one with a per-item read before deciding.
   */
  absentItems(kind: Kind, source: string, round: number, limit: number): ItemRow[];
  /** Counts an item as seen on the source in round `round` (a per-item read confirmed it). */
  markSeen(kind: Kind, id: number, round: number, now: number): void;
  /** Ends round `round` (its absent items must have been confirmed first). */
  finishRound(kind: Kind, source: string, round: number): void;
  /** Records a part of round `round`'s listing that could not be read. */
  recordUnlistable(kind: Kind, source: string, round: number, gap: UnlistableGap, now: number): void;
  /** What round `round` could not read, in the order found. */
  unlistable(kind: Kind, source: string, round: number): UnlistableGap[];
  getItem(kind: Kind, id: number): ItemRow | null;
  /**
   * Pending items due at `now`, largest known `sizeBytes` first (longest processing time first),
   * unknown sizes last, ties and unknowns by id: deterministic from the checkpoint, so a resumed run
   * continues the same order.
   */
  dueItems(kind: Kind, source: string, now: number, limit: number): ItemRow[];
  /** Earliest `nextAttemptAt` among pending items, or null when none is pending. */
  nextDueAt(kind: Kind, source: string): number | null;
  /** Items in a state for one (kind, source), lowest id first, at most `limit`. */
  itemsInState(kind: Kind, source: string | null, state: ItemState, limit: number): ItemRow[];
  /**
   * Rows `move.select` no longer chose when their move was due (transferred since they were listed):
   * the first `limit` by kind and id, and how many there are.
   */
  leftSelection(limit: number): { rows: ItemRow[]; total: number };
  /** Up to `limit` rows in `scheduling` or `in_flight`, of every kind and source (a poll reads them at once), by kind and id. */
  openItems(limit: number): ItemRow[];
  /** Items in `scheduling` or `in_flight` across the whole run (the concurrency cap counts these). */
  countInFlight(): number;
  /** Counts per state for one (kind, source). */
  countStates(kind: Kind, source: string): Record<ItemState, number>;
  /** Known sizes of the items in a state, summed in SQL (a dry run's estimate stays flat in memory at any size). */
  sizeStats(kind: Kind, source: string, state: ItemState): { bytes: number; sized: number; maxBytes: number };
  /**
   * The same over the pending items the run will still move: all of them, except on a source whose
   * `move.until` bound is reached, where only those already placed (a dry run's bounded estimate).
   */
  movingSizeStats(kind: Kind, source: string): { bytes: number; sized: number; maxBytes: number };
  /**
   * pending -> scheduling, attempts + 1. False (and no change) unless the item was pending. `moveId`
   * keeps the previous attempt's move, so reconciliation can tell a new move from an old one.
   */
  markIntent(kind: Kind, id: number, now: number, destination?: string): boolean;
  /**
   * quarantined -> scheduling, attempts + 1, for a move the instance made for a quarantined item on
   * its own (a bulk job's). False (and no change) unless the item was quarantined and not stuck.
   */
  markIntentFromQuarantine(kind: Kind, id: number, now: number): boolean;
  /**
   * `move.select`: `false` turns a pending row no move of ours was ever made for into `unselected`
   * (its placement forgotten); `true` turns an `unselected` row back into `pending`. Returns whether
   * the row changed.
   */
  setSelected(kind: Kind, id: number, selected: boolean): boolean;
  /**
   * A pending or scheduling row that `move.select` no longer chooses on the instance's current
   * state (judged just before its POST): `unselected` with `reason` as its last error, the intent's
   * attempt given back. Returns whether the row changed.
   */
  leaveSelection(kind: Kind, id: number, reason: string): boolean;
  /** The reviewed list the checkpoint was seeded from (`run --only`), or null (schema 19). */
  givenList(): GivenList | null;
  /** Records the reviewed list (once: a second call with another digest throws). */
  setGivenList(list: GivenList): void;
  /** Pins a row's destination before its first intent (a revert: back where it came from); false when it already has one. */
  pinDestination(kind: Kind, id: number, destination: string): boolean;
  /** Records the item's fork network (its root project's id). */
  setNetwork(kind: Kind, id: number, network: number | null): void;
  /** Records that `ids` belong to `network` (its root's storage and pool, when known); returns the network's bytes. */
  noteNetwork(
    kind: Kind,
    ids: readonly number[],
    network: number,
    rootStorage: string | null,
    poolBytes: number | null,
  ): number;
  getNetwork(network: number): NetworkRow | null;
  networks(): NetworkRow[];
  /** Every project recorded as a fork network's member, by network and id (`status`, the reports). */
  networkMembers(): NetworkMemberRow[];
  /** Each network with a placed member and where it went; `split`: networks placed on more than one destination. */
  networkPlacements(): { networks: Map<number, string>; split: Set<number> };
  /** What has been placed where so far, per destination. */
  placedBytes(): PlacedRow[];
  /** How many members of each fork network have been placed on each destination. */
  placedNetworkMembers(): { network: number; destination: string; members: number }[];
  /** Pending items already placed (retries of scheduled items), due by `now`: what a reached bound still moves. */
  duePlacedItems(kind: Kind, source: string, now: number, limit: number): ItemRow[];
  /** The ids of pending items not placed yet, in the scheduling order (a dry run's placement walks them). */
  unplacedPendingIds(kind: Kind, source: string): number[];
  /**
   * The same items with what their place in the order is made of: each one's id, its size class
   * (as the index computes it: by its network's bytes for a network's member; -2 for an unknown
   * size) and its group (its network's root id, or its own id), in the scheduling order.
   */
  unplacedPendingKeys(kind: Kind, source: string): { ids: number[]; classes: number[]; groups: number[] };
  /** The rows of `ids` that exist, in the order given. */
  itemsByIds(kind: Kind, ids: readonly number[]): ItemRow[];
  /** Pending items never placed (what a reached bound leaves on the source). */
  countUnplaced(kind: Kind, source: string): number;
  /** The earliest next attempt of a pending item already placed, or null. */
  nextPlacedDueAt(kind: Kind, source: string): number | null;
  /** The `move.until` bound of a source, once reached (then nothing more is scheduled from it). */
  getBound(source: string): { reachedAt: number; note: string } | null;
  setBound(source: string, at: number, note: string): void;
  /** -> in_flight with the move; `since` starts the stuck timer (kept when the move id is unchanged). */
  markInFlight(kind: Kind, id: number, moveId: number, moveState: string, since: number): void;
  /** Updates the last seen state of the in-flight move. */
  markMoveState(kind: Kind, id: number, moveState: string): void;
  /** Records when the current move was first seen running (kept if already set for this move). */
  markRunning(kind: Kind, id: number, at: number): void;
  /** -> moved (finished or cleanup failed). */
  markMoved(
    kind: Kind,
    id: number,
    moveId: number | null,
    moveState: string | null,
    now: number,
    note: string | null,
  ): void;
  /** -> pending, not before `nextAttemptAt`. `refundAttempt` undoes the count of an attempt that never reached the instance. */
  markPending(kind: Kind, id: number, nextAttemptAt: number, lastError: string | null, refundAttempt: boolean): void;
  markLeft(kind: Kind, id: number, now: number, note: string | null): void;
  markQuarantined(kind: Kind, id: number, reason: string, stuck: { at: number; readOnly: boolean | null } | null): void;
  getBulk(kind: Kind, source: string): BulkRow | null;
  setBulk(row: BulkRow): void;
  /** The saved move-duration model of a kind (JSON as written by setMoveModel), or null. */
  getMoveModel(kind: Kind): string | null;
  /** Saves the move-duration model of a kind (opaque JSON; see src/actors/drain/move-model.ts). */
  setMoveModel(kind: Kind, data: string, now: number): void;
  /** The saved state of `move.concurrency: auto`'s limiter (JSON as written by setAutoCap), or null. */
  getAutoCap(): string | null;
  /** Saves the limiter's state (opaque JSON; see src/schedule/auto-limit.ts). */
  setAutoCap(data: string, now: number): void;
}

/** A target of the plan's `notify:` as its deliveries are kept: a stable key, and words for people. */
export interface NotifyTargetRef {
  key: string;
  label: string;
}

/** A public event to notify, with the targets that asked for it. */
export interface NotifyEntry {
  /** The audit event it stands for; null for one the run adds at its end (`run.finished`). */
  auditSeq: number | null;
  at: number;
  type: string;
  /** The event without `v`, `seq` and `at` (the sender adds them). */
  body: object;
  targets: readonly NotifyTargetRef[];
}

/** The next notification a target waits for. */
export interface PendingNotification {
  /** The notification's own number: its `seq` in every delivery, the same on every retry. */
  seq: number;
  type: string;
  at: number;
  body: object;
  attempts: number;
  /** When it may be tried again (ms); null: given up by this process (the next run tries it again). */
  nextAttemptAt: number | null;
  lastError: string | null;
}

/** What waits for one target, for `status` and the end of a run. */
export interface NotifyTargetView {
  target: string;
  label: string;
  /** Deliveries not made yet; `givenUp` of them wait for the next run. */
  waiting: number;
  givenUp: number;
  /** The oldest of them. */
  oldest: {
    seq: number;
    type: string;
    at: number;
    attempts: number;
    nextAttemptAt: number | null;
    lastError: string | null;
  };
}

/**
 * Notifications and their deliveries, kept in the checkpoint so that none is lost to a crash: every
 * public event a target asked for is recorded once, with one delivery per target, before it is sent;
 * a delivery counts its attempts and is marked delivered only once the target took it.
 */
export interface NotifyStore {
  /** The last audit event turned into notifications (null: none yet from this checkpoint). */
  cursor(): number | null;
  /** Records `entries` and moves the cursor to `cursor`, in one transaction. */
  enqueue(entries: readonly NotifyEntry[], cursor: number | null): void;
  /** The oldest undelivered notification of `target` this process has not given up (null: none). */
  head(target: string): PendingNotification | null;
  /** Counts one attempt at a delivery (before it is made: a crash during it counts too); returns the attempts. */
  attempted(target: string, seq: number): number;
  delivered(target: string, seq: number, at: number): void;
  /** A failed attempt: why, and when to try again (null: not again in this process). */
  failed(target: string, seq: number, error: string, nextAttemptAt: number | null): void;
  /** At a run's start: every undelivered delivery is due at `now` again, given up ones included. */
  retryAll(now: number): void;
  /** What waits per target (targets with nothing undelivered are left out). */
  waiting(): NotifyTargetView[];
  /** The newest notification's number (0: none). */
  lastSeq(): number;
}
