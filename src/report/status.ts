/**
 * What `status` shows, built from a checkpoint's saved run and summary: the current step, counts per
 * kind, storage and state, rate and ETA, stuck and quarantined items. One object for `--json`, and
 * its text rendering.
 */
import type { AuditEventOf, CapData } from '../events/vocabulary.js';
import { describeInForce } from './control-words.js';
import { describeThresholdInForce } from './threshold-words.js';
import type { ThresholdOverride } from '../store/thresholds.js';
import { autoCapOf, holdOf } from '../events/hold.js';
import type { AutoCapView, Hold } from '../events/hold.js';
import type { RunContext, StaysOutput } from '../machine/types.js';
import { STAYS_SHOWN, staysLines, verificationVerdict } from './stays.js';
import { NO_CONTROL } from '../store/types.js';
import type { NotifyTargetView, RunControl, SavedRun, StatusSummary } from '../store/types.js';
import type { KindProgress } from './summary.js';
import { failedMoveLines } from './failed-moves.js';
import type { FailedMove } from './failed-moves.js';
import { copiesLines, copiesOf } from './copies.js';
import type { CopyKnowledge, LeftCopy, LiveCopy } from './copies.js';
import { describeFailure } from '../events/failure-class.js';
import type { FailureClass } from '../events/failure-class.js';
import { countItems, listOutcome, listWords } from './counts.js';
import { countWaiting, waitingLines } from './notifications.js';
import type { SourceProgress } from './counts.js';
import { formatApproxDuration, placementLines } from './summary.js';
import { MIN_MOVES_FOR_RATE, etaOf, paceOf } from './pace.js';
import type { PaceInput } from './pace.js';
import { leftSelectionLines } from './left-selection.js';
import { holdNextStep } from './next-step.js';
import { stepWords } from './step-words.js';
import type { RunNamed } from '../shared/control-command.js';
import type { LeftSelectionItem } from './left-selection.js';
import { NO_NETWORKS, networkLines } from './networks.js';
import type { NetworksView } from './networks.js';

/** The run lock as `status` found it: who holds it and whether that process is alive. */
export interface LockView {
  pid: number;
  host: string;
  startedAt: number;
  /** Alive on this host; null when the holder is on another host (it cannot be probed from here). */
  alive: boolean | null;
  /** The holder's last heartbeat and lease period (run lock lease, schema 8); absent on older checkpoints. */
  heartbeatAt?: number;
  leaseMs?: number | null;
  generation?: number;
}

export interface StatusReport {
  checkpoint: string;
  plan: string | null;
  /**
   * `run --only FILE`, once the run is done with nothing quarantined: what the run of that list did,
   * in a headline's words (null otherwise: while it runs nothing is yet "moved", and a quarantined
   * item was not).
   */
  listOutcome: string | null;
  /**
   * "not started", "running" (a live process holds the lock), "interrupted" (no live holder and the
   * machine did not reach a final state: killed, stopped by a signal, or crashed), "stopped" (as
   * interrupted, but on request: `control --stop` or the stop file), or the final state: "done",
   * "doneWithQuarantine", "failed".
   */
  state: string;
  /** The process holding the run lock, if any (a dead holder means the run was killed). */
  lock: LockView | null;
  /** The step the run is in (or ended in), e.g. "drain nfs-1/projects". */
  step: string | null;
  dryRun: boolean;
  /** A dry run: what a real run would be refused for (room that does not fit, another drain's moves); empty: nothing. */
  wouldRefuse: string[];
  error: RunContext['error'];
  /** How the run's last process ended (`run.finished`, `run.interrupted` or `run.stopped`), when it is not running. */
  ended: { state: string; at: number } | null;
  kinds: KindProgress[];
  /** The same count per kind and source (./counts.ts). */
  bySource: SourceProgress[];
  counts: StatusSummary['counts'];
  total: number;
  /** Moves that ended per minute over the last 10 minutes (or the run's age); the text shows it only while it runs. */
  movesPerMinute: number;
  /** Null when unknown, while nothing is scheduled (`now` stops it), and when it is not running. */
  etaMs: number | null;
  remaining: number;
  /** Left on the sources as planned (a reached `move.until` bound, or not selected): neither remaining nor failed (./counts.ts). */
  staying: number;
  /** Of `staying`: not chosen by `move.select`. */
  notSelected: number;
  /** Sources whose `move.until` bound is reached. */
  boundsReached: string[];
  stuck: StatusSummary['stuck'];
  /**
   * The newest moves GitLab ended `failed` (the ones the failure breaker counts), newest first, with
   * the attempt, GitLab's `error_message`, its failure class and remedy (./failed-moves.ts).
   */
  failures: FailedMove[];
  /** Each with its failure class and that class's remedy (./failure-class.ts, docs/failures.md). */
  quarantined: (StatusSummary['quarantined'][number] & { class: FailureClass; remedy: string; doc: string })[];
  /**
   * Repository copies left behind for the operator to remove once checked (./copies.ts): on the
   * storage a moved item left (cleanup failed, failed after the switch), or on the destination of
   * a failed move; `source` is the storage the copy is on, with its paths there (hashed storage,
   * relative to the storage's path) and where the item lives, and how that is known.
   */
  orphans: LeftCopy[];
  /** Copies that would be listed but are on the storage their item lives on now: live, never to remove. */
  liveCopies: LiveCopy[];
  /** Items and bytes per destination (many destinations); empty when nothing was placed per item. */
  placement: NonNullable<StatusSummary['placement']>;
  warnings: string[];
  /** Pre-flight's information (room that fits), apart from the warnings. */
  notes: string[];
  previousWeights: Record<string, number> | null;
  /** The operator's live overrides (`shardmove control`) and the plan's own cap. */
  control: RunControl & { planConcurrency: number | null; planAuto?: boolean };
  /** Thresholds set live in place of the plan's, oldest change first (empty: the plan's hold). */
  thresholds: ThresholdOverride[];
  /**
   * The cap in force as the run recorded it last (operator, pause, maintenance windows, throttle):
   * what caps the run now and why; null before a drain looked, and when it is not running.
   */
  cap: CapView | null;
  /**
   * What holds the running run back now, in the progress line's words (./hold.ts): paused (by whom),
   * held by a rule or the room, waiting for a window, a lower cap; null when nothing does or it is
   * not running.
   */
  now: Hold | null;
  /**
   * Under `move.concurrency: auto`, while the limiter's cap is the one in force (nothing pins,
   * pauses or holds it): that cap and the limiter's last reason, since `cap.at`; null otherwise or
   * when the run is not running.
   */
  auto: AutoCapView | null;
  /**
   * Whether the run's `move.concurrency` is `auto` (the plan given says so, or the checkpoint keeps
   * its limiter's state): `control --concurrency auto` (or the console's "auto") hands a pinned cap back.
   */
  planAuto: boolean;
  /** Notifications not delivered yet (the plan's `notify:`), per target; empty when none waits. */
  notifications: NotifyTargetView[];
  /**
   * Items `move.select` no longer chose when their move was due (transferred since they were
   * listed): not moved, they stay on their source (counted in `staying` and `notSelected`). The
   * first 50 by kind and id, with `total` the count of them all.
   */
  leftSelection: { items: LeftSelectionItem[]; total: number };
  /** The fork networks on the sources: roots, members, pools, where each goes (./networks.ts). */
  networks: NetworksView;
  /**
   * The run's verification once it ran: `says` in the final summary's words, and what the
   * instance's listing found still on the sources (each item with why it stays: quarantined, not
   * in the reviewed list, not selected, move.until); `stays` null for a checkpoint from before it
   * was recorded. Null before verification ran.
   */
  verification: { ok: boolean; says: string; stays: StaysOutput | null } | null;
  /** A forward run's revert (`shardmove revert`, its checkpoint beside this one); null when none ran. */
  revert: RevertView | null;
}

/** A forward run's revert as its `status` and `report` show it (../runtime/revert-view.ts). */
export interface RevertView {
  /** The revert's checkpoint. */
  file: string;
  /** As `status` of the revert's checkpoint says it: running, interrupted, stopped, done, doneWithQuarantine, failed, not started. */
  state: string;
  /** The revert's first start, and when its last process ended (null while it runs or before it ran). */
  startedAt: number | null;
  endedAt: number | null;
  /** Items moved back, per storage they went back to. */
  back: { storage: string; n: number }[];
  /** Taken by the revert and not moved back yet (pending or in flight). */
  toMove: number;
  quarantined: number;
  /** Left where they were: moved again, deleted, being moved by someone else, renamed since a list. */
  skipped: number;
  /** The forward run's items with a move of its own. */
  forwardItems: number;
  /** Of the forward run's items, still where it put them: not moved back yet, quarantined, or in no list. */
  stillThere: number;
  /** Of `stillThere`: taken by no revert (`revert --only` lists left them out). */
  notTaken: number;
  /** The `--only` lists the revert took items from, oldest first (empty: a plain revert). */
  lists: string[];
}

/** The cap in force as the run last recorded it, and since when. */
export interface CapView extends CapData {
  /** When it was recorded (ms since epoch). */
  at: number;
}

/** The cap view from the run's last `cap.changed` event. */
export function capView(e: AuditEventOf<'cap.changed'> | null): CapView | null {
  if (!e) return null;
  const { previous: _previous, ...cap } = e.data;
  return { ...cap, at: e.at };
}

/** Live, interrupted or ended: a live lock holder wins (a resumed run starts from an old final snapshot). */
function runState(snap: { status?: string; value?: unknown } | undefined, lock: LockView | null): string {
  if (lock && lock.alive !== false) return 'running';
  if (snap?.status === 'done') return String(snap.value);
  return snap ? 'interrupted' : 'not started';
}

/** The events that say how a run's process ended. */
export type EndEvent = AuditEventOf<'run.finished' | 'run.interrupted' | 'run.stopped'>;

/** How the last process ended, when that is the state the run is in (a kill -9 leaves no event). */
function endedOf(state: string, last: EndEvent | null): StatusReport['ended'] {
  if (!last || state === 'running' || state === 'not started') return null;
  const was =
    last.type === 'run.finished' ? last.data.outcome : last.type === 'run.stopped' ? 'stopped' : 'interrupted';
  return was === state ? { state: was, at: last.at } : null;
}

/** What a status knows beyond the checkpoint's run row and summary, each optional. */
export interface StatusSources {
  /** Thresholds set live (`shardmove control --breaker`, `--rule`, `--latency-p90`), with who and when. */
  thresholds?: ThresholdOverride[];
  lock?: LockView | null;
  /** The plan's `move.concurrency`, when the caller loaded the plan (the checkpoint does not keep it). */
  planConcurrency?: number | null;
  /** Whether the run's `move.concurrency` is `auto` (../runtime/status.ts planAutoOf). */
  planAuto?: boolean;
  cap?: CapView | null;
  failures?: FailedMove[];
  /** The run's last `run.finished`, `run.interrupted` or `run.stopped` event. */
  last?: EndEvent | null;
  /** The plan's schedule zone: a window's time as the progress line gives it (UTC when absent). */
  timezone?: string;
  /** What is known beyond the checkpoint's rows of where items with copies left behind live (./copies.ts). */
  copies?: CopyKnowledge;
  /** Notifications not delivered yet, per target. */
  notifications?: NotifyTargetView[];
  /** `run --only FILE`: the reviewed list the checkpoint was seeded from, as it was named. */
  givenList?: string | null;
  /** Items move.select no longer chose when their move was due (./left-selection.ts). */
  leftSelection?: { items: LeftSelectionItem[]; total: number };
  /** The fork networks the checkpoint knows (./networks.ts). */
  networks?: NetworksView;
  /** What the run's pace is computed from (./pace.ts paceOf); absent or null: no rate, no ETA. */
  pace?: Omit<PaceInput, 'now' | 'held' | 'remaining'> | null;
  /** The forward run's revert, if one ran. */
  revert?: RevertView | null;
}

/** Builds the status from what the checkpoint holds (pure); `lock` is the lock row with its liveness. */
export function buildStatusReport(
  checkpoint: string,
  saved: SavedRun | null,
  summary: StatusSummary,
  now: number,
  more: StatusSources = {},
): StatusReport {
  const { lock = null, planConcurrency = null, cap = null, failures = [], last = null } = more;
  const { timezone = 'UTC', copies = {}, notifications = [], givenList = null } = more;
  const { leftSelection = { items: [], total: 0 }, networks = NO_NETWORKS } = more;
  const snap = saved?.snapshot as { status?: string; value?: unknown; context?: RunContext } | undefined;
  const c = snap?.context;
  const ran = runState(snap, lock);
  // A run stopped on request is interrupted as far as its snapshot goes; its last event says more.
  const state = ran === 'interrupted' && !lock && last?.type === 'run.stopped' ? 'stopped' : ran;
  let step: string | null = c?.step ?? null;
  // The one schedule drains every source and kind at once; a drain per pair, one of them.
  if (c && c.step === 'drain' && snap?.status !== 'done')
    step =
      c.order === 'together'
        ? `drain ${c.sources.join(',')}/${c.kinds.join(',')}`
        : `drain ${c.sources[c.sourceIndex]}/${c.kinds[c.kindIndex]}`;
  const control = { ...(summary.control ?? NO_CONTROL), planConcurrency, planAuto: more.planAuto ?? false };
  // Live state only for a live run: a finished or interrupted one shows how it ended, not a rate.
  const running = state === 'running';
  const hold = running ? holdOf(cap, control, timezone) : null;
  const counts = countItems(summary);
  // The progress line's pace, from the same rows: one rate and one ETA everywhere.
  const held = hold?.stopped ?? false;
  const rate = more.pace
    ? paceOf({ ...more.pace, now, held, remaining: counts.remaining })
    : { perMinute: null, etaMs: etaOf(counts.remaining, null, held), remaining: counts.remaining };
  const view = copiesOf(summary, { destination: c?.destination ?? null, ...copies });
  return {
    checkpoint,
    plan: saved?.planName ?? null,
    // What the run of a reviewed list did, once done (see the field).
    listOutcome: givenList && state === 'done' ? listOutcome(givenList, summary.counts) : null,
    state,
    lock,
    step,
    dryRun: c?.dryRun ?? false,
    wouldRefuse: c?.dryRun ? (c.wouldRefuse ?? []) : [],
    error: c?.error ?? null,
    ended: endedOf(state, last),
    kinds: counts.kinds,
    bySource: counts.sources,
    counts: summary.counts,
    total: summary.total,
    movesPerMinute: Math.round((rate.perMinute ?? 0) * 10) / 10,
    etaMs: running && !hold?.stopped ? rate.etaMs : null,
    remaining: rate.remaining,
    staying: counts.staying,
    notSelected: counts.notSelected,
    boundsReached: counts.boundsReached,
    stuck: summary.stuck,
    failures,
    quarantined: summary.quarantined.map((q) => {
      const { class: cls, remedy, doc } = describeFailure(q.reason, c?.instanceVersion ?? null);
      return { ...q, class: cls, remedy, doc };
    }),
    orphans: view.left,
    liveCopies: view.live,
    placement: summary.placement ?? [],
    warnings: c?.warnings ?? [],
    notes: c?.notes ?? [],
    previousWeights: c?.previousWeights ?? null,
    control,
    thresholds: more.thresholds ?? [],
    cap: running ? cap : null,
    now: hold,
    auto: running && !hold ? autoCapOf(cap) : null,
    planAuto: more.planAuto ?? false,
    notifications,
    leftSelection,
    networks,
    verification: c?.verification
      ? {
          ok: c.verification.ok,
          says: verificationVerdict(c.verification, c.sources),
          stays: c.verification.stays ?? null,
        }
      : null,
    revert: more.revert ?? null,
  };
}

/** The forward run's revert in `status`'s words: when, its state, what went back where, what is still there. */
export function revertLines(v: RevertView | null): string[] {
  if (!v) return [];
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  const when = [
    v.startedAt !== null ? `started ${iso(v.startedAt)}` : null,
    v.endedAt !== null ? `ended ${iso(v.endedAt)}` : null,
  ]
    .filter((w) => w !== null)
    .join(', ');
  const lists = v.lists.length > 0 ? ` (revert --only ${v.lists.join(', ')})` : '';
  const lines = ['', `Reverted: a revert ran${lists}: ${v.state}${when ? `, ${when}` : ''}`];
  const moved = v.back.reduce((a, b) => a + b.n, 0);
  lines.push(
    `  ${moved} of the forward run's ${v.forwardItems} item(s) moved back${v.back.length > 0 ? ` (${v.back.map((b) => `${b.n} to ${b.storage}`).join(', ')})` : ''}`,
  );
  const still = [
    v.toMove > 0 ? `${v.toMove} still to move back` : null,
    v.quarantined > 0 ? `${v.quarantined} quarantined` : null,
    v.notTaken > 0 ? `${v.notTaken} not in the list` : null,
  ].filter((w) => w !== null);
  lines.push(
    `  ${v.stillThere} still on the destination${still.length > 0 ? ` (${still.join(', ')})` : ''}${v.skipped > 0 ? `; ${v.skipped} skipped (no longer where the forward run put them, or renamed since the list)` : ''}`,
  );
  lines.push(`  its checkpoint: ${v.file} (status --state ${v.file})`);
  return lines;
}

/** What holds the run now, in the progress line's words, with since when; then what to do, if anything. */
function describeNow(r: StatusReport, named: RunNamed | undefined): string[] {
  const h = r.now!;
  const c = r.cap;
  const sinceMs =
    h.by === 'stop'
      ? (r.control.stop?.at ?? r.control.updatedAt)
      : h.by === 'control' || h.by === 'breaker'
        ? r.control.updatedAt
        : h.by === 'rule' || h.by === 'capacity'
          ? (c?.since ?? c?.at)
          : c?.at;
  const since = sinceMs != null ? ` (since ${new Date(sinceMs).toISOString()})` : '';
  const step = h.by === 'stop' ? 'then `run` again continues it' : holdNextStep(h, c, named);
  const next = step ? [step.replace('"Failed moves" in status', '"Failed moves" below')] : [];
  return [`${h.full}${h.detail ? `: ${h.detail}` : ''}${since}`, ...next];
}

/**
 * The status as text for people; `named`: how the command named the plan and the checkpoint, so
 * that the control commands it prints are complete (a PLAN placeholder without).
 */
export function renderStatus(r: StatusReport, named?: RunNamed): string {
  const lines: string[] = [];
  const ended =
    r.ended && r.state !== 'interrupted' && r.state !== 'stopped'
      ? `, ended ${new Date(r.ended.at).toISOString()}`
      : '';
  // A run that ended is in no step any more (its snapshot's step is its final state); an
  // interrupted or stopped one is, and goes on from it.
  const inStep = r.ended?.state !== r.state || r.state === 'stopped';
  const step = r.step && r.step !== r.state && inStep ? `, step ${stepWords(r.step).full}` : '';
  lines.push(`Plan ${r.plan ?? '(unknown)'}${r.dryRun ? ' (dry run)' : ''}: ${r.state}${step}${ended}`);
  if (r.wouldRefuse.length > 0) lines.push('  a real run would be refused:', ...r.wouldRefuse.map((w) => `    - ${w}`));
  const l = r.lock;
  const at =
    r.ended?.state === 'interrupted' || r.ended?.state === 'stopped' ? ` at ${new Date(r.ended.at).toISOString()}` : '';
  // A revert's checkpoint (always `<forward>.revert.db`) is continued by `shardmove revert`, never by `run`.
  const again = r.checkpoint.endsWith('.revert.db')
    ? '`shardmove revert PLAN` (with the forward checkpoint) again to continue it'
    : '`run` again to continue';
  if (l && l.alive === true)
    lines.push(`  running as pid ${l.pid} on ${l.host} since ${new Date(l.startedAt).toISOString()}`);
  else if (l && l.alive === null)
    lines.push(
      `  locked by pid ${l.pid} on ${l.host} since ${new Date(l.startedAt).toISOString()} (another host: cannot tell from here whether it still runs)`,
    );
  else if (l)
    lines.push(`  interrupted: pid ${l.pid} on ${l.host} died holding the lock (killed or crashed); ${again}`);
  else if (r.state === 'interrupted') lines.push(`  interrupted${at}: no process is running it; ${again}`);
  else if (r.state === 'stopped') lines.push(`  stopped on request${at}: no process is running it; ${again}`);
  if (r.error) lines.push(`  failed at ${r.error.step}: ${r.error.message} (${r.error.code})`);
  if (r.now) lines.push(...describeNow(r, named).map((l, i) => `${i === 0 ? '  now: ' : '       '}${l}`));
  if (r.auto)
    lines.push(
      `  cap: ${r.auto.cap}, chosen by move.concurrency: auto: ${r.auto.reason}${r.cap ? ` (since ${new Date(r.cap.at).toISOString()})` : ''}`,
    );
  // The pause is the `now` line's while it runs; an override kept for a later run is said as such.
  if (r.control.concurrency !== null || (r.control.paused && !r.now))
    lines.push(
      `  control: ${r.now ? `cap ${r.control.concurrency}, set with shardmove control${r.control.planAuto ? " (the plan's is auto)" : r.control.planConcurrency === null ? '' : ` (the plan's is ${r.control.planConcurrency})`}` : describeInForce(r.control)}${r.state === 'running' ? '' : ' (kept in the checkpoint for its next run)'}`,
    );
  // Set live with shardmove control, in place of the plan's.
  for (const t of r.thresholds) lines.push(`  threshold: ${describeThresholdInForce(t)}`);
  // A stop that waits with no run going (its run lost the lock, or was killed): the next run obeys it.
  const stop = r.control.stop;
  if (stop && r.state !== 'running')
    lines.push(
      `  stop: asked for at ${new Date(stop.at).toISOString()} by ${stop.by === 'file' ? 'the stop file' : 'shardmove control --stop'}, not obeyed yet: the next run obeys it at once`,
    );
  const done = r.kinds.reduce((a, k) => a + k.done, 0);
  const skipped = r.kinds.reduce((a, k) => a + k.skipped, 0);
  const notMoved = skipped > 0 ? `, ${skipped} not moved (no longer where the list says)` : '';
  if (r.state !== 'running') lines.push(`  ${r.total} items known: ${done} done, ${r.remaining} remaining${notMoved}`);
  else
    lines.push(
      `  ${r.total} items known, ${r.remaining} remaining; ${r.movesPerMinute} moves/min over the last 10 minutes; ETA ${r.now?.stopped ? 'paused (nothing new is scheduled)' : r.etaMs === null ? `measuring (until ${MIN_MOVES_FOR_RATE} of this process's moves ended)` : formatApproxDuration(r.etaMs)}`,
    );
  if (r.staying > 0) {
    const bound = r.staying > r.notSelected ? [`move.until reached on ${listWords(r.boundsReached)}`] : [];
    const chosen = r.notSelected > 0 ? [`${r.notSelected} not selected by move.select`] : [];
    lines.push(`  ${r.staying} stay on the sources as planned (${[...bound, ...chosen].join('; ')})`);
  }
  if (r.kinds.length > 0) {
    lines.push('', 'By kind:');
    for (const k of r.kinds) {
      lines.push(
        `  ${k.kind.padEnd(9)} ${k.done}/${k.total} done, ${k.inFlight} in flight, ${k.waiting} waiting (${k.retrying} failed, retrying), ${k.quarantined} quarantined${k.staying > 0 ? `, ${k.staying} staying` : ''}${k.skipped > 0 ? `, ${k.skipped} not moved (no longer where the list says)` : ''}`,
      );
    }
    lines.push('', 'By kind, storage and state:');
    for (const c of [...r.counts].sort((a, b) =>
      `${a.kind}${a.source}${a.state}`.localeCompare(`${b.kind}${b.source}${b.state}`),
    )) {
      const s = c.state === 'pending' ? r.bySource.find((b) => b.kind === c.kind && b.source === c.source) : null;
      const bound = s ? s.staying - s.notSelected : 0;
      lines.push(
        `  ${c.kind.padEnd(9)} ${c.source.padEnd(12)} ${c.state.padEnd(12)} ${c.n}${bound > 0 ? ` (${bound} staying: move.until)` : ''}`,
      );
    }
  }
  lines.push(...leftSelectionLines(r.leftSelection));
  lines.push(...revertLines(r.revert));
  if (r.verification) {
    lines.push('', `Verification: ${r.verification.says}`);
    lines.push(
      ...staysLines(r.verification.stays ?? undefined, STAYS_SHOWN, '`status --json`, under verification.stays'),
    );
  }
  if (r.stuck.length > 0) {
    lines.push('', `Stuck (${r.stuck.length}):`);
    for (const s of r.stuck)
      lines.push(
        `  ${s.kind} ${s.id}: move ${s.moveId} ${s.moveState}${s.readOnly === null ? '' : s.readOnly ? ', read-only' : ', writable'}`,
      );
  }
  lines.push(...failedMoveLines(r.failures));
  if (r.quarantined.length > 0) {
    lines.push('', `Quarantined (${r.quarantined.length}):`);
    for (const q of r.quarantined) {
      lines.push(`  ${q.kind} ${q.id} ${q.name} on ${q.source} after ${q.attempts} attempt(s): ${q.reason}`);
      lines.push(`    ${q.class}: ${q.remedy} (${q.doc})`);
    }
  }
  if (r.notifications.length > 0) {
    lines.push('', `Notifications not delivered (${countWaiting(r.notifications)}):`);
    lines.push(...waitingLines(r.notifications, r.state === 'running'));
  }
  lines.push(...placementLines(r.placement, r.dryRun));
  lines.push(...networkLines(r.networks, { more: 'status --json lists every one, --json --items their members' }));
  lines.push(...copiesLines({ left: r.orphans, live: r.liveCopies }));
  if (r.notes.length > 0) lines.push('', 'Room (checked by pre-flight):', ...r.notes.map((n) => `  ${n}`));
  if (r.warnings.length > 0) {
    lines.push('', `Warnings (${r.warnings.length}):`);
    for (const w of r.warnings) lines.push(`  - ${w}`);
  }
  lines.push('', `Checkpoint: ${r.checkpoint}`);
  return `${lines.join('\n')}\n`;
}
