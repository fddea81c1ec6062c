/**
 * From the checkpoint's audit log to the public lines of `run --events`: one table with a row for
 * every audit type, either the lines it stands for or `PRIVATE` (bookkeeping a runbook does not act
 * on; the checkpoint's log keeps it). The table's type names every audit type, so a new one fails the
 * build until it is given its row, and a test reads the table against the vocabulary the same way.
 *
 * Moves of every origin count as scheduled: a per-item POST, a bulk move attributed to an item, a
 * move adopted after an unanswered POST. Pauses are read from the cap the drain records: a cap of 0
 * is a held run, and what holds it is said as the progress line and `status` say it (../report/hold.ts).
 */
import { classifyFailure } from './failure-class.js';
import { holdOf } from './hold.js';
import type { RunEventBody, RunEventBodyOf } from './run-events.js';
import { isFinalState } from './vocabulary.js';
import type { AuditEventMap, AuditType, CapData } from './vocabulary.js';

/** The run as the lines need it (a subset of the runtime's ObservedRun). */
export interface MappedRun {
  plan: { name: string };
  checkpoint: string;
  host: string;
  /** The instance's GitLab version as pre-flight read it, null before (classes failures). */
  instanceVersion?(): string | null;
}

/** What turning the log into lines remembers between events: the run, and the step in progress. */
export interface SinkState {
  run: MappedRun;
  step: { label: string; since: number } | null;
}

/** An audit event of one type, as the log holds it. */
interface EventOf<K extends AuditType> {
  seq: number;
  at: number;
  type: K;
  data: AuditEventMap[K];
}

type Lines<K extends AuditType> = (e: EventOf<K>, s: SinkState) => RunEventBody[];

/** An audit type that has no public line. */
export const PRIVATE = 'private';

/** Every audit type: the public lines it stands for, or PRIVATE. */
export type RunEventsOfAudit = { readonly [K in AuditType]: Lines<K> | typeof PRIVATE };

const iso = (ms: number | null | undefined): string | null =>
  typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : null;
const control = (c: CapData | null) => (c ? { cap: c.cap, paused: c.paused } : null);

/** The instance's GitLab version as pre-flight read it (null before, or for a state with no run). */
const releaseOf = (s: SinkState): string | null => (s.run as MappedRun | null)?.instanceVersion?.() ?? null;

function endStep(s: SinkState, outcome: 'ok' | 'failed' | 'interrupted' | 'stopped', at: number): RunEventBody[] {
  if (!s.step) return [];
  const ended: RunEventBody = {
    type: 'step.ended',
    step: s.step.label,
    outcome,
    durationMs: Math.max(0, at - s.step.since),
  };
  s.step = null;
  return [ended];
}

/** What holds the run with `cap` in force, when nothing new is scheduled under it (null: it goes on). */
function heldBy(cap: CapData | null) {
  const hold = cap ? holdOf(cap, null) : null;
  // A stop is no pause: `run.stopping` says it, and the run ends.
  return hold?.stopped && hold.by !== 'stop' ? hold.by : null;
}

/** Who holds the run, and which rule when a rule (or the room) holds it: a hold by another rule is news. */
const holdKey = (cap: CapData | null): string | null => {
  const by = heldBy(cap);
  return by === 'rule' || by === 'capacity' ? `${by}:${cap?.rule ?? ''}` : by;
};

/**
 * The pause lines a change of the cap stands for: paused when nothing new may start any more (or
 * something else holds it now), unpaused when moves may start again.
 */
function pauseLines(cap: CapData, previous: CapData | null): RunEventBody[] {
  // A stop is neither a pause nor an unpause (a paused run that is stopped stays unscheduled): `run.stopping` says it.
  if (cap.limit === 'stopping' || previous?.limit === 'stopping') return [];
  if (holdKey(cap) === holdKey(previous)) return [];
  const before = heldBy(previous);
  const now = heldBy(cap);
  if (now === null) return before === null ? [] : [{ type: 'run.unpaused', by: before, cap: cap.cap }];
  const paused: RunEventBodyOf<'run.paused'> = { type: 'run.paused', by: now, reason: cap.reason };
  if (cap.rule !== undefined && (now === 'rule' || now === 'capacity')) paused.rule = cap.rule;
  if (now === 'window' || now === 'ratelimit') paused.until = iso(cap.until);
  return [paused];
}

const moveScheduled: Lines<'move.scheduled' | 'move.adopted' | 'bulk.move_seen'> = (e) => [
  {
    type: 'move.scheduled',
    kind: e.data.kind,
    source: e.data.source,
    id: e.data.id,
    moveId: e.data.moveId,
    moveState: e.data.moveState,
    bulk: e.type === 'bulk.move_seen',
  },
];

/** The table. */
export const RUN_EVENTS_OF_AUDIT: RunEventsOfAudit = {
  'run.started': (e, s) => [
    {
      type: 'run.started',
      plan: s.run.plan.name,
      checkpoint: s.run.checkpoint,
      host: s.run.host,
      resumed: e.data.resumed,
      dryRun: e.data.dryRun,
      pid: e.data.pid,
    },
  ],
  'step.started': (e, s) => {
    const label = e.data.step;
    if (isFinalState(label)) return endStep(s, label === 'failed' ? 'failed' : 'ok', e.at);
    const out = endStep(s, 'ok', e.at);
    s.step = { label, since: e.at };
    return [...out, { type: 'step.started', step: label }];
  },
  'run.interrupted': (e, s) => endStep(s, 'interrupted', e.at),
  'run.stopping': (e) => [{ type: 'run.stopping', by: e.data.by, step: e.data.step, inFlight: e.data.inFlight }],
  'run.stopped': (e, s) => endStep(s, 'stopped', e.at),
  // The public run.finished is the CLI's, with the exit code: here the machine's end closes the step.
  'run.finished': (e, s) => endStep(s, e.data.outcome === 'failed' ? 'failed' : 'ok', e.at),
  'move.scheduled': moveScheduled,
  'move.adopted': moveScheduled,
  'bulk.move_seen': moveScheduled,
  'move.finished': (e) => [
    {
      type: 'move.finished',
      kind: e.data.kind,
      source: e.data.source,
      id: e.data.id,
      moveId: e.data.moveId,
      cleanupFailed: false,
      error: null,
    },
  ],
  'move.cleanup_failed': (e) => [
    {
      type: 'move.finished',
      kind: e.data.kind,
      source: e.data.source,
      id: e.data.id,
      moveId: e.data.moveId,
      cleanupFailed: true,
      error: e.data.error,
    },
  ],
  'move.failed': (e, s) => [
    {
      type: 'move.failed',
      kind: e.data.kind,
      source: e.data.source,
      id: e.data.id,
      moveId: e.data.moveId,
      error: e.data.error,
      class: classifyFailure(e.data.error, releaseOf(s)),
    },
  ],
  'move.quarantined': (e, s) => [
    {
      type: 'move.quarantined',
      kind: e.data.kind,
      source: e.data.source,
      id: e.data.id,
      reason: e.data.reason,
      attempts: e.data.attempts,
      stuck: false,
      class: classifyFailure(e.data.reason, releaseOf(s)),
    },
  ],
  'move.stuck': (e) => [
    {
      type: 'move.quarantined',
      kind: e.data.kind,
      source: e.data.source,
      id: e.data.id,
      reason: `stuck: move ${e.data.moveId} still ${e.data.moveState}`,
      attempts: null,
      stuck: true,
      class: e.data.phase === 'queued' ? 'stuck-queued' : 'stuck-running',
    },
  ],
  'cap.changed': (e) => [
    {
      type: 'cap.changed',
      cap: e.data.cap,
      paused: e.data.paused,
      previous: control(e.data.previous),
      reason: e.data.reason,
      limit: e.data.limit,
      ...(e.data.rule !== undefined ? { rule: e.data.rule, since: iso(e.data.since ?? null) } : {}),
    },
    ...pauseLines(e.data, e.data.previous),
  ],
  'breaker.tripped': (e) => [
    { type: 'breaker.tripped', failures: e.data.failures, withinMs: e.data.withinMs, reason: e.data.reason },
  ],
  'window.opened': (e) => [{ type: 'window.opened', window: e.data.window ?? '', closesAt: iso(e.data.closesAt) }],
  'window.closed': (e) => [
    { type: 'window.closed', window: e.data.window ?? '', nextOpensAt: iso(e.data.nextOpensAt) },
  ],
  'network.split': (e) => [
    { type: 'network.split', network: e.data.network, bytes: e.data.bytes, extraBytes: e.data.extraBytes },
  ],
  'lock.taken_over': (e) =>
    e.data.reason
      ? [
          {
            type: 'lock.taken_over',
            previous: { pid: e.data.previous.pid, host: e.data.previous.host },
            reason: e.data.reason,
          },
        ]
      : [],
  // The cap that throttle.cap, rule.changed (a rule that holds) and control.changed move reaches the
  // file as cap.changed (and run.paused/run.unpaused), recorded by the drain.
  'throttle.cap': PRIVATE,
  'rule.changed': PRIVATE,
  'control.changed': PRIVATE,
  'threshold.changed': PRIVATE,
  'run.restart': PRIVATE,
  'schedule.ignored': PRIVATE,
  'http.mutating': PRIVATE,
  'weights.restored': PRIVATE,
  'copies.checked': PRIVATE,
  'list.seeded': PRIVATE,
  'list.skipped': PRIVATE,
  'revert.seeded': PRIVATE,
  'revert.skipped': PRIVATE,
  'lock.acquired': PRIVATE,
  'lock.unlocked': PRIVATE,
  'quarantine.released': PRIVATE,
  'drain.started': PRIVATE,
  'drain.finished': PRIVATE,
  'drain.dry_run': PRIVATE,
  'drain.ahead': PRIVATE,
  'drain.until_reached': PRIVATE,
  'placement.planned': PRIVATE,
  'drain.queued_ahead': PRIVATE,
  'enumerate.started': PRIVATE,
  'enumerate.unlistable': PRIVATE,
  'enumerate.finished': PRIVATE,
  'enumerate.filter_ignored': PRIVATE,
  'item.not_on_source': PRIVATE,
  'item.left_selection': PRIVATE,
  'item.still_on_source': PRIVATE,
  'item.absent_but_on_source': PRIVATE,
  'item.absent_unknown': PRIVATE,
  'item.elsewhere': PRIVATE,
  'item.gone': PRIVATE,
  'item.unreachable': PRIVATE,
  'drain.unreachable_bulk': PRIVATE,
  'item.already_on_destination': PRIVATE,
  'item.stuck_state': PRIVATE,
  'item.retry': PRIVATE,
  'move.intent': PRIVATE,
  'move.read_only': PRIVATE,
  'move.post_failed': PRIVATE,
  'move.not_created': PRIVATE,
  'move.unstuck': PRIVATE,
  'bulk.intent': PRIVATE,
  'bulk.posted': PRIVATE,
  'bulk.post_failed': PRIVATE,
  'bulk.throttled': PRIVATE,
  'bulk.adopted': PRIVATE,
  'bulk.move_for_quarantined': PRIVATE,
  'bulk.queued': PRIVATE,
  'bulk.dequeued': PRIVATE,
  'bulk.queue_unknown': PRIVATE,
  'bulk.settled': PRIVATE,
  'records.sweep': PRIVATE,
  'records.confirmed': PRIVATE,
  'records.unproven': PRIVATE,
  'records.unconfirmed': PRIVATE,
  'verify.checked': PRIVATE,
  'verify.filter_ignored': PRIVATE,
  'content.recorded': PRIVATE,
  'content.checked': PRIVATE,
  // Public through cap.changed and run.paused/run.unpaused with `by: "outage"`.
  'instance.unreachable': PRIVATE,
  'instance.answered': PRIVATE,
};

/** The public lines an audit event stands for (none for a private one), by the table. */
export function toRunEvents<K extends AuditType>(e: EventOf<K>, s: SinkState): RunEventBody[] {
  const lines: Lines<K> | typeof PRIVATE = RUN_EVENTS_OF_AUDIT[e.type];
  return lines === PRIVATE ? [] : lines(e, s);
}
