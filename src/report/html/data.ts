/**
 * Everything the HTML report shows, as one plain object (also what `report --json` prints), built
 * from what the checkpoint holds: the status (./../status.ts), the machine's saved context and the
 * event log. Pure: the caller reads the checkpoint and passes the time.
 */
import { describeThresholdEvent } from '../threshold-words.js';
import { migrationSpan } from '../span.js';
import type { RunContext, VerifyOutput } from '../../machine/types.js';
import type { StoredGeoOutput } from '../geo-output.js';
import type { Kind } from '../../plan/types.js';
import { describeRule } from '../../schedule/rules.js';
import type { StoredEvent } from '../../store/types.js';
import { isMoveEvent, MoveLedger, spanSeconds } from '../moves.js';
import type { MoveSpan } from '../moves.js';
import type { RevertView, StatusReport } from '../status.js';
import { partialOutcome } from '../counts.js';
import { notInTheList } from '../stays.js';
import { IdleSlotsReader } from '../idle-slots.js';
import { autoCapOf } from '../../events/hold.js';

/** One sample of the timeline, at the end of its bucket. */
export interface TimelinePoint {
  /** Seconds since the timeline's start. */
  t: number;
  /** Moves started and not yet seen to end. */
  inFlight: number;
  /** Moves that ended on the destination per minute, over the last few buckets. */
  finishedPerMin: number;
  /** Moves that failed (or were given up as stuck) per minute, over the last few buckets. */
  failedPerMin: number;
  /** The cap in force (null while the plan's cap is unknown and no override was set). */
  cap: number | null;
  paused: boolean;
}

/** Something worth a mark on the timeline. */
export interface TimelineMarker {
  /** Seconds since the timeline's start. */
  t: number;
  at: number;
  type:
    | 'run.started'
    | 'run.resumed'
    | 'run.interrupted'
    | 'run.finished'
    | 'paused'
    | 'unpaused'
    | 'cap'
    | 'step'
    /** A throttle rule started or stopped holding the run. */
    | 'hold'
    /** Prometheus could not answer a rule, or answers again. */
    | 'outage'
    | 'breaker'
    /** A maintenance window opened or closed. */
    | 'window'
    /** A source's `move.until` bound was reached. */
    | 'bound';
  label: string;
}

/**
 * Idle slots: how much of the run had fewer moves held than the cap while an item was
 * due (../idle-slots.ts), and the drains that are not pipelined, whose slots empty between them and
 * the next drain by design.
 */
export interface IdleNote {
  share: number;
  idleSeconds: number;
  /** Drains in bulk mode or by move records, as `source/kind (mode)`. */
  unpipelined: string[];
}

/** Items by state, as the per-kind and per-storage tables count them. */
interface ItemTally {
  total: number;
  moved: number;
  left: number;
  quarantined: number;
  waiting: number;
  inFlight: number;
  /** Left on the source as planned (a reached `move.until` bound; ../counts.ts), not among `waiting`. */
  staying: number;
}

export interface KindRow extends ItemTally {
  kind: Kind;
  /** Moves of ours that ended, by how. */
  movesFinished: number;
  movesFailed: number;
  /** Failed attempts that were retried (`item.retry` events). */
  retries: number;
  /** Seconds, over the moves that ended on the destination and whose start is known. */
  medianSeconds: number | null;
  p95Seconds: number | null;
  maxSeconds: number | null;
}

export interface StorageRow extends ItemTally {
  storage: string;
}

export interface ReportData {
  generatedAt: number;
  checkpoint: string;
  plan: string | null;
  /** The plan file as the report command was given it, for the commands the report prints (null: not known, shown as PLAN). */
  planFile: string | null;
  outcome: {
    /** running, interrupted, done, doneWithQuarantine, failed, not started (as `status`). */
    state: string;
    headline: string;
    step: string | null;
    dryRun: boolean;
    error: RunContext['error'];
    /** The migration's first start (its first process's `run.started`). */
    startedAt: number | null;
    /** When the last event was written (the end, for a run that ended). */
    lastEventAt: number | null;
    /** The time some process was running it, summed over its processes (../span.ts), beside the wall time. */
    activeMs: number;
    /** How many processes ran it. */
    processes: number;
    instanceVersion: string | null;
    total: number;
    remaining: number;
    /** Left on the sources as planned (move.until, or not selected): neither remaining nor failed. */
    staying: number;
    /** Of `staying`: not chosen by `move.select`. */
    notSelected: number;
    movesPerMinute: number;
    /** Moves that ended on the destination per minute of active time (every process, from the first start). */
    averagePerMinute: number | null;
    etaMs: number | null;
  };
  timeline: {
    start: number;
    bucketSeconds: number;
    points: TimelinePoint[];
    markers: TimelineMarker[];
    idle: IdleNote;
  };
  durations: {
    binSeconds: number;
    /** Lower edges in seconds. */ bins: number[];
    byKind: Partial<Record<Kind, number[]>>;
  };
  kinds: KindRow[];
  storages: StorageRow[];
  quarantined: StatusReport['quarantined'];
  /**
   * Copies left behind, to remove once checked (../copies.ts): on the storage a moved item left, or
   * on the destination of a failed move, with their paths and where the item lives.
   */
  orphans: StatusReport['orphans'];
  /** Copies that would be listed but are on the storage their item lives on now: never to remove. */
  liveCopies?: StatusReport['liveCopies'];
  /** Items and bytes per destination (many destinations); empty when nothing was placed per item. */
  placement: StatusReport['placement'];
  /** The fork networks on the sources, each with its members (../networks.ts). */
  networks?: StatusReport['networks'];
  stuck: StatusReport['stuck'];
  weights: { before: Record<string, number> | null; after: Record<string, number> | null; written: boolean };
  /** `sources`: the run's sources, which a verification that found nothing says are empty. */
  verification: { planned: boolean; result: VerifyOutput | null; sources: string[] };
  geo: { planned: boolean; result: StoredGeoOutput | null };
  warnings: string[];
  control: StatusReport['control'];
  /** A revert's checkpoint: the forward run's checkpoint it moves items back for (null: a forward run). */
  revertOf?: string | null;
  /** A forward run's revert, when one ran beside its checkpoint (../status.ts RevertView); absent or null: none. */
  revert?: RevertView | null;
}

const HEADLINES: Record<string, string> = {
  done: 'Done: every repository moved and verified',
  doneWithQuarantine: 'Done with quarantined items: everything else moved and verified',
  failed: 'Failed',
  running: 'Running',
  interrupted: 'Interrupted: run the plan again to continue',
  stopped: 'Stopped on request: run the plan again to continue',
  'not started': 'Not started',
};
/** A revert's checkpoint (`shardmove revert`): the states that differ from a drain's. */
const REVERT_HEADLINES: Record<string, string> = {
  ...HEADLINES,
  done: 'Reverted: every item the run moved is back where it came from, verified',
  doneWithQuarantine: 'Reverted with quarantined items: everything else is back where it came from, verified',
  failed: 'Revert failed',
  interrupted: 'Interrupted: run the revert again to continue',
  stopped: 'Stopped on request: run the revert again to continue',
};
const DONE_STATES = new Set(['moved', 'left']);
const IN_FLIGHT_STATES = new Set(['scheduling', 'in_flight']);
/** At most this many points on the timeline, whatever the run's length. */
const MAX_POINTS = 150;
const BIN_TARGET = 20;
/** Throughput is counted over this many buckets (a trailing window). */
const SMOOTH_BUCKETS = 4;

/**
 * What held or stopped the run, as a line of the event table: a rule that holds or lets go, a
 * Prometheus that cannot answer or answers again, the failure breaker, a window that closes or
 * opens, the throttle's cap, a bound reached. A rule still pending (its `for` not over) is not one.
 */
function holdMarker(e: StoredEvent): Omit<TimelineMarker, 't'> | null {
  switch (e.type) {
    case 'rule.changed': {
      const r = e.data;
      if (r.status === 'error') return { at: e.at, type: 'outage', label: `Prometheus unreadable: ${describeRule(r)}` };
      if (r.status === 'holding') return { at: e.at, type: 'hold', label: `held by ${describeRule(r)}` };
      if (r.status === 'ok' && r.previous === 'error')
        return { at: e.at, type: 'outage', label: `Prometheus answers again: rule ${r.rule}` };
      if (r.status === 'ok' && r.previous === 'holding')
        return { at: e.at, type: 'hold', label: `rule ${r.rule} no longer holds` };
      return null;
    }
    case 'breaker.tripped': {
      const b = e.data;
      return { at: e.at, type: 'breaker', label: `failure breaker tripped: ${b.reason}` };
    }
    case 'window.opened':
    case 'window.closed': {
      const w = e.data;
      const open = e.type === 'window.opened';
      return {
        at: e.at,
        type: 'window',
        label: open
          ? `maintenance window opened${w.window ? ` (${w.window})` : ''}`
          : `maintenance window closed${w.nextOpensAt != null ? `; the next opens ${new Date(w.nextOpensAt).toISOString()}` : ''}`,
      };
    }
    case 'throttle.cap': {
      const t = e.data;
      return {
        at: e.at,
        type: 'cap',
        label: `throttle: cap ${t.cap} of ${t.ceiling}${t.reason ? ` (${t.reason})` : ''}`,
      };
    }
    case 'drain.until_reached': {
      const u = e.data;
      return { at: e.at, type: 'bound', label: `move.until reached on ${u.source}: nothing more is scheduled from it` };
    }
    default:
      return null;
  }
}

/** The outcome in one line, as the final summary words it: a partial drain says how far it went. */
function headlineOf(status: StatusReport, c: RunContext | null, revertOf: string | null): string {
  if (c?.dryRun && status.state !== 'running') return `Dry run: ${status.state} (nothing was changed on the instance)`;
  const notListed = revertOf ? notInTheList(c?.verification) : 0;
  if (notListed > 0 && (status.state === 'done' || status.state === 'doneWithQuarantine'))
    return `Reverted${status.state === 'doneWithQuarantine' ? ' with quarantined items' : ''} except ${notListed} not in the list: ${notListed} item(s) stay on the destination; everything else the revert took is back where it came from, verified`;
  const fixed = (revertOf ? REVERT_HEADLINES : HEADLINES)[status.state] ?? status.state;
  if (revertOf || (status.state !== 'done' && status.state !== 'doneWithQuarantine')) return fixed;
  if (status.state === 'done' && status.listOutcome)
    return `Done: ${status.listOutcome}${c?.verify === false ? ', not verified (plan: verify false)' : ' and verified'}`;
  const done = status.kinds.reduce((a, k) => a + k.done, 0);
  const partial = partialOutcome({ ...status, done, sources: status.bySource });
  if (!partial) return fixed;
  const quarantined = status.quarantined.length;
  return status.state === 'done'
    ? `Done: ${partial}`
    : `Done with quarantined items: ${partial}; ${quarantined} quarantined`;
}

/** 1, 2 or 5 times a power of ten, at least `x`. */
export function niceStep(x: number): number {
  if (!(x > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

function quantile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

/** The cap in force from a moment on (the run's `cap.changed` events). */
interface CapPoint {
  at: number;
  cap: number;
  paused: boolean;
}

export interface ReportInput {
  status: StatusReport;
  context: RunContext | null;
  /** The whole event log, oldest first (any iterable: the caller may page through the store). */
  events: Iterable<StoredEvent>;
  now: number;
  /** The plan file as the operator named it (the report command's argument); null when not known. */
  planFile?: string | null;
}

/** Moves per minute of `activeMs`, one decimal; null when no time is known. */
function perActiveMinute(moves: number, activeMs: number): number | null {
  return activeMs > 0 ? Math.round((moves / (activeMs / 60_000)) * 10) / 10 : null;
}

/** Builds the report's data (pure). */
export function buildReportData(input: ReportInput): ReportData {
  const { status, context: c, now } = input;
  const ledger = new MoveLedger();
  const caps: CapPoint[] = [];
  const rawMarkers: Omit<TimelineMarker, 't'>[] = [];
  const retries = new Map<string, number>();
  const unpipelined: string[] = [];
  let first: number | null = null;
  let last: number | null = null;
  let revertOf: string | null = null;
  const idleReader = new IdleSlotsReader();
  // The run's own starts and ends, with the last event before each start (a killed process ends there).
  const spanEvents: Pick<StoredEvent, 'at' | 'type'>[] = [];
  for (const e of input.events) {
    idleReader.add(e);
    if (e.type === 'run.started' && last !== null) spanEvents.push({ at: last, type: 'step.started' });
    if (
      e.type === 'run.started' ||
      e.type === 'run.finished' ||
      e.type === 'run.interrupted' ||
      e.type === 'run.stopped'
    )
      spanEvents.push(e);
    first ??= e.at;
    last = e.at;
    if (isMoveEvent(e)) {
      ledger.add(e);
      continue;
    }
    switch (e.type) {
      case 'item.retry':
        retries.set(e.data.kind, (retries.get(e.data.kind) ?? 0) + 1);
        break;
      case 'control.changed': {
        const prev = e.data.previous;
        const next = { concurrency: e.data.concurrency, paused: e.data.paused };
        if (next.paused !== prev.paused)
          rawMarkers.push({
            at: e.at,
            type: next.paused ? 'paused' : 'unpaused',
            label: next.paused ? (e.data.pausedBy ? `paused: ${e.data.pausedBy}` : 'paused') : 'unpaused',
          });
        if (next.concurrency !== prev.concurrency) {
          rawMarkers.push({
            at: e.at,
            type: 'cap',
            label: next.concurrency === null ? "cap back to the plan's" : `cap ${next.concurrency}`,
          });
        }
        break;
      }
      case 'threshold.changed':
        rawMarkers.push({ at: e.at, type: 'cap', label: describeThresholdEvent(e.data) });
        break;
      case 'cap.changed': {
        caps.push({ at: e.at, cap: e.data.cap, paused: e.data.paused });
        // The limiter of move.concurrency: auto says each of its changes, with its reason.
        const auto = autoCapOf(e.data);
        if (auto) rawMarkers.push({ at: e.at, type: 'cap', label: `cap ${auto.cap} (auto): ${auto.reason}` });
        break;
      }
      case 'run.started':
        rawMarkers.push({
          at: e.at,
          type: e.data.resumed ? 'run.resumed' : 'run.started',
          label: e.data.dryRun ? 'dry run started' : e.data.resumed ? 'run resumed' : 'run started',
        });
        break;
      case 'run.interrupted':
        rawMarkers.push({ at: e.at, type: 'run.interrupted', label: 'interrupted' });
        break;
      // A stop from outside: marked where it was asked for, and where the run ended on it.
      case 'run.stopping':
        rawMarkers.push({
          at: e.at,
          type: 'hold',
          label: `stopping (${e.data.by === 'file' ? 'the stop file' : 'shardmove control --stop'})`,
        });
        break;
      case 'run.stopped':
        rawMarkers.push({ at: e.at, type: 'run.interrupted', label: 'stopped on request' });
        break;
      case 'run.finished':
        rawMarkers.push({ at: e.at, type: 'run.finished', label: `finished: ${e.data.outcome}` });
        break;
      case 'step.started':
        rawMarkers.push({ at: e.at, type: 'step', label: e.data.step });
        break;
      case 'rule.changed':
      case 'breaker.tripped':
      case 'window.opened':
      case 'window.closed':
      case 'throttle.cap':
      case 'drain.until_reached': {
        const m = holdMarker(e);
        if (m) rawMarkers.push(m);
        break;
      }
      case 'revert.seeded':
        revertOf = e.data.forward;
        break;
      case 'drain.started': {
        const name = `${e.data.source}/${e.data.kind} (${e.data.mode === 'records' ? 'by move records' : e.data.mode})`;
        if (e.data.mode !== 'throttled' && !unpipelined.includes(name)) unpipelined.push(name);
        break;
      }
      default:
    }
  }
  const spans = ledger.spans();
  if (last !== null) spanEvents.push({ at: last, type: 'step.started' });
  const span = migrationSpan(spanEvents, now, status.state === 'running' ? now : null);
  // From the first process's start: a checkpoint whose machine started over keeps an older start in its log.
  const startedAt = span.startedAt ?? c?.startedAt ?? first;
  const start = startedAt ?? now;
  const end = status.state === 'running' ? now : (last ?? now);
  const timeline = buildTimeline(spans, caps, start, Math.max(end, start + 1000));
  const markers = rawMarkers.map((m) => ({ ...m, t: (m.at - start) / 1000 }));
  const idle = idleReader.result();
  return {
    generatedAt: now,
    checkpoint: status.checkpoint,
    plan: status.plan,
    planFile: input.planFile ?? null,
    outcome: {
      state: status.state,
      headline: headlineOf(status, c, revertOf),
      step: status.step,
      dryRun: status.dryRun,
      error: status.error,
      startedAt,
      lastEventAt: last,
      activeMs: span.activeMs,
      processes: span.processes,
      instanceVersion: c?.instanceVersion ?? null,
      total: status.total,
      remaining: status.remaining,
      staying: status.staying,
      notSelected: status.notSelected,
      movesPerMinute: status.movesPerMinute,
      averagePerMinute: perActiveMinute(
        spans.filter((x) => x.end === 'finished' || x.end === 'cleanup_failed').length,
        span.processes > 0 ? span.activeMs : last !== null ? last - start : 0,
      ),
      etaMs: status.etaMs,
    },
    timeline: {
      start,
      bucketSeconds: timeline.bucketMs / 1000,
      points: timeline.points,
      markers,
      idle: { share: idle.share, idleSeconds: idle.idleMs / 1000, unpipelined },
    },
    durations: durationHistogram(spans),
    kinds: kindRows(status, spans, retries),
    storages: storageRows(status),
    quarantined: status.quarantined,
    orphans: status.orphans,
    liveCopies: status.liveCopies,
    placement: status.placement,
    networks: status.networks,
    stuck: status.stuck,
    weights: { before: c?.previousWeights ?? null, after: c?.newWeights ?? null, written: c?.weightsWritten ?? false },
    verification: { planned: c?.verify ?? true, result: c?.verification ?? null, sources: c?.sources ?? [] },
    geo: { planned: c?.geoResync ?? false, result: c?.geo ?? null },
    warnings: status.warnings,
    control: status.control,
    revertOf,
    revert: status.revert,
  };
}

/** Moves in flight sampled at each bucket's end, ends per minute within each bucket, the cap in force. */
function buildTimeline(
  spans: MoveSpan[],
  caps: CapPoint[],
  start: number,
  end: number,
): { bucketMs: number; points: TimelinePoint[] } {
  const bucketMs = Math.max(250, niceStep((end - start) / MAX_POINTS));
  const n = Math.max(1, Math.ceil((end - start) / bucketMs));
  const delta = new Array<number>(n + 1).fill(0);
  const finished = new Array<number>(n).fill(0);
  const failed = new Array<number>(n).fill(0);
  // A move counts in flight at a bucket's end when it started at or before it and had not ended.
  const bucketOf = (at: number) => Math.min(n - 1, Math.max(0, Math.ceil((at - start) / bucketMs) - 1));
  for (const s of spans) {
    if (s.startAt !== null) delta[bucketOf(s.startAt)]! += 1;
    if (s.endAt !== null) {
      if (s.startAt !== null) delta[bucketOf(s.endAt)]! -= 1;
      if (s.end === 'finished' || s.end === 'cleanup_failed') finished[bucketOf(s.endAt)]! += 1;
      else failed[bucketOf(s.endAt)]! += 1;
    }
  }
  // Throughput over a trailing window of a few buckets: one bucket's count is too spiky to read.
  const window = Math.min(SMOOTH_BUCKETS, n);
  const perMin = 60_000 / (bucketMs * window);
  const trailing = (a: number[], i: number) => {
    let sum = 0;
    for (let j = Math.max(0, i - window + 1); j <= i; j++) sum += a[j]!;
    return sum;
  };
  const points: TimelinePoint[] = [];
  let inFlight = 0;
  let ci = 0;
  // Before the run recorded its first cap, the cap is unknown (no drain had looked).
  let cur: { cap: number | null; paused: boolean } = { cap: null, paused: false };
  for (let i = 0; i < n; i++) {
    const at = start + (i + 1) * bucketMs;
    inFlight += delta[i]!;
    while (ci < caps.length && caps[ci]!.at <= at) cur = caps[ci++]!;
    points.push({
      t: ((i + 1) * bucketMs) / 1000,
      inFlight,
      finishedPerMin: trailing(finished, i) * perMin,
      failedPerMin: trailing(failed, i) * perMin,
      cap: cur.cap,
      paused: cur.paused,
    });
  }
  return { bucketMs, points };
}

function durationHistogram(spans: MoveSpan[]): ReportData['durations'] {
  const byKind = new Map<Kind, number[]>();
  let max = 0;
  for (const s of spans) {
    const sec = spanSeconds(s);
    if (sec === null) continue;
    max = Math.max(max, sec);
    let list = byKind.get(s.kind);
    if (!list) byKind.set(s.kind, (list = []));
    list.push(sec);
  }
  const binSeconds = niceStep(max / BIN_TARGET);
  const count = Math.max(1, Math.floor(max / binSeconds) + 1);
  const bins = Array.from({ length: count }, (_, i) => i * binSeconds);
  const out: Partial<Record<Kind, number[]>> = {};
  for (const [kind, list] of byKind) {
    const counts = new Array<number>(count).fill(0);
    for (const sec of list) counts[Math.min(count - 1, Math.floor(sec / binSeconds))]! += 1;
    out[kind] = counts;
  }
  return { binSeconds, bins, byKind: out };
}

function kindRows(status: StatusReport, spans: MoveSpan[], retries: Map<string, number>): KindRow[] {
  const kinds = [...new Set(status.counts.map((c) => c.kind))];
  return kinds.map((kind) => {
    const counts = status.counts.filter((c) => c.kind === kind);
    const own = spans.filter((s) => s.kind === kind);
    const ok = own.filter((s) => s.end === 'finished' || s.end === 'cleanup_failed');
    const secs = ok
      .map(spanSeconds)
      .filter((x): x is number => x !== null)
      .sort((a, b) => a - b);
    return {
      kind,
      ...tally(counts, status.kinds.find((k) => k.kind === kind)?.staying ?? 0),
      movesFinished: ok.length,
      movesFailed: own.filter((s) => s.end === 'failed' || s.end === 'stuck').length,
      retries: retries.get(kind) ?? 0,
      medianSeconds: quantile(secs, 0.5),
      p95Seconds: quantile(secs, 0.95),
      maxSeconds: secs.length > 0 ? (secs[secs.length - 1] as number) : null,
    };
  });
}

function storageRows(status: StatusReport): StorageRow[] {
  const sources = [...new Set(status.counts.map((c) => c.source))].sort((x, y) => x.localeCompare(y));
  return sources.map((storage) => ({
    storage,
    ...tally(
      status.counts.filter((c) => c.source === storage),
      status.bySource.filter((b) => b.source === storage).reduce((a, b) => a + b.staying, 0),
    ),
  }));
}

/** Items by state over some of the checkpoint's (kind, source, state) counts, `staying` of them taken out of waiting. */
function tally(counts: readonly { state: string; n: number }[], staying: number): ItemTally {
  const t: ItemTally = { total: 0, moved: 0, left: 0, quarantined: 0, waiting: 0, inFlight: 0, staying };
  for (const c of counts) {
    t.total += c.n;
    if (c.state === 'moved') t.moved += c.n;
    else if (c.state === 'left') t.left += c.n;
    else if (c.state === 'quarantined') t.quarantined += c.n;
    else if (IN_FLIGHT_STATES.has(c.state)) t.inFlight += c.n;
    else if (!DONE_STATES.has(c.state)) t.waiting += c.n;
  }
  t.waiting -= staying;
  return t;
}
