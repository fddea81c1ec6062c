/**
 * `run --events FILE|-`: the run as JSON lines for automation (schema: ./events-schema.ts,
 * docs/events.md). A run observer like the metrics file: it reads the checkpoint's committed audit
 * log (from where this process opened it) whenever the run reports progress, and every second
 * besides, and turns the audit events that matter to a runbook into documented events: steps,
 * moves, quarantine, the cap in force, windows, lock takeovers. Progress comes every interval; the
 * CLI adds the final event with the exit code.
 */
import { isFinalState } from '../events/vocabulary.js';
import type { AuditEvent, CapData } from '../events/vocabulary.js';
import { classifyFailure } from '../report/failure-class.js';
import { progressByKind, rateAndEta } from '../report/summary.js';
import type { Clock } from '../time/clock.js';
import { EVENTS_VERSION } from './events-schema.js';
import type { RunEventBody } from './events-schema.js';
import type { ObservedRun, RunObserver } from './observer.js';

/**
 * The events of one run: a run observer (told of the start, of progress, of the stop), plus the
 * last line, which the CLI writes with the exit code.
 */
export interface RunEvents extends RunObserver {
  /** The last line: how the run ended, with the exit code. Written once. */
  finish(end: Extract<RunEventBody, { type: 'run.finished' }>): void;
  /** Why lines could not be written (the sink stopped writing), or null. */
  readonly failure: Error | null;
}

/** How often the sink reads the log when nothing told it (verification, a paused run) and whether progress is due. */
const TICK_MS = 1_000;
/** Events read per page of the log. */
const PAGE = 1_000;

/** What turning the log into lines remembers between events. */
export interface SinkState {
  run: ObservedRun;
  step: { label: string; since: number } | null;
}

const iso = (ms: number | null | undefined): string | null =>
  typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : null;
const control = (c: CapData | null) => (c ? { cap: c.cap, paused: c.paused } : null);

/** The instance's GitLab version as pre-flight read it (null before, or for a sink with no run). */
const releaseOf = (s: SinkState): string | null => (s.run as ObservedRun | null)?.instanceVersion?.() ?? null;

function endStep(s: SinkState, outcome: 'ok' | 'failed' | 'interrupted', at: number): RunEventBody[] {
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

/**
 * The documented lines an audit event stands for (none for most). Exhaustive over the vocabulary:
 * a new audit event must be given its lines here, or none, before the build passes. Moves of every
 * origin count as scheduled: a per-item POST, a bulk move attributed to an item, a move adopted
 * after an unanswered POST.
 */
export function toRunEvents(e: AuditEvent, s: SinkState): RunEventBody[] {
  switch (e.type) {
    case 'run.started':
      return [
        {
          type: 'run.started',
          plan: s.run.plan.name,
          checkpoint: s.run.checkpoint,
          resumed: e.data.resumed,
          dryRun: e.data.dryRun,
          pid: e.data.pid,
          host: s.run.host,
        },
      ];
    case 'step.entered': {
      const label = e.data.step;
      if (isFinalState(label)) return endStep(s, label === 'failed' ? 'failed' : 'ok', e.at);
      const out = endStep(s, 'ok', e.at);
      s.step = { label, since: e.at };
      return [...out, { type: 'step.started', step: label }];
    }
    case 'run.interrupted':
      return endStep(s, 'interrupted', e.at);
    case 'run.finished':
      return endStep(s, e.data.state === 'failed' ? 'failed' : 'ok', e.at);
    case 'move.scheduled':
    case 'move.adopted':
    case 'bulk.move_seen': {
      const d = e.data;
      return [
        {
          type: 'move.scheduled',
          kind: d.kind,
          source: d.source,
          id: d.id,
          moveId: d.moveId,
          moveState: d.moveState,
          bulk: e.type === 'bulk.move_seen',
        },
      ];
    }
    case 'move.finished':
      return [
        {
          type: 'move.finished',
          kind: e.data.kind,
          source: e.data.source,
          id: e.data.id,
          moveId: e.data.moveId,
          cleanupFailed: false,
          error: null,
        },
      ];
    case 'move.cleanup_failed':
      return [
        {
          type: 'move.finished',
          kind: e.data.kind,
          source: e.data.source,
          id: e.data.id,
          moveId: e.data.moveId,
          cleanupFailed: true,
          error: e.data.error,
        },
      ];
    case 'move.failed':
      return [
        {
          type: 'move.failed',
          kind: e.data.kind,
          source: e.data.source,
          id: e.data.id,
          moveId: e.data.moveId,
          error: e.data.error,
          class: classifyFailure(e.data.error, releaseOf(s)),
        },
      ];
    case 'item.quarantined':
      return [
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
      ];
    case 'move.stuck': {
      const d = e.data;
      return [
        {
          type: 'move.quarantined',
          kind: d.kind,
          source: d.source,
          id: d.id,
          reason: `stuck: move ${d.moveId} still ${d.moveState}`,
          attempts: null,
          stuck: true,
          class: d.phase === 'queued' ? 'stuck-queued' : 'stuck-running',
        },
      ];
    }
    case 'cap.changed':
      return [
        {
          type: 'cap.changed',
          cap: e.data.cap,
          paused: e.data.paused,
          previous: control(e.data.previous),
          reason: e.data.reason,
          limit: e.data.limit,
          ...(e.data.rule !== undefined ? { rule: e.data.rule, since: iso(e.data.since ?? null) } : {}),
        },
      ];
    case 'window.opened':
      return [{ type: 'window.opened', window: e.data.window ?? '', closesAt: iso(e.data.closesAt) }];
    case 'window.closed':
      return [{ type: 'window.closed', window: e.data.window ?? '', nextOpensAt: iso(e.data.nextOpenAt) }];
    case 'network.split':
      return [{ type: 'network.split', network: e.data.network, bytes: e.data.bytes, extraBytes: e.data.extraBytes }];
    case 'lock.takeover':
      return e.data.reason
        ? [
            {
              type: 'lock.taken_over',
              previous: { pid: e.data.previous.pid, host: e.data.previous.host },
              reason: e.data.reason,
            },
          ]
        : [];
    // The cap that throttle.cap, rule.changed (a rule that holds: limit rule, its reason naming the
    // rule) and control.changed move reaches the file as cap.changed, recorded by the drain; the rest
    // is bookkeeping a runbook does not act on (the checkpoint's log keeps it).
    case 'throttle.cap':
    case 'rule.changed':
    case 'control.changed':
    case 'run.restart':
    case 'schedule.ignored':
    case 'http.mutating':
    case 'weights.restored':
    case 'plan.recorded':
    case 'revert.seeded':
    case 'revert.skipped':
    case 'list.seeded':
    case 'list.skipped':
    case 'lock.acquired':
    case 'lock.unlocked':
    case 'quarantine.released':
    case 'breaker.tripped':
    case 'drain.started':
    case 'drain.finished':
    case 'drain.dry_run':
    case 'drain.ahead':
    case 'drain.until_reached':
    case 'placement.planned':
    case 'drain.queued_ahead':
    case 'enumerate.started':
    case 'enumerate.unlistable':
    case 'enumerate.finished':
    case 'enumerate.filter_ignored':
    case 'item.not_on_source':
    case 'item.still_on_source':
    case 'item.absent_but_on_source':
    case 'item.absent_unknown':
    case 'item.elsewhere':
    case 'item.gone':
    case 'item.already_on_destination':
    case 'item.stuck_state':
    case 'item.retry':
    case 'move.intent':
    case 'move.read_only':
    case 'move.post_failed':
    case 'move.not_created':
    case 'move.unstuck':
    case 'bulk.intent':
    case 'bulk.posted':
    case 'bulk.post_failed':
    case 'bulk.throttled':
    case 'bulk.adopted':
    case 'bulk.move_for_quarantined':
    case 'bulk.settled':
    case 'records.sweep':
    case 'records.confirmed':
    case 'records.unconfirmed':
    case 'verify.checked':
    case 'verify.filter_ignored':
      return [];
    default:
      return unknownEvent(e);
  }
}

/** Reached only if a type of the vocabulary has no case above: the build fails first. */
function unknownEvent(e: never): RunEventBody[] {
  void e;
  return [];
}

/**
 * Events written by `write`, one call per line (the CLI appends each to the file with one
 * write(2), so `tail -f` never sees half a line). `progressMs` is the progress interval. The lines
 * come from the checkpoint's committed log, read from where this process opened it: the file never
 * announces what the checkpoint does not hold.
 */
export function createRunEvents(write: (line: string) => void, clock: Clock, progressMs: number): RunEvents {
  let seq = 0;
  let failure: Error | null = null;
  let finished = false;
  let ticker: NodeJS.Timeout | undefined;
  let state: SinkState | null = null;
  let afterSeq = 0;
  let lastProgress = 0;
  const emit = (body: RunEventBody) => {
    if (failure) return;
    try {
      write(`${JSON.stringify({ v: EVENTS_VERSION, seq: ++seq, at: new Date(clock.now()).toISOString(), ...body })}\n`);
    } catch (err) {
      // A closed pipe or a full disk must not stop the migration: the CLI reports it at the end.
      failure = err instanceof Error ? err : new Error(String(err));
    }
  };
  /** Every event committed since the last read, in order. */
  const readLog = () => {
    if (!state) return;
    for (;;) {
      const page = state.run.store.readEvents(afterSeq, PAGE);
      for (const e of page) {
        afterSeq = e.seq;
        for (const body of toRunEvents(e, state)) emit(body);
      }
      if (page.length < PAGE) return;
    }
  };
  const progress = (force: boolean) => {
    if (!state || finished) return;
    const now = clock.now();
    if (!force && now - lastProgress < progressMs) return;
    lastProgress = now;
    const summary = state.run.store.summary(now);
    const kinds = progressByKind(summary);
    const sum = (f: (k: (typeof kinds)[number]) => number) => kinds.reduce((a, k) => a + f(k), 0);
    const elapsedMs = Math.max(0, now - state.run.startedAt);
    const rate = rateAndEta(summary, elapsedMs);
    emit({
      type: 'progress',
      step: state.step?.label ?? null,
      total: summary.total,
      done: sum((k) => k.done),
      inFlight: sum((k) => k.inFlight),
      waiting: sum((k) => k.waiting),
      retrying: sum((k) => k.retrying),
      quarantined: sum((k) => k.quarantined),
      staying: sum((k) => k.staying),
      movesPerMinute: Math.round(rate.perMinute * 10) / 10,
      etaMs: rate.etaMs === null ? null : Math.round(rate.etaMs),
      elapsedMs: Math.round(elapsedMs),
    });
  };
  const tick = () => {
    try {
      readLog();
      progress(false);
    } catch {
      // A busy checkpoint: the next tick tries again.
    }
  };

  return {
    get failure() {
      return failure;
    },
    started(run) {
      state = { run, step: null };
      afterSeq = run.fromSeq;
      readLog();
      // The first progress line comes with the start, then every interval.
      progress(true);
      ticker = setInterval(tick, TICK_MS);
      ticker.unref();
    },
    progress: tick,
    stopped() {
      if (ticker) clearInterval(ticker);
      ticker = undefined;
      readLog();
    },
    finish(end) {
      if (finished) return;
      finished = true;
      emit(end);
    },
  };
}
