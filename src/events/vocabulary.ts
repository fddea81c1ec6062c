/**
 * The run's audit events, declared once: every event the checkpoint's log holds, with the fields
 * of its data. Writers (`appendEvent`) are checked against it, readers (`--events`, the metrics
 * file, the report, `status`) get the data typed by the event's type, with no casts. The way undici
 * declares its diagnostics channels and xstate its inspection events.
 *
 * One concept has one name: where `run --events` (./run-events.ts) has the same event, the log uses
 * its name and its fields. A checkpoint written by an older release may hold names since changed or
 * retired: its readers take them through one table (./legacy-names.ts), so a name changes there or
 * not at all. Fields are only added otherwise (as optional when an older checkpoint may lack them).
 *
 * This module is at the bottom of the house: it imports nothing but types of the plan and the HTTP
 * client's record of an attempt, which the log keeps as the client made it. The shapes of higher
 * layers' values (a verification entry, a drain's result) are restated here as fields; a throttle
 * rule's state is declared here and schedule/rules.ts, which computes it, takes it from here.
 */
import type { RequestEvent } from '../api/client.js';
import type { Kind } from '../plan/types.js';
import type { FailureBreaker, ThrottleRule } from '../plan/values.js';

/** How a run machine ends: the run's final states, in the order the machine checks them. */
export const FINAL_STATES = ['done', 'doneWithQuarantine', 'failed'] as const;
export type FinalState = (typeof FINAL_STATES)[number];

export function isFinalState(s: string): s is FinalState {
  return (FINAL_STATES as readonly string[]).includes(s);
}

/** A throttle rule's status: `ok`, `pending` (past its bound, for less than its `for`), `holding`, or `error` (its query failed). */
export type RuleStatus = 'ok' | 'pending' | 'holding' | 'error';

/** One throttle rule's state after a reading. */
export interface RuleState {
  rule: string;
  action: ThrottleRule['action'];
  status: RuleStatus;
  /** The worst sample's value (null: no sample, or the query failed). */
  value: number | null;
  /** The worst sample's labels (empty for a scalar). */
  labels: Record<string, string>;
  op: 'above' | 'below';
  bound: number;
  /** Since when the condition (or the error) has been true (ms since epoch; null while ok). */
  since: number | null;
  /** What failed, for status `error`. */
  error: string | null;
}

/** A rule's status change, with the status before it (null at the first reading). */
export interface RuleChange extends RuleState {
  previous: RuleStatus | null;
}

/** The drain an event belongs to. */
interface OfDrain {
  kind: Kind;
  source: string;
}

/** One item of a drain. */
interface OfItem extends OfDrain {
  id: number;
}

/** A move of ours, as a poll or a POST saw it. */
interface OfMove extends OfItem {
  moveId: number;
}

/** Why the run reconciled an item with the instance (actors/drain/reconcile.ts). */
type ReconcileCause = 'ambiguous' | 'read-only' | 'resume' | 'lost-move';

/** A holder of the run lock, as the lock row and the lock events record it. */
export interface LockHolderData {
  pid: number;
  host: string;
  /** ms since epoch. */
  startedAt: number;
  /** ms since epoch of the holder's last renewal (its start until it renewed). Read from the lock row. */
  heartbeatAt?: number;
  /** The holder's lease period; null for a lock written without one (never expires). Read from the lock row. */
  leaseMs?: number | null;
  /** Raised by every acquisition; the holder's writes are fenced on it. Read from the lock row. */
  generation?: number;
}

/** Where an item with a copy left behind was found when a run re-checked it. */
export interface CopyCheckData {
  kind: Kind;
  id: number;
  /** The storage the copy is on. */
  storage: string;
  /** The storage the item lives on, as the instance answered; null when deleted or unreadable. */
  itemStorage: string | null;
  /** The item no longer exists. */
  gone: boolean;
  /** Why its storage could not be read (null when it was). */
  why: string | null;
}

/** A change of the scheduling gate: a maintenance window opened or closed, or the throttle moved the cap. */
export interface GateChangeData {
  cap: number;
  /** The operator's cap the gate worked under. */
  ceiling: number;
  reason: string | null;
  /** window.closed: when the next window opens (ms since epoch). */
  nextOpensAt?: number | null;
  /** window.opened: the window as the plan writes it, and when it closes. */
  window?: string | null;
  closesAt?: number | null;
}

/** What limits the cap in force, most binding first (`stopping`: a stop was requested, none may start). */
/** `queue`: a bulk move's job still waits in Sidekiq's queue, so the drain waits with it (actors/drain/bulk.ts). */
/**
 * `ratelimit`: the instance's application rate limit holds this process's reads until `until`
 * (api/rate-pacer.ts). `outage`: the instance does not answer, and the run holds until it does (api/outage.ts).
 */
export type CapLimit =
  'plan' | 'control' | 'paused' | 'window' | 'rule' | 'throttle' | 'queue' | 'stopping' | 'ratelimit' | 'outage';

/** Who asked a run to stop: `shardmove control --stop`, or the stop file beside the checkpoint. */
export type StopBy = 'control' | 'file' | 'console';

/** A stop request as the control row holds it: when it was made and by what. */
export interface StopRequest {
  /** ms since epoch. */
  at: number;
  by: StopBy;
}

/**
 * The operator's live overrides of a run (`shardmove control`), read by the drain at every turn of
 * its loop. `concurrency` null means the plan's `move.concurrency`; `paused` stops new moves (moves
 * in flight are still followed to their end).
 */
export interface RunControl {
  concurrency: number | null;
  paused: boolean;
  /** Why the run is paused, when something else than an operator paused it (the failure breaker). */
  pausedBy?: string | null;
  /**
   * A stop request not yet consumed (`shardmove control --stop`, or the stop file): nothing new
   * starts, and the run ends once nothing is in flight. The run that ends clears it.
   */
  stop?: StopRequest | null;
  /** ms since epoch of the last change; null when never set. */
  updatedAt: number | null;
}

/** The cap in force: moves allowed in flight, with what set it. */
export interface CapData {
  /** Moves allowed in flight now (0: none may start). */
  cap: number;
  /** The operator's cap: the plan's `move.concurrency`, or `shardmove control`'s override (0 while paused). */
  ceiling: number;
  /** True while `shardmove control --pause` holds the run. */
  paused: boolean;
  /** What set `cap`. */
  limit: CapLimit;
  /** In words, for people (the throttle's or the window's reason). */
  reason: string;
  /**
   * Outside every maintenance window: when the next one opens (ms since epoch; null: none will).
   * Held by the instance's rate limit: when its window ends.
   */
  until?: number | null;
  /** A throttle rule holds the run (limit 'rule'): its name, and since when (ms since epoch). */
  rule?: string;
  since?: number | null;
}

/** A threshold's value as `threshold.changed` records it: a breaker (or `off`), a latency in ms, a rule's bound. */
export type ThresholdValueData = FailureBreaker | 'off' | number | { op: 'above' | 'below'; bound: number };

/** Every audit event and the fields of its data. */
export interface AuditEventMap {
  // The run (runtime/)
  /** `planFile`: the plan file's real path, which the checkpoint belongs to (older events have none). */
  'run.started': { resumed: boolean; dryRun: boolean; pid: number; planFile?: string };
  'run.restart': { reason: string };
  /** `inFlight`: moves posted and not seen to end, which go on on the instance (older events have none). */
  'run.interrupted': { step: string; inFlight?: number };
  /** The run saw a stop request: nothing new starts; it ends once nothing is in flight. */
  'run.stopping': { by: StopBy; step: string; inFlight: number };
  /** The run obeyed a stop request: nothing was in flight; the step it was in returned, the checkpoint is saved. */
  'run.stopped': { by: StopBy; step: string };
  /** The machine reached a final state (the CLI's `--events` line adds the exit code). */
  /**
   * The instance stopped answering: since when (ms since epoch), the last failure, how often it is
   * asked again and, when a request waits for it, when the run gives up (null: only the health check noticed).
   */
  'instance.unreachable': { since: number; cause: string; retryMs: number; deadline: number | null };
  /** It answers again: since when it did not, and for how long. */
  'instance.answered': { since: number; downMs: number };
  'run.finished': {
    outcome: FinalState;
    error: { step: string; code: string; message: string } | null;
    quarantined: number;
  };
  'step.started': { step: string };
  'schedule.ignored': { windows: string[]; timezone: string };
  /** The client's record of the attempt, as written; `method` read back as any text. */
  'http.mutating': Omit<RequestEvent, 'method'> & { method: string };
  'weights.restored': { from: Record<string, number>; to: Record<string, number> };
  /**
   * The end of a run read, on the instance, where each item with a copy left behind lives now
   * (report/copies.ts): a copy on that storage is the live repository, never one to remove.
   */
  'copies.checked': { checks: CopyCheckData[] };
  // `shardmove revert` (runtime/revert*.ts): the items taken from the forward run's checkpoint
  'revert.seeded': {
    forward: string;
    items: number;
    skipped: number;
    /**
     * `revert --only FILE`: the list, its items the forward run did not move (not touched), and the
     * forward run's items neither this list nor an earlier revert took (they stay on the destination).
     */
    list?: { file: string; digest: string; items: number; notMoved: number; outside: number };
  };
  /** An item the forward run moved that is no longer where it put it (`source`): not moved back. */
  'revert.skipped': OfItem & { storage: string | null; reason: string };
  // `run --only FILE` (actors/given-list.ts): a reviewed item list seeded into the checkpoint
  'list.seeded': {
    file: string;
    digest: string;
    items: number;
    skipped: number;
    /** The fork networks of the listed projects still on their source, and how many projects left `forks_count` out. */
    networks?: number;
    unknownForks?: number;
  };
  /** A listed item no longer where the list says (`source`): moved elsewhere, or deleted. Not moved. */
  'list.skipped': OfItem & { storage: string | null; reason: string };
  // The lock and the live control (store/)
  'lock.acquired': { pid: number; host: string; generation: number; leaseMs: number | null };
  'lock.taken_over': { previous: LockHolderData; reason: 'dead' | 'stale' | null; heartbeatAgeMs: number };
  'lock.unlocked': { previous: LockHolderData; by: { pid: number; host: string } };
  'control.changed': {
    concurrency: number | null;
    paused: boolean;
    pausedBy?: string;
    /** A stop request in force (absent: none); a change of it is recorded with `previous.stop`. */
    stop?: StopRequest;
    previous: { concurrency: number | null; paused: boolean; stop?: StopRequest | null };
    /** Present when the change came from the web console (`shardmove serve`), not `shardmove control`. */
    via?: 'console';
  };
  /** `ended`, `rate`: the rate form's moves that ended within the window, and the rate in force (a share). */
  'breaker.tripped': { failures: number; withinMs: number; reason: string; ended?: number; rate?: number };
  /**
   * A threshold changed live (`shardmove control --breaker`, `--rule NAME --above X`, `--latency-p90`):
   * its name (`breaker`, `latency_p90`, `rule:NAME`), the value before and after (null: the plan's),
   * and who changed it. The values are store/thresholds.ts's.
   */
  'threshold.changed': {
    name: string;
    value: ThresholdValueData | null;
    previous: ThresholdValueData | null;
    by: { user: string; host: string; pid: number };
  };
  'quarantine.released': { count: number };
  // The cap in force and the gate under it (actors/cap.ts, schedule/gate.ts)
  'cap.changed': CapData & { previous: CapData | null };
  'window.opened': GateChangeData;
  'window.closed': GateChangeData;
  'throttle.cap': GateChangeData;
  /** A throttle rule changed status (schedule/rules.ts): its value, bound and since when. */
  'rule.changed': RuleChange;
  // Drains (actors/drain/)
  'drain.started': OfDrain & { mode: 'throttled' | 'bulk' | 'records' };
  'drain.finished': OfDrain & {
    moved: number;
    quarantined: number;
    remaining: number;
    byRecords?: boolean;
    by?: 'records';
    kept?: number;
    unreachable?: {
      items: number;
      by: 'bulk' | 'quarantine';
      forbiddenBy?: string;
      left: number;
      release: string | null;
    };
  };
  'drain.dry_run': OfDrain & {
    wouldSchedule: number | null;
    concurrency?: number;
    estimatedRequests?: number;
    by?: 'records';
    bulkPosts?: number;
  };
  /** The next drain's items fill this drain's free slots; kind and source are the next drain's. */
  'drain.ahead': OfDrain & { items: number };
  /** Pre-flight's placement: what the listed items would put on one destination, and its room (null: unknown). */
  'placement.planned': { storage: string; items: number; bytes: number; freeBytes: number | null };
  /** No destination has room for a whole fork network: its members are placed one by one (each extra destination gets a pool copy). */
  'network.split': { network: number; bytes: number; extraBytes: number };
  /** A partial drain's bound (`move.until`) is reached for the source: nothing more is scheduled from it. */
  'drain.until_reached': OfDrain & { bound: 'moved' | 'free'; limitBytes: number; placedBytes: number };
  /**
   * Queue ahead (`move.queue_ahead`): `items` successors were POSTed beyond the cap for moves expected to end
   * within the measured refill round trip; `beyond` is how many moves are now in flight over the cap.
   */
  'drain.queued_ahead': OfDrain & { items: number; beyond: number; roundTripMs: number };
  'enumerate.started': OfDrain & { round: number; afterId: number };
  'enumerate.unlistable': OfDrain & {
    round: number;
    id: number | null;
    afterId: number | null;
    beforeId: number | null;
    reason: string;
  };
  'enumerate.finished': OfDrain & { round: number; added: number; back: number; left: number };
  'enumerate.filter_ignored': OfItem & { storage: string | null };
  'item.not_on_source': OfItem & { storage: string | null };
  'item.left_selection': OfItem & { reason: string };
  'item.still_on_source': OfItem & { moveId: number | null; reason: string | null };
  'item.absent_but_on_source': OfItem & { round: number };
  'item.absent_unknown': OfItem & { round: number; why: string };
  'item.elsewhere': OfItem & { storage: string; cause: ReconcileCause | 'absent' };
  'item.gone': OfItem & { cause: ReconcileCause | 'absent' };
  /** A project listed on the source that every per-item move route answers 404 for (hidden or pending deletion, before 16.7). */
  'item.unreachable': OfItem & { by: 'bulk' | 'quarantine' };
  /** The drain's unreachable projects go by one bulk move of the source. */
  'drain.unreachable_bulk': OfDrain & { items: number; destination: string };
  'item.already_on_destination': OfItem & { cause: ReconcileCause };
  'item.stuck_state': OfItem & { moveId: number | null; moveState: string | null; readOnly: boolean | null };
  'item.retry': OfItem & { attempts: number; nextAttemptAt: number; reason: string };
  'move.quarantined': OfItem & { attempts: number; reason: string };
  'move.intent': OfItem & { attempt: number; destination: string };
  'move.scheduled': OfMove & { moveState: string };
  'move.read_only': OfItem;
  'move.post_failed': OfItem & { failure: string; error: string };
  'move.not_created': OfItem & { cause: ReconcileCause };
  'move.adopted': OfMove & { moveState: string; cause: ReconcileCause };
  'move.finished': OfMove;
  'move.cleanup_failed': OfMove & { error: string | null };
  'move.failed': OfMove & { error: string | null };
  'move.stuck': OfMove & { moveState: string; since: number; phase: 'queued' | 'running'; limitMs: number };
  'move.unstuck': OfMove & { moveState: string };
  'bulk.intent': OfDrain & { destination: string; attempt: number };
  'bulk.posted': OfDrain & { destination: string };
  'bulk.post_failed': OfDrain & { failure: string; error: string };
  'bulk.throttled': OfDrain & { waitMs: number };
  'bulk.adopted': OfDrain & { above: number };
  'bulk.move_seen': OfMove & { moveState: string };
  'bulk.move_for_quarantined': OfMove & { moveState: string };
  /** Nothing of the job seen yet, and Sidekiq's queue may still hold it (actors/drain/bulk-queue.ts). */
  'bulk.queued': OfDrain & { queue: string; backlog: number; latencyS: number };
  /** The queues that can hold the job are empty or younger than its POST: it ran, or runs now. */
  'bulk.dequeued': OfDrain & { queues: string[] };
  /** `GET /sidekiq/queue_metrics` failed: nothing proves that the job ran. */
  'bulk.queue_unknown': OfDrain & { reason: string };
  /** `ran`: a move of the job was seen, or the queue showed it gone (absent in older logs). */
  'bulk.settled': OfDrain & { found: number; quarantined: number; ran?: boolean };
  'records.sweep': OfDrain & { sweep: number; above: number };
  'records.confirmed': OfDrain & { sweep: number; quarantined: number };
  /** A sweep whose job created no move and cannot be proven to have run: it confirms nothing. */
  'records.unproven': OfDrain & { sweep: number; reason: string };
  /** `unproven`: why the last sweep could not confirm, when its job was not proven to have run. */
  'records.unconfirmed': OfDrain & { sweeps: number; unproven?: string };
  // Verification (actors/verify.ts)
  'verify.checked': OfDrain & {
    listed: number;
    quarantined: number;
    unexpected: number;
    unlistable: number;
    unlisted: number;
    by?: 'listing' | 'records';
    moved?: number;
    kept?: number;
  };
  'verify.filter_ignored': OfItem & { storage: string | null };
  // Content verification (actors/drain/content.ts, actors/verify-content.ts; plan verify.content)
  /** A sampled project's repository fingerprint, read right before its move was posted (null fields: not read). */
  'content.recorded': OfItem & {
    defaultBranch: string | null;
    head: string | null;
    branches: number | null;
    tags: number | null;
    /** Why it could not be read (the move is posted all the same); absent when it was. */
    error?: string;
  };
  /** A sampled project compared at verification: `differences` in words, empty when it agrees. */
  'content.checked': OfItem & {
    differences: string[];
    before: { head: string | null; branches: number | null; tags: number | null } | null;
    after: { head: string | null; branches: number | null; tags: number | null } | null;
    /** Why it could not be compared (no fingerprint before, the project gone), when it was not. */
    unchecked?: string;
  };
}

export type AuditType = keyof AuditEventMap;

/** An event as the checkpoint's log holds it: its sequence number, time (ms since epoch), type and data. */
export type AuditEvent = { [K in AuditType]: { seq: number; at: number; type: K; data: AuditEventMap[K] } }[AuditType];

/** The events of one type (e.g. `AuditEventOf<'move.failed'>`). */
export type AuditEventOf<K extends AuditType> = Extract<AuditEvent, { type: K }>;

/** Events whose data names a drain (kind and source). */
export type DrainEventType = { [K in AuditType]: AuditEventMap[K] extends OfDrain ? K : never }[AuditType];

/** What each event says, in a line: the vocabulary's runtime list, and its documentation. */
export const AUDIT_EVENTS: { readonly [K in AuditType]: string } = {
  'run.started': 'the run started or resumed in this process',
  'run.restart': 'the machine starts again from pre-flight (why: a failed run, a changed plan, released items)',
  'run.interrupted': 'SIGINT/SIGTERM: the step in flight returned, the checkpoint is saved',
  'run.stopping': 'the run saw a stop request (shardmove control --stop, or the stop file): nothing new starts',
  'run.stopped': 'the run stopped on request once nothing was in flight; the checkpoint is saved',
  'run.finished': 'the machine reached a final state',
  'step.started': 'the machine entered a step',
  'schedule.ignored': '--ignore-schedule: maintenance windows are not enforced',
  'http.mutating': 'a mutating request was answered (the audit trail of writes)',
  'weights.restored': 'shardmove weights restore (or a revert) wrote the recorded weights back',
  'copies.checked':
    'the end of a run read where each item with a copy left behind lives now (a copy where it lives is live)',
  'revert.seeded':
    'a revert took the items the forward run moved from its checkpoint (those still where it put them, and the skipped)',
  'revert.skipped': 'a revert skips an item that left the storage the forward run moved it to (moved again, deleted)',
  'list.seeded': 'run --only took the items of a reviewed list, those still where the list says them and the skipped',
  'list.skipped': 'run --only skips a listed item that is no longer where the list says (moved elsewhere, deleted)',
  'lock.acquired': 'this process took the run lock',
  'lock.taken_over': 'the run lock of a dead or stale holder was taken over',
  'lock.unlocked': 'shardmove unlock removed the run lock',
  'control.changed': 'shardmove control changed the cap, paused/unpaused, or a stop was requested or consumed',
  'quarantine.released': '--retry-quarantined released quarantined items',
  'breaker.tripped': 'the failure breaker paused the run (retry.pause_after)',
  'threshold.changed':
    'shardmove control changed a threshold live (the breaker, a rule bound, the throttle latency), with who, the old and the new value',
  'cap.changed': 'the cap in force changed (operator, pause, window or throttle)',
  'window.opened': 'a maintenance window opened',
  'window.closed': 'the last open maintenance window closed',
  'throttle.cap': 'the throttle moved its cap under the ceiling',
  'rule.changed':
    'a throttle rule on Prometheus changed status (ok, pending, holding, error), with its value and bound',
  'drain.started': 'a drain of one kind off one source started',
  'drain.finished': 'a drain ended, with its counts',
  'drain.dry_run': 'a dry run counted what a drain would schedule',
  'drain.ahead': "the next drain's items fill free slots",
  'placement.planned': "pre-flight's placement of the listed items on one destination",
  'network.split': 'a fork network was split: no destination had room for all of it',
  'drain.until_reached': "a partial drain's bound (move.until) is reached for a source",
  'drain.queued_ahead': 'successors were posted early, beyond the cap, for moves about to end (move.queue_ahead)',
  'enumerate.started': 'a listing round of a source started',
  'enumerate.unlistable': 'part of a listing could not be read',
  'enumerate.finished': 'a listing round ended',
  'enumerate.filter_ignored': 'the instance ignored the repository_storage filter',
  'item.not_on_source': 'an item was not on the source when its move was due',
  'item.left_selection': 'an item move.select no longer chooses (transferred since it was listed) was not moved',
  'item.still_on_source': 'a moved item was listed on the source again',
  'item.absent_but_on_source': 'an item missing from the listing is still on the source',
  'item.absent_unknown': 'an item missing from the listing could not be located',
  'item.elsewhere': 'an item is on another storage than the source or the destination',
  'item.gone': 'an item no longer exists',
  'item.unreachable':
    'a project still listed on the source answers 404 on every per-item move route (hidden or pending deletion, before 16.7): quarantined, to move by the bulk move of its source where the plan allows one',
  'drain.unreachable_bulk': "a drain's hidden or pending-delete projects go by one bulk move of their source",
  'item.already_on_destination': 'an item is already on the destination',
  'item.stuck_state': 'the read-only state of a stuck item',
  'item.retry': 'a failed item waits for another attempt',
  'move.quarantined': 'an item is quarantined (attempts used up, or refused)',
  'move.intent': 'a move POST is about to be sent',
  'move.scheduled': 'a move POST was answered with a move',
  'move.read_only': 'a move POST was refused: the repository is read-only',
  'move.post_failed': 'a move POST failed',
  'move.not_created': 'an unanswered POST created no move',
  'move.adopted': 'a move the instance holds was adopted as ours',
  'move.finished': 'a move ended finished',
  'move.cleanup_failed': 'a move ended cleanup failed (source copy left behind)',
  'move.failed': 'a move ended failed',
  'move.stuck': 'a move stayed queued or running past its limit',
  'move.unstuck': 'a stuck move moved on',
  'bulk.intent': 'a bulk move POST is about to be sent',
  'bulk.posted': 'a bulk move POST was answered',
  'bulk.post_failed': 'a bulk move POST failed',
  'bulk.throttled': 'a bulk move POST was rate limited',
  'bulk.adopted': 'the moves of an unanswered bulk POST are looked for',
  'bulk.move_seen': "a bulk job's move was attributed to an item",
  'bulk.move_for_quarantined': "a bulk job's move for a quarantined item",
  'bulk.queued': "a bulk move's job may still wait in Sidekiq's queue",
  'bulk.dequeued': "a bulk move's job left Sidekiq's queue",
  'bulk.queue_unknown': "Sidekiq's queue could not be read for a bulk move's job",
  'bulk.settled': 'the moves of a bulk job were followed to their end',
  'records.sweep': 'a sweep by move records started (kinds whose storage is not exposed)',
  'records.confirmed': 'a sweep found nothing else on the source',
  'records.unproven': 'a sweep found no move, but its bulk job was not proven to have run',
  'records.unconfirmed': 'no sweep confirmed the source empty',
  'verify.checked': 'a source was checked empty (or not) for one kind',
  'verify.filter_ignored': 'verification saw the repository_storage filter ignored',
  'content.recorded': "a sampled project's repository fingerprint was read before its move (verify.content)",
  'content.checked': 'a sampled project was compared with its fingerprint from before its move',
  'instance.unreachable':
    'the instance stopped answering (network errors, timeouts, 502/503/504): the run holds, asking again every retryMs, for up to instance.outage_wait',
  'instance.answered': 'the instance answers again after an outage: the run goes on, following the moves in flight',
};

/** The events that start one of our moves: a POST's answer, a bulk job's move, an adopted move. */
export const MOVE_STARTS = ['move.scheduled', 'bulk.move_seen', 'move.adopted'] as const satisfies readonly AuditType[];
export type MoveStartType = (typeof MOVE_STARTS)[number];

/** How a move ended for us: `finished` and `cleanup_failed` leave the repository on the destination. */
export type MoveEnd = 'finished' | 'cleanup_failed' | 'failed' | 'stuck';

/** The events that end one of our moves, and how each ends it. */
export const MOVE_ENDS = {
  'move.finished': 'finished',
  'move.cleanup_failed': 'cleanup_failed',
  'move.failed': 'failed',
  'move.stuck': 'stuck',
} as const satisfies Partial<Record<AuditType, MoveEnd>>;
export type MoveEndType = keyof typeof MOVE_ENDS;

export type MoveEvent = AuditEventOf<MoveStartType | MoveEndType>;

export function isMoveStart(e: AuditEvent): e is AuditEventOf<MoveStartType> {
  return (MOVE_STARTS as readonly string[]).includes(e.type);
}

export function isMoveEnd(e: AuditEvent): e is AuditEventOf<MoveEndType> {
  return e.type in MOVE_ENDS;
}

/** True for the events that start or end one of our moves. */
export function isMoveEvent(e: AuditEvent): e is MoveEvent {
  return isMoveStart(e) || isMoveEnd(e);
}
