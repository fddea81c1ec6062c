/**
 * `run --events FILE|-`: the run as JSON lines for automation (the events: ../events/run-events.ts,
 * docs/events.md). A run observer like the metrics file: it reads the checkpoint's committed audit
 * log (from where this process opened it) whenever the run reports progress, and every second
 * besides, and turns the audit events into public lines by the one table of them
 * (../events/run-events-of-audit.ts): steps, moves, quarantine, the cap in force and pauses,
 * windows, the breaker, lock takeovers. Progress comes every interval; the CLI adds the lost lease
 * and the final event with the exit code.
 */
import { toRunEvents } from '../../events/run-events-of-audit.js';
import type { SinkState } from '../../events/run-events-of-audit.js';
import { EVENTS_VERSION } from '../../events/events-version.js';
import type { RunEventBody, RunEventBodyOf } from '../../events/run-events.js';
import type { CapData } from '../../events/vocabulary.js';
import { holdOf } from '../../events/hold.js';
import { progressByKind } from '../../report/summary.js';
import type { Clock, Timer } from '../../shared/clock.js';
import type { ObservedRun, RunObserver } from './observer.js';

/**
 * The events of one run: a run observer (told of the start, of progress, of the stop), plus the
 * last line, which the CLI writes with the exit code.
 */
export interface RunEvents extends RunObserver {
  /** The run lost its lock to another runner (`holder`, when known): written before the last line. */
  leaseLost(holder: { pid: number; host: string } | null): void;
  /** The last line: how the run ended, with the exit code. Written once. */
  finish(end: RunEventBodyOf<'run.finished'>): void;
  /** Why lines could not be written (the sink stopped writing), or null. */
  readonly failure: Error | null;
}

/** How often the sink reads the log when nothing told it (verification, a paused run) and whether progress is due. */
const TICK_MS = 1_000;
/** Events read per page of the log. */
const PAGE = 1_000;

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
  let ticker: Timer | undefined;
  let run: ObservedRun | null = null;
  let state: SinkState | null = null;
  /** The cap the drain recorded last: a held run has no ETA. */
  let cap: CapData | null = null;
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
    if (!run || !state) return;
    for (;;) {
      const page = run.store.readEvents(afterSeq, PAGE);
      for (const e of page) {
        afterSeq = e.seq;
        if (e.type === 'cap.changed') cap = e.data;
        for (const body of toRunEvents(e, state)) emit(body);
      }
      if (page.length < PAGE) return;
    }
  };
  const progress = (force: boolean) => {
    if (!run || !state || finished) return;
    const now = clock.now();
    if (!force && now - lastProgress < progressMs) return;
    lastProgress = now;
    const summary = run.store.summary(now);
    const kinds = progressByKind(summary);
    const sum = (f: (k: (typeof kinds)[number]) => number) => kinds.reduce((a, k) => a + f(k), 0);
    const elapsedMs = Math.max(0, now - run.startedAt);
    // The progress line's pace: this process's rate, none until enough of its moves ended.
    const held = holdOf(cap, run.store.readControl())?.stopped ?? false;
    const pace = run.pace.read(now, summary, held);
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
      movesPerMinute: Math.round((pace.perMinute ?? 0) * 10) / 10,
      etaMs: pace.etaMs === null ? null : Math.round(pace.etaMs),
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
    started(r) {
      run = r;
      state = { run: r, step: null };
      afterSeq = r.fromSeq;
      // The cap in force until this process records its own: the last one the checkpoint holds.
      cap = r.store.lastEventOf(['cap.changed'])?.data ?? null;
      readLog();
      // The first progress line comes with the start, then every interval.
      progress(true);
      ticker = clock.setInterval(tick, TICK_MS);
      ticker.unref();
    },
    progress: tick,
    stopped() {
      clock.clearInterval(ticker);
      ticker = undefined;
      readLog();
    },
    leaseLost(holder) {
      if (finished) return;
      emit({ type: 'lease.lost', holder: holder ? { pid: holder.pid, host: holder.host } : null });
    },
    finish(end) {
      if (finished) return;
      finished = true;
      emit(end);
    },
  };
}
