/**
 * The delivery worker of the plan's `notify:`: a run observer, beside the run like the `--events`
 * sink, that turns the checkpoint's committed audit log into public events by the one table of
 * them (../events/run-events-of-audit.ts), records every event a target asked for in the
 * checkpoint before sending it, and delivers each target's notifications in order, one at a time,
 * retrying with backoff until the target takes them. Nothing here waits on the drain or makes it
 * wait: the sends are asynchronous, and the only work on the run's path is a few small writes.
 *
 * At least once: a notification is marked delivered only after the target took it, so a crash
 * between an event and its delivery, or during one, sends it again on resume (a retry repeats the
 * very same object). A new run tries everything still undelivered, given-up deliveries included.
 * At the run's end, its last event (`run.finished`, with the exit code) is recorded and everything
 * waiting gets one more attempt, for FINAL_WAIT_MS at most; what is left stays in the checkpoint
 * for the next run, and the CLI says so. Dry runs notify nobody.
 */
import type { RunObserver } from '../runtime/observe/observer.js';
import type { RunEnd } from '../runtime/types.js';
import type { Timer } from '../shared/clock.js';
import { commandProblem } from './exec.js';
import { readLog, tick } from './delivery.js';
import { finalPass, sendUnrecorded } from './end-pass.js';
import { FINAL_WAIT_MS } from './policy.js';
import { targetsOf } from './targets.js';
import type { NotifierOptions, NotifyLeft } from './types.js';
import { createWorkerState, entryOf, guardedWrite } from './worker-state.js';

/** How often the log is read and due retries are looked for when nothing else wakes the worker. */
const TICK_MS = 1_000;
/** The least time between two reads the run's progress triggers. */
const MIN_READ_GAP_MS = 200;

export interface Notifier extends RunObserver {
  /** Hears how the run ended (RunOptions.onEnd). */
  ended(end: RunEnd): void;
  /** After the run stopped: what is still undelivered (null: nothing, or no notify in this run). */
  readonly left: NotifyLeft | null;
}

/** The notifier of one run: the observer seam's start, progress and stop drive its two halves. */
export function createNotifier(opts: NotifierOptions): Notifier {
  const s = createWorkerState(opts);
  let ticker: Timer | undefined;
  let lastRead = 0;

  return {
    get left() {
      return s.left;
    },
    started(r) {
      if (!r.plan.notify || r.plan.notify.length === 0 || !r.notifications) return;
      if (r.dryRun) {
        opts.onNote('notify: a dry run sends no notification (rehearse them with a real run on the sandbox)');
        return;
      }
      s.run = r;
      const store = (s.store = r.notifications);
      s.targets = targetsOf(r.plan.notify);
      s.sink = { run: r, step: null };
      // From where the last run that notified left off (it may have died before its last events
      // made it), or from this process's own first event.
      const from = store.cursor();
      s.cursor = from ?? r.fromSeq;
      guardedWrite(s, () => store.retryAll(r.clock.now()));
      for (const t of s.targets) {
        const problem = t.plan.kind === 'exec' ? commandProblem(t.plan.argv[0]!, opts.env['PATH']) : null;
        if (problem)
          opts.onWarning(`${t.plan.path}: ${problem}: its notifications wait in the checkpoint until it can run`);
      }
      tick(s);
      ticker = r.clock.setInterval(() => tick(s), TICK_MS);
      ticker.unref();
    },
    progress() {
      if (!s.run) return;
      const now = s.run.clock.now();
      if (now >= lastRead && now - lastRead < MIN_READ_GAP_MS) return;
      lastRead = now;
      tick(s);
    },
    ended(end: RunEnd) {
      if (!s.run) return;
      s.last = opts.lastEvents(end);
    },
    async stopped() {
      const { run, store } = s;
      if (!run || !store) return;
      run.clock.clearInterval(ticker);
      ticker = undefined;
      try {
        readLog(s);
      } catch {
        // Unreadable now: what it holds goes out with the next run.
      }
      const at = run.clock.now();
      const entries = s.last.map((body) => entryOf(s, null, at, body));
      const waitMs = opts.finalWaitMs ?? FINAL_WAIT_MS;
      // The run's last events go out whatever happens: recorded with the rest, or else once, as they are.
      if (guardedWrite(s, () => store.enqueue(entries, null))) await finalPass(s, waitMs, run.clock);
      else await sendUnrecorded(s, entries, waitMs, run.clock);
      await Promise.all(Object.values(s.senders).map((x) => x?.close()));
      for (const x of Object.values(opts.senders ?? {})) await x?.close();
    },
  };
}
