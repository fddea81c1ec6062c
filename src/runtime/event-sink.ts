/**
 * `run --events FILE|-`: the run as JSON lines for automation (schema: ./events-schema.ts,
 * docs/events.md). The sink sees the checkpoint's audit trail as it is appended, through a thin
 * decorator of the store, and turns the audit events that matter to a runbook into documented
 * events: steps, moves, quarantine, lock takeovers. Events appended inside a transaction are
 * written once it commits (and dropped if it rolls back), so the file never announces what the
 * checkpoint does not hold. A ticker adds progress every interval and notices cap changes made
 * with `shardmove control`; the CLI adds the final event with the exit code.
 */
import type { CheckpointStore, RunControl } from '../store/types.js';
import type { Clock } from '../time/clock.js';
import { progressByKind, rateAndEta } from '../report/summary.js';
import { EVENTS_VERSION } from './events-schema.js';
import type { RunEventBody } from './events-schema.js';

/** What the sink needs to know about the run it reports. */
export interface RunEventInfo {
  plan: string;
  checkpoint: string;
  host: string;
  /** The plan's `move.concurrency` (the cap when no override is in force). */
  planConcurrency: number;
}

/** The events of one run; `attach` is called by the runtime, `finish` by the CLI. */
export interface RunEvents {
  /** Wraps the run's checkpoint: the returned store is the same store, observed. */
  attach(store: CheckpointStore, info: RunEventInfo): CheckpointStore;
  /** Stops the ticker (the run's end; the store is about to close). */
  detach(): void;
  /** The last line: how the run ended, with the exit code. Written once. */
  finish(end: Extract<RunEventBody, { type: 'run.finished' }>): void;
  /** Why lines could not be written (the sink stopped writing), or null. */
  readonly failure: Error | null;
}

const FINAL_LABELS: ReadonlySet<string> = new Set(['done', 'doneWithQuarantine', 'failed']);
/** How often the ticker looks at the live control (cap changes) and whether progress is due. */
const TICK_MS = 1_000;

const str = (v: unknown): string => (typeof v === 'string' ? v : String(v ?? ''));
const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v ?? 0));
const strOrNull = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const isoOrNull = (v: unknown): string | null => (typeof v === 'number' && Number.isFinite(v) ? new Date(v).toISOString() : strOrNull(v));

/**
 * The documented events an audit event stands for (pure; none for most audit events). Moves of
 * every origin count as scheduled: a per-item POST, a bulk move attributed to an item, a move
 * adopted after an unanswered POST.
 */
export function fromAudit(type: string, d: Record<string, unknown>): RunEventBody[] {
  const it = { kind: d.kind as 'projects' | 'snippets' | 'groups', source: str(d.source), id: num(d.id) };
  switch (type) {
    case 'move.scheduled':
    case 'move.adopted':
    case 'bulk.move_seen':
      return [{ type: 'move.scheduled', ...it, moveId: num(d.moveId), moveState: strOrNull(d.moveState), bulk: type === 'bulk.move_seen' }];
    case 'move.finished':
      return [{ type: 'move.finished', ...it, moveId: num(d.moveId), cleanupFailed: false, error: null }];
    case 'move.cleanup_failed':
      return [{ type: 'move.finished', ...it, moveId: num(d.moveId), cleanupFailed: true, error: strOrNull(d.error) }];
    case 'move.failed':
      return [{ type: 'move.failed', ...it, moveId: num(d.moveId), error: strOrNull(d.error) }];
    case 'item.quarantined':
      return [{ type: 'move.quarantined', ...it, reason: str(d.reason), attempts: typeof d.attempts === 'number' ? d.attempts : null, stuck: false }];
    case 'move.stuck':
      return [{ type: 'move.quarantined', ...it, reason: `stuck: move ${num(d.moveId)} still ${str(d.moveState)}`, attempts: null, stuck: true }];
    // Written by the throttle and the maintenance windows (issue 15, items 1 and 2) when they land.
    case 'cap.changed':
      return [{ type: 'cap.changed', cap: num(d.cap), paused: d.paused === true, previous: (d.previous as { cap: number; paused: boolean } | null) ?? null, reason: str(d.reason) }];
    // The scheduling gate (src/schedule/gate.ts): instants are ms in the audit trail, ISO here.
    case 'throttle.cap':
      return [{ type: 'cap.changed', cap: num(d.cap), paused: d.cap === 0, previous: null, reason: str(d.reason) }];
    case 'window.opened':
      return [{ type: 'window.opened', window: str(d.window), closesAt: isoOrNull(d.closesAt) }];
    case 'window.closed':
      return [{ type: 'window.closed', window: str(d.window), nextOpensAt: isoOrNull(d.nextOpenAt) }];
    default:
      return [];
  }
}

/** The cap the drain applies under these overrides (0 while paused). */
function capOf(control: RunControl, planConcurrency: number): { cap: number; paused: boolean } {
  return { cap: control.paused ? 0 : (control.concurrency ?? planConcurrency), paused: control.paused };
}

/**
 * Events written by `write`, one call per line (the CLI appends each to the file with one
 * write(2), so `tail -f` never sees half a line). `progressMs` is the progress interval.
 */
export function createRunEvents(write: (line: string) => void, clock: Clock, progressMs: number): RunEvents {
  let seq = 0;
  let failure: Error | null = null;
  let finished = false;
  let ticker: NodeJS.Timeout | undefined;
  const emit = (body: RunEventBody) => {
    if (failure) return;
    try {
      write(`${JSON.stringify({ v: EVENTS_VERSION, seq: ++seq, at: new Date(clock.now()).toISOString(), ...body })}\n`);
    } catch (err) {
      // A closed pipe or a full disk must not stop the migration: the CLI reports it at the end.
      failure = err instanceof Error ? err : new Error(String(err));
    }
  };

  return {
    get failure() {
      return failure;
    },
    attach(store, info) {
      let depth = 0;
      let queue: RunEventBody[] = [];
      let step: { label: string; since: number } | null = null;
      let startedAt: number | null = null;
      let lastProgress = 0;
      let cap: { cap: number; paused: boolean } | null = null;

      const endStep = (outcome: 'ok' | 'failed' | 'interrupted', at: number): RunEventBody[] => {
        if (!step) return [];
        const ended: RunEventBody = { type: 'step.ended', step: step.label, outcome, durationMs: Math.max(0, at - step.since) };
        step = null;
        return [ended];
      };
      /** The run-level audit events: run start, steps, interruption and end. */
      const fromRun = (type: string, d: Record<string, unknown>, at: number): RunEventBody[] => {
        switch (type) {
          case 'run.started':
            startedAt = at;
            return [{ type: 'run.started', plan: info.plan, checkpoint: info.checkpoint, resumed: d.resumed === true, dryRun: d.dryRun === true, pid: num(d.pid), host: info.host }];
          case 'step.entered': {
            const label = str(d.step);
            if (FINAL_LABELS.has(label)) return endStep(label === 'failed' ? 'failed' : 'ok', at);
            const out = endStep('ok', at);
            step = { label, since: at };
            return [...out, { type: 'step.started', step: label }];
          }
          case 'run.interrupted':
            return endStep('interrupted', at);
          case 'run.finished':
            return endStep(d.state === 'failed' ? 'failed' : 'ok', at);
          default:
            return fromAudit(type, d);
        }
      };
      const deliver = (events: RunEventBody[]) => {
        if (depth > 0) queue.push(...events);
        else for (const e of events) emit(e);
      };
      const tick = () => {
        if (startedAt === null || finished) return;
        try {
          const next = capOf(store.readControl(), info.planConcurrency);
          if (!cap || cap.cap !== next.cap || cap.paused !== next.paused) {
            emit({ type: 'cap.changed', ...next, previous: cap, reason: cap ? 'control' : 'start' });
            cap = next;
          }
          const now = clock.now();
          if (now - lastProgress < progressMs) return;
          lastProgress = now;
          const summary = store.summary(now);
          const kinds = progressByKind(summary);
          const sum = (f: (k: (typeof kinds)[number]) => number) => kinds.reduce((a, k) => a + f(k), 0);
          const elapsedMs = Math.max(0, now - startedAt);
          const rate = rateAndEta(summary, elapsedMs);
          emit({
            type: 'progress',
            step: step?.label ?? null,
            total: summary.total,
            done: sum((k) => k.done),
            inFlight: sum((k) => k.inFlight),
            waiting: sum((k) => k.waiting),
            retrying: sum((k) => k.retrying),
            quarantined: sum((k) => k.quarantined),
            movesPerMinute: Math.round(rate.perMinute * 10) / 10,
            etaMs: rate.etaMs === null ? null : Math.round(rate.etaMs),
            elapsedMs: Math.round(elapsedMs),
          });
        } catch {
          // A busy checkpoint: the next tick tries again.
        }
      };

      const observed = new Proxy(store, {
        get(target, prop, receiver) {
          if (prop === 'appendEvent') {
            return (type: string, data: Record<string, unknown>, at: number) => {
              target.appendEvent(type, data, at);
              deliver(fromRun(type, data, at));
              // The first progress line comes with the start, then every interval.
              if (type === 'run.started') tick();
            };
          }
          if (prop === 'batch') {
            return <T>(fn: () => T): T => {
              depth++;
              let ok = false;
              try {
                const r = target.batch(fn);
                ok = true;
                return r;
              } finally {
                depth--;
                if (depth === 0) {
                  const events = queue;
                  queue = [];
                  if (ok) for (const e of events) emit(e);
                }
              }
            };
          }
          if (prop === 'acquireLock') {
            return (...args: Parameters<CheckpointStore['acquireLock']>) => {
              const got = target.acquireLock(...args);
              if (got.previous && got.reason) emit({ type: 'lock.taken_over', previous: { pid: got.previous.pid, host: got.previous.host }, reason: got.reason });
              return got;
            };
          }
          const value: unknown = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      ticker = setInterval(tick, TICK_MS);
      ticker.unref();
      return observed;
    },
    detach() {
      if (ticker) clearInterval(ticker);
      ticker = undefined;
    },
    finish(end) {
      if (finished) return;
      finished = true;
      emit(end);
    },
  };
}
