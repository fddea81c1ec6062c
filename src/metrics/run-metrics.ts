/**
 * The run's Prometheus metrics, on a private prom-client Registry (never the global one: a library
 * must not add to its host's default registry). Gauges are set from the checkpoint's summary;
 * counters and the duration histogram are fed from the event log (moves that ended since this
 * process started), requests from the HTTP client's responses. Counters start at 0 in every
 * process, as Prometheus expects of a restarted target (`rate()` handles the reset).
 */
import type { CapData } from '../events/vocabulary.js';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RequestEvent } from '../api/client.js';
import type { MoveSpan } from '../report/moves.js';
import { spanFailureClass, spanSeconds } from '../report/moves.js';
import { rateAndEta } from '../report/summary.js';
import { ITEM_STATES } from '../store/types.js';
import type { StatusSummary } from '../store/types.js';

/** From a quarter of a second (the sandbox) to six hours (a large repository on a busy Gitaly). */
export const MOVE_DURATION_BUCKETS = [0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600];

/** What one refresh of the gauges needs. */
export interface GaugeInput {
  summary: StatusSummary;
  /** The cap in force the run recorded last (null: no drain has looked yet). */
  cap: CapData | null;
  /** ms this process has been running the plan (the rate's window when shorter than 10 minutes). */
  elapsedMs: number;
  step: string;
  plan: string;
  dryRun: boolean;
  startedAt: number;
}

export class RunMetrics {
  readonly registry = new Registry();
  private readonly items = this.gauge(
    'shardmove_items',
    'Items known to the run, by kind, source storage and item state.',
    ['kind', 'storage', 'state'],
  );
  private readonly inFlight = this.gauge(
    'shardmove_moves_in_flight',
    'Moves scheduled or in flight (what the concurrency cap counts).',
  );
  private readonly cap = this.gauge(
    'shardmove_concurrency_cap',
    "The cap in force: moves allowed in flight (the operator's cap, lowered by maintenance windows and the throttle); NaN until the first drain looked.",
  );
  private readonly paused = this.gauge(
    'shardmove_paused',
    '1 while the run is paused with `shardmove control --pause`, else 0.',
  );
  private readonly eta = this.gauge(
    'shardmove_eta_seconds',
    'Estimated seconds until every remaining item is moved, at the rate of the last 10 minutes; NaN when unknown.',
  );
  private readonly remaining = this.gauge('shardmove_items_remaining', 'Items neither moved nor quarantined.');
  private readonly lastPoll = this.gauge(
    'shardmove_last_successful_poll_timestamp_seconds',
    'When a poll of the storage moves last succeeded (Unix time).',
  );
  private readonly started = this.gauge(
    'shardmove_run_start_timestamp_seconds',
    'When this process started running the plan (Unix time).',
  );
  private readonly info = this.gauge(
    'shardmove_run_info',
    'Always 1; the labels name the plan, the step the run is in, and whether it is a dry run.',
    ['plan', 'step', 'dry_run'],
  );
  private readonly finished = new Counter({
    name: 'shardmove_moves_finished_total',
    help: 'Moves that ended with the repository on the destination (finished, or cleanup failed), by kind.',
    labelNames: ['kind', 'outcome'],
    registers: [this.registry],
  });
  private readonly failed = new Counter({
    name: 'shardmove_moves_failed_total',
    help: 'Moves that failed (state failed) or were given up as stuck, by kind and failure class (docs/failures.md).',
    labelNames: ['kind', 'outcome', 'class'],
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'shardmove_move_duration_seconds',
    help: "How long moves took, from the POST's answer to the poll that saw them end, by kind.",
    labelNames: ['kind'],
    buckets: MOVE_DURATION_BUCKETS,
    registers: [this.registry],
  });
  private readonly requests = new Counter({
    name: 'shardmove_http_requests_total',
    help: 'HTTP attempts to the instance, by method and response status ("error" when no response came).',
    labelNames: ['method', 'status'],
    registers: [this.registry],
  });

  private gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    return new Gauge<L>({ name, help, labelNames, registers: [this.registry] });
  }

  /** Sets every gauge from the checkpoint's summary. */
  setGauges(g: GaugeInput): void {
    this.items.reset();
    // Every state of every (kind, storage) seen, zeros included, so a series drops to 0 rather than vanishing.
    const pairs = new Set(g.summary.counts.map((c) => `${c.kind}\u0000${c.source}`));
    for (const pair of pairs) {
      const [kind, storage] = pair.split('\u0000') as [string, string];
      for (const state of ITEM_STATES) this.items.set({ kind, storage, state }, 0);
    }
    let inFlight = 0;
    for (const c of g.summary.counts) {
      this.items.set({ kind: c.kind, storage: c.source, state: c.state }, c.n);
      if (c.state === 'scheduling' || c.state === 'in_flight') inFlight += c.n;
    }
    this.inFlight.set(inFlight);
    this.cap.set(g.cap?.cap ?? Number.NaN);
    this.paused.set(g.summary.control?.paused ? 1 : 0);
    const rate = rateAndEta(g.summary, g.elapsedMs);
    this.eta.set(rate.etaMs === null ? Number.NaN : rate.etaMs / 1000);
    this.remaining.set(rate.remaining);
    this.started.set(g.startedAt / 1000);
    this.info.reset();
    this.info.set({ plan: g.plan, step: g.step, dry_run: String(g.dryRun) }, 1);
  }

  /**
   * Counts a move that ended and records its duration (when its start is known); `instanceVersion`
   * (pre-flight's) decides what a failure without a reason means.
   */
  moveEnded(span: MoveSpan, instanceVersion: string | null = null): void {
    if (span.end === null) return;
    const labels = { kind: span.kind, outcome: span.end };
    if (span.end === 'finished' || span.end === 'cleanup_failed') this.finished.inc(labels);
    else this.failed.inc({ ...labels, class: spanFailureClass(span, instanceVersion) });
    const s = spanSeconds(span);
    if (s !== null) this.duration.observe({ kind: span.kind }, s);
  }

  /** Counts one HTTP attempt; a successful read of the storage moves is a successful poll. */
  response(e: RequestEvent, now: number): void {
    const status = typeof e.status === 'number' ? String(e.status) : 'error';
    this.requests.inc({ method: e.method, status });
    if (
      e.method === 'GET' &&
      typeof e.status === 'number' &&
      e.status >= 200 &&
      e.status < 300 &&
      e.path.includes('repository_storage_moves')
    ) {
      this.lastPoll.set(now / 1000);
    }
  }

  /** The registry in the Prometheus text format (what node_exporter's textfile collector reads). */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
