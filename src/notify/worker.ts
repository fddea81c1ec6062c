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
import { dirname, resolve } from 'node:path';
import { toRunEvents } from '../events/run-events-of-audit.js';
import type { SinkState } from '../events/run-events-of-audit.js';
import { EVENTS_VERSION } from '../events/events-version.js';
import type { RunEvent, RunEventBody } from '../events/run-events.js';
import type { ObservedRun, RunObserver } from '../runtime/observe/observer.js';
import type { RunEnd } from '../runtime/types.js';
import { scrubServerText } from '../secrets/registry.js';
import type { Clock, Timer } from '../shared/clock.js';
import { isLeaseLostError } from '../store/lease.js';
import type { NotifyEntry, NotifyStore, NotifyTargetView, PendingNotification } from '../store/types.js';
import { commandProblem, createExecSender } from './exec.js';
import { backoffMs, FINAL_WAIT_MS } from './policy.js';
import type { DeliveryResult } from './policy.js';
import { targetsOf } from './targets.js';
import type { Target } from './targets.js';
import { eventLine } from './text.js';
import type { NotifiedRun, Sender } from './types.js';
import { createWebhookSender } from './webhook.js';

/**
 * The instance's URL as a notification names it: its origin and path (an instance may live under
 * a path), never a query or user:password@, scrubbed of every secret the run knows.
 */
export function shownInstance(url: string): string {
  try {
    const u = new URL(url);
    return scrubServerText(`${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`);
  } catch {
    return '';
  }
}

/** A receiver's words in a warning line: its start (the checkpoint keeps them whole). */
const cutShort = (text: string) => (text.length > 100 ? `${text.slice(0, 97)}...` : text);

/** How often the log is read and due retries are looked for when nothing else wakes the worker. */
const TICK_MS = 1_000;
/** The least time between two reads the run's progress triggers. */
const MIN_READ_GAP_MS = 200;
/** Audit events read per page. */
const PAGE = 1_000;
/** How long the end's wait goes on before the run says what it waits for. */
const SAY_SLOW_MS = 1_000;
/** After the end's wait, how long aborted attempts get to settle and be recorded. */
const SETTLE_MS = 2_000;

export interface NotifierOptions {
  /** The plan file, as given: commands run in its directory and see its path. */
  planFile: string;
  cwd: string;
  /** shardmove's environment, which commands inherit (less the run's secrets). */
  env: Readonly<Record<string, string | undefined>>;
  /** The events that tell how a run ended (the CLI's words: `run.finished` with the exit code, after a lost lease `lease.lost` first). */
  lastEvents(end: RunEnd): RunEventBody[];
  /** Told once per target when its deliveries start failing, and at the start about a command that cannot run. */
  onWarning(message: string): void;
  /** Told at the start of a dry run of a plan with targets: it sends nothing. */
  onNote(message: string): void;
  /** Tests: senders instead of the real ones, and the end's wait. */
  senders?: Partial<Record<'webhook' | 'exec', Sender>>;
  finalWaitMs?: number;
}

/** What a run's end left undelivered, for the CLI to say. */
export interface NotifyLeft {
  /** Per target; `inPlan` false: a target the plan no longer lists (its deliveries wait until it does again). */
  waiting: (NotifyTargetView & { inPlan: boolean })[];
  /** True when the checkpoint could not record them (a lost lease): they were sent once, unrecorded. */
  unrecorded: boolean;
}

export interface Notifier extends RunObserver {
  /** Hears how the run ended (RunOptions.onEnd). */
  ended(end: RunEnd): void;
  /** After the run stopped: what is still undelivered (null: nothing, or no notify in this run). */
  readonly left: NotifyLeft | null;
}

export function createNotifier(opts: NotifierOptions): Notifier {
  let run: ObservedRun | null = null;
  let store: NotifyStore | null = null;
  let targets: Target[] = [];
  let sink: SinkState | null = null;
  let cursor = 0;
  let ticker: Timer | undefined;
  let lastRead = 0;
  /** Set when the checkpoint refused a write (the lease was lost): nothing more is written or sent. */
  let broken = false;
  let final = false;
  /** The end's wait is over: nothing new starts. */
  let closing = false;
  let last: RunEventBody[] = [];
  let left: NotifyLeft | null = null;
  const busy = new Map<string, AbortController>();
  const warned = new Set<string>();
  /** Targets the end's pass stopped for: one failure each, then the rest waits for the next run. */
  const doneAtEnd = new Set<string>();
  let onIdle: (() => void) | null = null;
  const senders: Record<'webhook' | 'exec', Sender | null> = { webhook: null, exec: null };

  const sender = (kind: 'webhook' | 'exec'): Sender => {
    const given = opts.senders?.[kind];
    if (given) return given;
    senders[kind] ??=
      kind === 'webhook'
        ? createWebhookSender()
        : createExecSender({ cwd: dirname(resolve(opts.cwd, opts.planFile)), env: opts.env });
    return senders[kind]!;
  };
  /** Which run the notifications are about: the same in every body, standard input and variable. */
  let about: NotifiedRun | null = null;
  const notified = (): NotifiedRun =>
    (about ??= {
      plan: run!.plan.name,
      planFile: resolve(opts.cwd, opts.planFile),
      instance: shownInstance(run!.plan.instance.url),
      host: run!.host,
      checkpoint: resolve(opts.cwd, run!.checkpoint),
    });

  /**
   * Runs a write. One the fence refuses (the lease is lost) stops the worker, never the run; any
   * other failure (a checkpoint busy for long) leaves things as they were, for the next tick.
   */
  const write = (fn: () => void): boolean => {
    if (broken) return false;
    try {
      fn();
      return true;
    } catch (err) {
      if (isLeaseLostError(err)) broken = true;
      return false;
    }
  };
  /** A read; one that fails (a busy checkpoint) is tried again at the next tick. */
  const read = <T>(fn: () => T): T | null => {
    try {
      return fn();
    } catch {
      return null;
    }
  };

  const entryOf = (auditSeq: number | null, at: number, body: RunEventBody): NotifyEntry => ({
    auditSeq,
    at,
    type: body.type,
    body,
    targets: targets.filter((t) => t.wants(body.type)).map((t) => ({ key: t.key, label: t.label })),
  });

  /** Every audit event committed since the cursor, turned into notifications with the cursor in one transaction. */
  const readLog = () => {
    if (!run || !store || !sink || broken) return;
    for (;;) {
      const page = run.store.readEvents(cursor, PAGE);
      if (page.length === 0) return;
      const entries: NotifyEntry[] = [];
      for (const e of page) for (const body of toRunEvents(e, sink)) entries.push(entryOf(e.seq, e.at, body));
      const upTo = page[page.length - 1]!.seq;
      if (!write(() => store!.enqueue(entries, upTo))) return;
      cursor = upTo;
      if (page.length < PAGE) return;
    }
  };

  const eventOf = (n: PendingNotification): RunEvent =>
    ({ v: EVENTS_VERSION, seq: n.seq, at: new Date(n.at).toISOString(), type: n.type, ...n.body }) as RunEvent;

  const deliver = async (t: Target, n: PendingNotification) => {
    const abort = new AbortController();
    busy.set(t.key, abort);
    let attempt = n.attempts + 1;
    // Counted before it is made, so an attempt a crash cuts short counts too; none without the count.
    if (!write(() => (attempt = store!.attempted(t.key, n.seq)))) {
      busy.delete(t.key);
      return settle();
    }
    const event = eventOf(n);
    let result: DeliveryResult;
    try {
      result = await sender(t.plan.kind).send({
        target: t,
        event,
        line: eventLine(notified(), event),
        run: notified(),
        attempt,
        signal: abort.signal,
      });
    } catch (err) {
      result = { ok: false, permanent: false, error: (err as Error).message };
    }
    const now = run!.clock.now();
    if (result.ok) write(() => store!.delivered(t.key, n.seq, now));
    else {
      const error = scrubServerText(result.error);
      write(() => store!.failed(t.key, n.seq, error, result.permanent ? null : now + backoffMs(attempt)));
      if (final) doneAtEnd.add(t.key);
      if (!warned.has(t.key)) {
        warned.add(t.key);
        opts.onWarning(
          `notify: ${t.label}: ${cutShort(error)} (${result.permanent ? 'not tried again by this run' : 'tried again with backoff'}; \`status\` lists what waits)`,
        );
      }
    }
    busy.delete(t.key);
    pump();
  };

  /** Starts the next delivery of every idle target whose oldest notification is due. */
  const pump = () => {
    if (!run || !store || broken || closing) return settle();
    const now = run.clock.now();
    for (const t of targets) {
      if (busy.has(t.key) || doneAtEnd.has(t.key)) continue;
      const next = read(() => store!.head(t.key));
      if (!next) continue;
      // At the end every waiting notification gets its attempt now, backoff or not.
      if (!final && next.nextAttemptAt !== null && next.nextAttemptAt > now) continue;
      void deliver(t, next);
    }
    settle();
  };
  const settle = () => {
    if (busy.size === 0 && onIdle) onIdle();
  };

  const tick = () => {
    try {
      readLog();
      pump();
    } catch {
      // A busy checkpoint: the next tick tries again.
    }
  };

  return {
    get left() {
      return left;
    },
    started(r) {
      if (!r.plan.notify || r.plan.notify.length === 0 || !r.notifications) return;
      if (r.dryRun) {
        opts.onNote('notify: a dry run sends no notification (rehearse them with a real run on the sandbox)');
        return;
      }
      run = r;
      store = r.notifications;
      targets = targetsOf(r.plan.notify);
      sink = { run: r, step: null };
      // From where the last run that notified left off (it may have died before its last events
      // made it), or from this process's own first event.
      const from = store.cursor();
      cursor = from ?? r.fromSeq;
      write(() => store!.retryAll(r.clock.now()));
      for (const t of targets) {
        const problem = t.plan.kind === 'exec' ? commandProblem(t.plan.argv[0]!, opts.env['PATH']) : null;
        if (problem)
          opts.onWarning(`${t.plan.path}: ${problem}: its notifications wait in the checkpoint until it can run`);
      }
      tick();
      ticker = r.clock.setInterval(tick, TICK_MS);
      ticker.unref();
    },
    progress() {
      if (!run) return;
      const now = run.clock.now();
      if (now >= lastRead && now - lastRead < MIN_READ_GAP_MS) return;
      lastRead = now;
      tick();
    },
    ended(end) {
      if (!run) return;
      last = opts.lastEvents(end);
    },
    async stopped() {
      if (!run || !store) return;
      run.clock.clearInterval(ticker);
      ticker = undefined;
      try {
        readLog();
      } catch {
        // Unreadable now: what it holds goes out with the next run.
      }
      const at = run.clock.now();
      const entries = last.map((body) => entryOf(null, at, body));
      const waitMs = opts.finalWaitMs ?? FINAL_WAIT_MS;
      // The run's last events go out whatever happens: recorded with the rest, or else once, as they are.
      if (write(() => store!.enqueue(entries, null))) await finalPass(waitMs, run.clock);
      else await sendUnrecorded(entries, waitMs, run.clock);
      await Promise.all(Object.values(senders).map((s) => s?.close()));
      for (const s of Object.values(opts.senders ?? {})) await s?.close();
    },
  };

  /** The end: one more attempt for everything waiting, until each target failed once or the wait is over. */
  async function finalPass(waitMs: number, clock: Clock): Promise<void> {
    final = true;
    const idle = new Promise<void>((done) => (onIdle = done));
    pump();
    // A target slow to answer holds the final report back: say why, once it is noticeable.
    const slow = clock.setTimeout(() => {
      if (busy.size > 0)
        opts.onNote(`notify: delivering the run's last notifications (at most ${Math.round(waitMs / 1000)}s)`);
    }, SAY_SLOW_MS);
    slow.unref();
    const timer = new Promise<'late'>((done) => clock.setTimeout(() => done('late'), waitMs).unref());
    if ((await Promise.race([idle, timer])) === 'late') await abortAll(clock);
    clock.clearTimeout(slow);
    onIdle = null;
    const waiting = read(() => store!.waiting()) ?? [];
    if (waiting.length > 0)
      left = { waiting: waiting.map((w) => ({ ...w, inPlan: inPlan(w.target) })), unrecorded: false };
  }

  function inPlan(key: string): boolean {
    return targets.some((t) => t.key === key);
  }

  /** Attempts still running when the end's wait is over are aborted, then recorded as failed. */
  async function abortAll(clock: Clock): Promise<void> {
    closing = true;
    if (busy.size === 0) return;
    const settled = new Promise<void>((done) => (onIdle = done));
    for (const a of busy.values()) a.abort();
    await Promise.race([settled, new Promise((done) => clock.setTimeout(() => done(undefined), SETTLE_MS).unref())]);
  }

  /**
   * After a lost lease the checkpoint is another process's: the run's last events go out once, to
   * the targets that want them, without being recorded.
   */
  async function sendUnrecorded(entries: NotifyEntry[], waitMs: number, clock: Clock): Promise<void> {
    const abort = new AbortController();
    const timer = clock.setTimeout(() => abort.abort(), waitMs);
    timer.unref();
    const failures: NotifyLeft['waiting'] = [];
    // Numbered after this process's last notification; the checkpoint keeps none of them.
    const after = read(() => store!.lastSeq()) ?? 0;
    await Promise.all(
      targets.map(async (t) => {
        const mine = entries.filter((e) => e.targets.some((ref) => ref.key === t.key));
        for (const [i, e] of mine.entries()) {
          const seq = after + entries.indexOf(e) + 1;
          const event = { v: EVENTS_VERSION, seq, at: new Date(e.at).toISOString(), ...e.body } as RunEvent;
          const result = await sender(t.plan.kind)
            .send({
              target: t,
              event,
              line: eventLine(notified(), event),
              run: notified(),
              attempt: 1,
              signal: abort.signal,
            })
            .catch((err: unknown) => ({ ok: false, permanent: false, error: String(err) }) as DeliveryResult);
          if (result.ok) continue;
          failures.push({
            target: t.key,
            label: t.label,
            waiting: mine.length - i,
            givenUp: mine.length - i,
            inPlan: true,
            oldest: {
              seq,
              type: e.type,
              at: e.at,
              attempts: 1,
              nextAttemptAt: null,
              lastError: scrubServerText(result.error),
            },
          });
          return;
        }
      }),
    );
    clock.clearTimeout(timer);
    left = { waiting: failures, unrecorded: true };
  }
}
