/**
 * The progress line as a run observer: every command that drives a drain (`run`, `revert`, `demo`)
 * adds one, so they all show the same line from the same source, the checkpoint: the counts, the
 * live control (a pause shows at once) and the cap the drain recorded last (a rule's hold, a closed
 * window, the throttle). On a terminal one line is redrawn in place (at most 4 times a second);
 * in a file or a pipe a line every 10 seconds. When the run is paused, held or released, a line
 * saying so stays on the screen (above the live line), or is written at once to the file, so the
 * operator can tell when it happened, and, when the operator can do something about it, the next
 * step with the run's own control command (../report/next-step.ts).
 *
 * The rate and the ETA are the run's pace (./pace.ts), the same the `--events` progress lines and the
 * metrics file give: this process's own, "ETA measuring" until 5 of its moves ended.
 */
import type { CapData } from '../events/vocabulary.js';
import type { ObservedRun, RunObserver } from '../runtime/observe/observer.js';
import { autoCapOf, holdOf } from '../events/hold.js';
import { renderHoldNote, renderProgressLine } from '../report/progress.js';
import { holdNextStep } from '../report/next-step.js';
import type { Timer } from '../shared/clock.js';

/** Where the line goes: a terminal keeps one live line; a file or a pipe gets whole lines. */
export interface ProgressSink {
  readonly tty: boolean;
  /** ANSI colours (a terminal, NO_COLOR unset). */
  readonly colour: boolean;
  /** The terminal's width now (it may be resized); undefined when unknown. */
  columns(): number | undefined;
  /** Terminal: replaces the live line with `line`. */
  show(line: string): void;
  /** Terminal: removes the live line. */
  clear(): void;
  /** File or pipe: one line. */
  print(line: string): void;
}

/**
 * A moment as the run's clock and this process's own monotonic time give it. A gap has passed when
 * either says so: the same on the system clock; on a simulated clock, which skips the time between
 * its timers, the clock's; on a clock held still while real timers fire, the process's.
 */
interface Mark {
  clock: number;
  real: number;
}
const NEVER: Mark = { clock: Number.NEGATIVE_INFINITY, real: Number.NEGATIVE_INFINITY };
const markOf = (r: ObservedRun): Mark => ({ clock: r.clock.now(), real: performance.now() });
const since = (r: ObservedRun, m: Mark): number => Math.max(r.clock.now() - m.clock, performance.now() - m.real);

const TTY_GAP_MS = 250;
const LINE_GAP_MS = 10_000;

/** The observer that draws the progress line to `sink` from the run's start to its stop. */
export function createProgressObserver(sink: ProgressSink): RunObserver {
  const baseGapMs = sink.tty ? TTY_GAP_MS : 1_000;
  let run: ObservedRun | null = null;
  let timer: Timer | null = null;
  let cap: CapData | null = null;
  let seenSeq = 0;
  let lastRead = NEVER;
  let lastPrint = NEVER;
  let gapMs = baseGapMs;
  let drawn = false;
  let holdShown = '';

  /** What holds the run now: the live control, and the cap recorded since the last look (cheap reads). */
  const look = (r: ObservedRun) => {
    const newest = r.store.lastEventSeq();
    if (newest > seenSeq) {
      // Only the events since the last look: a bounded read however long the log is.
      const e = r.store.lastEventOf(['cap.changed'], newest - seenSeq);
      if (e) cap = e.data;
      seenSeq = newest;
    }
    const hold = holdOf(cap, r.store.readControl(), r.plan.schedule?.timezone ?? 'UTC');
    const stopping = r.signal?.aborted ?? false;
    // Only what stops the run makes news: a throttle moving its cap every few seconds does not.
    return { hold, stopping, key: stopping ? 'stopping' : hold?.stopped ? hold.full : '' };
  };

  /** The whole view: `look`'s, the counts (the dear read on a large checkpoint) and the rate. */
  const read = (r: ObservedRun, held: ReturnType<typeof look>) => {
    const now = r.clock.now();
    const summary = r.store.summary(now);
    const pace = r.pace.read(now, summary, held.hold?.stopped ?? false);
    return {
      step: r.step(),
      summary,
      elapsedMs: now - r.startedAt,
      hold: held.hold,
      auto: autoCapOf(cap),
      perMinute: pace.perMinute,
      stopping: held.stopping,
    };
  };

  const tick = () => {
    const r = run;
    if (!r) return;
    const t0 = markOf(r);
    if (since(r, lastRead) < gapMs) return;
    lastRead = t0;
    try {
      const held = look(r);
      // A file or a pipe: the counts are read only for a line, every 10 s or when the run is held or released.
      if (!sink.tty && since(r, lastPrint) < LINE_GAP_MS && held.key === holdShown) return;
      const view = read(r, held);
      const next = held.hold?.stopped && !held.stopping ? holdNextStep(held.hold, cap, r.named) : null;
      if (sink.tty) {
        // A pause, a hold or its end stays on the screen, above the live line, with the time it happened.
        if (held.key !== holdShown) {
          sink.print(renderHoldNote(view, holdShown, r.clock.now(), sink.colour));
          // What to do about it, the run's own command whole on one line (the terminal wraps it; a paste stays one command).
          if (next) sink.print(`  next: ${next}`);
        }
        const columns = sink.columns();
        sink.show(renderProgressLine(view, { width: columns ? columns - 1 : undefined, colour: sink.colour }));
        drawn = true;
      } else {
        lastPrint = t0;
        sink.print(renderProgressLine(view, { colour: sink.colour }));
        if (next && held.key !== holdShown) sink.print(`  next: ${next}`);
      }
      holdShown = held.key;
    } catch {
      // A busy checkpoint (another process writing): this look is skipped.
    } finally {
      // Reading the counts is a synchronous query: on a huge checkpoint, look less often so the
      // line never takes more than ~5% of the event loop.
      gapMs = Math.max(baseGapMs, (performance.now() - t0.real) * 20);
    }
  };

  return {
    started(r) {
      run = r;
      seenSeq = r.fromSeq;
      // A file or a pipe: the first line after one interval (short runs stay quiet), or at a hold.
      lastPrint = markOf(r);
      timer = r.clock.setInterval(tick, baseGapMs);
      timer.unref();
    },
    progress() {
      if (sink.tty) tick();
    },
    stopped() {
      run?.clock.clearInterval(timer);
      timer = null;
      if (sink.tty && drawn) sink.clear();
      run = null;
    },
  };
}
