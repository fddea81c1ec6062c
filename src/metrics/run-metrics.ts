/**
 * The run's Prometheus metrics, on a private prom-client Registry (never the global one: a library
 * must not add to its host's default registry). Gauges are set from the checkpoint's summary;
 * counters and the duration histogram are fed from the event log (moves that ended since this
 * process started), requests from the HTTP client's responses. Counters start at 0 in every
 * process, as Prometheus expects of a restarted target (`rate()` handles the reset).
 *
 * Every series carries a `plan` label: node_exporter's textfile collector merges every `.prom` file of
 * its folder into one scrape and fails the whole gather on two identical series, so two runs' files in
 * one folder must differ in their labels. Series are written only once they have a value (an empty
 * family would say nothing), and the live ones (remaining, ETA, in flight, cap, paused, last poll,
 * heartbeat) go away when the run ends, replaced by `shardmove_run_end_timestamp_seconds` with the
 * outcome: a finished run's file must not look like a run that stalled.
 */
import type { CapData } from '../events/vocabulary.js';
import type { Hold, HoldBy } from '../events/hold.js';
import { HOLDERS, holdOf } from '../events/hold.js';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RequestEvent } from '../api/client.js';
import type { MoveSpan } from '../report/moves.js';
import { spanFailureClass, spanSeconds } from '../report/moves.js';
import { etaOf, remainingOf } from '../report/pace.js';
import type { Pace } from '../report/pace.js';
import { ITEM_STATES } from '../store/types.js';
import type { StatusSummary } from '../store/types.js';

/** From a quarter of a second (the sandbox) to six hours (a large repository on a busy Gitaly). */
export const MOVE_DURATION_BUCKETS = [0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600];

/**
 * How a run ended in this process: its final state (done, done with quarantined items, failed),
 * interrupted (SIGINT/SIGTERM, the checkpoint saved), stopped on request (`control --stop`, the stop
 * file: the moves in flight ended first), or an error without any of those (the run lock lost to
 * another runner, an internal error).
 */
export const RUN_OUTCOMES = ['done', 'done_with_quarantine', 'failed', 'interrupted', 'stopped', 'error'] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

/** What one refresh of the gauges needs. */
export interface GaugeInput {
  summary: StatusSummary;
  /** The cap in force the run recorded last (null: no drain has looked yet). */
  cap: CapData | null;
  /** The run's pace (../report/pace.ts), the progress line's; absent: nothing measured (an ETA only when nothing remains). */
  pace?: Pace;
  step: string;
  dryRun: boolean;
  startedAt: number;
  /** The migration's first start (every process of it; ../report/span.ts); absent: this process's start. */
  migrationStartedAt?: number;
  /** The time some process was running the migration, this one included (ms). */
  activeMs?: number;
  /** What verification found still on the sources, per source and why; absent or null before it ran. */
  stays?: { source: string; why: string; n: number }[] | null;
  /** Now (ms since epoch): the heartbeat. */
  now: number;
  /**
   * The copies left behind to remove once checked (../report/copies.ts): never a copy on the
   * storage its item lives on now. Absent: the series is not written.
   */
  copies?: readonly { source: string; side: 'source' | 'destination' }[];
  /** The plan's sources and destinations: each has a copies series from the start, 0 until a copy is left there. */
  storages?: { sources: readonly string[]; destinations: readonly string[] };
  /**
   * What holds the run now (../events/hold.ts), the progress line's; absent: only the operator's
   * pause in the summary's control row is known.
   */
  hold?: Hold | null;
}

/**
 * The holds that count as paused: nothing new is scheduled until someone or something lets the run
 * go (an operator, the breaker, a rule, a destination's room, the throttle, a bulk job's queue, a
 * stop). Waiting for a maintenance window is the plan working, and is only `shardmove_held`'s.
 */
const PAUSING: ReadonlySet<HoldBy> = new Set<HoldBy>([
  'control',
  'breaker',
  'rule',
  'capacity',
  'throttle',
  'queue',
  'ratelimit',
  'outage',
  'stop',
]);

/**
 * Every series' `# HELP` text, by metric name: what a scrape says each one means.
 */
const HELP = {
  shardmove_items: 'Items known to the run, by kind, source storage and item state.',
  shardmove_moves_in_flight:
    'Moves scheduled or in flight (what the concurrency cap counts); absent once the run ended.',
  shardmove_concurrency_cap:
    "The cap in force: moves allowed in flight (the operator's cap, lowered by maintenance windows and the throttle); NaN until the first drain looked; absent once the run ended.",
  shardmove_paused:
    '1 while nothing new is scheduled because the run is paused or held (`shardmove control --pause`, the failure breaker, a throttle rule, no room on a destination, the throttle, a bulk job waiting in Sidekiq, the rate limit, an instance that does not answer, a stop), else 0; not for a maintenance window; absent once the run ended.',
  shardmove_held:
    'Per holder (`by`: control, breaker, rule, capacity, window, throttle, queue, ratelimit, outage: the instance does not answer, stop), 1 while it holds the run (nothing new starts), else 0; absent once the run ended.',
  shardmove_eta_seconds:
    "Estimated seconds until every remaining item is moved, at this process's rate over the last 10 minutes (the progress line's: moves inherited from an earlier process do not count); NaN when unknown (measuring, or held); absent once the run ended.",
  shardmove_items_remaining:
    'Items still to move: neither moved, quarantined, nor left on the source as planned (move.until reached, or not selected by move.select); absent once the run ended.',
  shardmove_last_successful_poll_timestamp_seconds:
    'When a poll of the storage moves last succeeded (Unix time); absent before the first one and once the run ended.',
  shardmove_heartbeat_timestamp_seconds:
    'When this process last rewrote the file while running the plan (at least every 30 s; Unix time); absent once the run ended.',
  shardmove_run_start_timestamp_seconds: 'When this process started running the plan (Unix time).',
  shardmove_migration_start_timestamp_seconds:
    'When the migration first started: the first process of its checkpoint (Unix time).',
  shardmove_migration_active_seconds:
    'The time some process was running the migration, summed over every process of its checkpoint, this one included.',
  shardmove_items_staying:
    'Items verification found still on a source at the end, by why they stay: quarantined, not in the list (run --only), not selected (move.select), move.until; absent before verification.',
  shardmove_run_end_timestamp_seconds:
    'When the run ended in this process (Unix time), and how: done, done_with_quarantine, failed, interrupted, stopped (on request), error; absent while it runs.',
  shardmove_run_info:
    'Always 1; the labels name the step the run is in (its final state once it ended), and whether it is a dry run.',
  shardmove_copies_left_behind:
    'Repository copies a move of the run left behind, to remove once checked, by the storage they are on and side (source: the storage a moved item left; destination: where a failed move was copying it); never a copy on the storage its item lives on now (that copy is the repository).',
  shardmove_moves_finished_total:
    'Moves that ended with the repository on the destination (finished, or cleanup failed), by kind.',
  shardmove_moves_failed_total:
    'Moves that failed (state failed) or were given up as stuck, by kind and failure class (docs/failures.md).',
  shardmove_move_duration_seconds:
    "How long moves took, from the POST's answer to the poll that saw them end, by kind.",
  shardmove_http_requests_total:
    'HTTP attempts to the instance, by method and response status ("error" when no response came).',
} as const;

/** A metric the run writes. */
type MetricName = keyof typeof HELP;

export class RunMetrics {
  readonly registry = new Registry();
  private endedAt: number | null = null;
  private readonly items = this.gauge('shardmove_items', ['kind', 'storage', 'state']);
  private readonly inFlight = this.gauge('shardmove_moves_in_flight');
  private readonly cap = this.gauge('shardmove_concurrency_cap');
  private readonly paused = this.gauge('shardmove_paused');
  private readonly held = this.gauge('shardmove_held', ['by']);
  private readonly eta = this.gauge('shardmove_eta_seconds');
  private readonly remaining = this.gauge('shardmove_items_remaining');
  private readonly lastPoll = this.gauge('shardmove_last_successful_poll_timestamp_seconds');
  private readonly heartbeat = this.gauge('shardmove_heartbeat_timestamp_seconds');
  private readonly started = this.gauge('shardmove_run_start_timestamp_seconds');
  private readonly migrationStarted = this.gauge('shardmove_migration_start_timestamp_seconds');
  private readonly migrationActive = this.gauge('shardmove_migration_active_seconds');
  private readonly staying = this.gauge('shardmove_items_staying', ['storage', 'why']);
  private readonly ended = this.gauge('shardmove_run_end_timestamp_seconds', ['outcome']);
  private readonly info = this.gauge('shardmove_run_info', ['step', 'dry_run']);
  private readonly copies = this.gauge('shardmove_copies_left_behind', ['storage', 'side']);
  private readonly finished = this.counter('shardmove_moves_finished_total', ['kind', 'outcome']);
  private readonly failed = this.counter('shardmove_moves_failed_total', ['kind', 'outcome', 'class']);
  private readonly duration = new Histogram({
    ...this.options('shardmove_move_duration_seconds', ['kind']),
    buckets: MOVE_DURATION_BUCKETS,
  });
  private readonly requests = this.counter('shardmove_http_requests_total', ['method', 'status']);

  /** The (storage, side) pairs the copies series has had, by `storage\u0000side`. */
  private readonly copySeries = new Map<string, { storage: string; side: string }>();

  /** `plan` is the plan's name, the label every series carries. */
  constructor(readonly plan: string) {}

  /** What every series is declared with: its help, the `plan` label first, this registry. */
  private options<L extends string>(name: MetricName, labelNames: readonly L[]) {
    return {
      name,
      help: HELP[name],
      labelNames: ['plan', ...labelNames] as (L | 'plan')[],
      registers: [this.registry],
    };
  }

  private gauge<L extends string>(name: MetricName, labelNames: readonly L[] = []): Gauge<L | 'plan'> {
    return new Gauge(this.options(name, labelNames));
  }

  private counter<L extends string>(name: MetricName, labelNames: readonly L[]): Counter<L | 'plan'> {
    return new Counter(this.options(name, labelNames));
  }

  /** The series that describe a run going on: dropped when it ends. */
  private live(): Gauge<'plan'>[] {
    return [this.inFlight, this.cap, this.paused, this.eta, this.remaining, this.lastPoll, this.heartbeat, this.held];
  }

  /** Sets every gauge from the checkpoint's summary. */
  setGauges(g: GaugeInput): void {
    const plan = this.plan;
    this.items.reset();
    // Every state of every (kind, storage) seen, zeros included, so a series drops to 0 rather than vanishing.
    const pairs = new Set(g.summary.counts.map((c) => `${c.kind}\u0000${c.source}`));
    for (const pair of pairs) {
      const [kind, storage] = pair.split('\u0000') as [string, string];
      for (const state of ITEM_STATES) this.items.set({ plan, kind, storage, state }, 0);
    }
    let inFlight = 0;
    for (const c of g.summary.counts) {
      this.items.set({ plan, kind: c.kind, storage: c.source, state: c.state }, c.n);
      if (c.state === 'scheduling' || c.state === 'in_flight') inFlight += c.n;
    }
    this.started.set({ plan }, g.startedAt / 1000);
    this.migrationStarted.set({ plan }, (g.migrationStartedAt ?? g.startedAt) / 1000);
    this.migrationActive.set({ plan }, Math.round(g.activeMs ?? Math.max(0, g.now - g.startedAt)) / 1000);
    this.info.reset();
    if (g.stays) {
      this.staying.reset();
      for (const b of g.stays) this.staying.set({ plan, storage: b.source, why: b.why }, b.n);
    }
    this.info.set({ plan, step: g.step, dry_run: String(g.dryRun) }, 1);
    if (g.copies && !g.dryRun) {
      // Every (storage, side) seen keeps a series, dropping to 0 rather than vanishing once removed or live.
      for (const storage of g.storages?.sources ?? [])
        this.copySeries.set(`${storage}\u0000source`, { storage, side: 'source' });
      for (const storage of g.storages?.destinations ?? [])
        this.copySeries.set(`${storage}\u0000destination`, { storage, side: 'destination' });
      for (const k of this.copySeries.values()) this.copies.set({ plan, ...k }, 0);
      for (const c of g.copies) {
        this.copySeries.set(`${c.source}\u0000${c.side}`, { storage: c.source, side: c.side });
        this.copies.inc({ plan, storage: c.source, side: c.side });
      }
    }
    if (this.endedAt !== null) return;
    this.inFlight.set({ plan }, inFlight);
    this.cap.set({ plan }, g.cap?.cap ?? Number.NaN);
    // The progress line's hold when the caller has it, else the one the cap and the control row say.
    const hold = g.hold !== undefined ? g.hold : holdOf(g.cap, g.summary.control ?? null);
    const stopped = hold?.stopped ? hold.by : null;
    this.paused.set({ plan }, (stopped !== null && PAUSING.has(stopped)) || g.summary.control?.paused ? 1 : 0);
    // Every holder has its series, 0 unless it holds the run now, so a hold's end is a drop to 0.
    for (const by of HOLDERS) this.held.set({ plan, by }, stopped === by ? 1 : 0);
    const remaining = remainingOf(g.summary);
    const etaMs = g.pace ? g.pace.etaMs : etaOf(remaining, null, false);
    this.eta.set({ plan }, etaMs === null ? Number.NaN : etaMs / 1000);
    this.remaining.set({ plan }, remaining);
    this.heartbeat.set({ plan }, g.now / 1000);
  }

  /** The run ended (`at`, ms since epoch): its outcome replaces the series of a live run. */
  end(outcome: RunOutcome, at: number): void {
    this.endedAt = at;
    for (const g of this.live()) g.reset();
    this.held.reset();
    this.ended.reset();
    this.ended.set({ plan: this.plan, outcome }, at / 1000);
  }

  /**
   * Counts a move that ended and records its duration (when its start is known); `instanceVersion`
   * (pre-flight's) decides what a failure without a reason means.
   */
  moveEnded(span: MoveSpan, instanceVersion: string | null = null): void {
    if (span.end === null) return;
    const labels = { plan: this.plan, kind: span.kind, outcome: span.end };
    if (span.end === 'finished' || span.end === 'cleanup_failed') this.finished.inc(labels);
    else this.failed.inc({ ...labels, class: spanFailureClass(span, instanceVersion) });
    const s = spanSeconds(span);
    if (s !== null) this.duration.observe({ plan: this.plan, kind: span.kind }, s);
  }

  /** Counts one HTTP attempt; a successful read of the storage moves is a successful poll. */
  response(e: RequestEvent, now: number): void {
    const status = typeof e.status === 'number' ? String(e.status) : 'error';
    this.requests.inc({ plan: this.plan, method: e.method, status });
    if (
      this.endedAt === null &&
      e.method === 'GET' &&
      typeof e.status === 'number' &&
      e.status >= 200 &&
      e.status < 300 &&
      e.path.includes('repository_storage_moves')
    ) {
      this.lastPoll.set({ plan: this.plan }, now / 1000);
    }
  }

  /**
   * The registry in the Prometheus text format (what node_exporter's textfile collector reads), each
   * family only when it has a series.
   */
  async render(): Promise<string> {
    const parts: string[] = [];
    for (const family of await this.registry.getMetricsAsJSON()) {
      if (family.values.length === 0) continue;
      parts.push(await this.registry.getSingleMetricAsString(family.name));
    }
    return parts.length === 0 ? '' : `${parts.join('\n')}\n`;
  }
}
