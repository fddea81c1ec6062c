/**
 * The worker's deliveries while the run goes: the audit log read into notifications, and each
 * idle target's oldest due notification sent, its outcome recorded, one at a time per target.
 */
import { EVENTS_VERSION } from '../events/events-version.js';
import { toRunEvents } from '../events/run-events-of-audit.js';
import type { RunEvent } from '../events/run-events.js';
import { scrubServerText } from '../secrets/registry.js';
import type { NotifyEntry, PendingNotification } from '../store/types.js';
import { backoffMs } from './policy.js';
import type { DeliveryResult } from './policy.js';
import type { Target } from './targets.js';
import { eventLine } from './text.js';
import { entryOf, guardedRead, guardedWrite, notifiedRun, senderOf } from './worker-state.js';
import type { WorkerState } from './worker-state.js';

/** Audit events read per page. */
const PAGE = 1_000;

/** A receiver's words in a warning line: its start (the checkpoint keeps them whole). */
const cutShort = (text: string) => (text.length > 100 ? `${text.slice(0, 97)}...` : text);

/** Every audit event committed since the cursor, turned into notifications with the cursor in one transaction. */
export function readLog(s: WorkerState): void {
  const { run, store, sink } = s;
  if (!run || !store || !sink || s.broken) return;
  for (;;) {
    const page = run.store.readEvents(s.cursor, PAGE);
    if (page.length === 0) return;
    const entries: NotifyEntry[] = [];
    for (const e of page) for (const body of toRunEvents(e, sink)) entries.push(entryOf(s, e.seq, e.at, body));
    const upTo = page[page.length - 1]!.seq;
    if (!guardedWrite(s, () => store.enqueue(entries, upTo))) return;
    s.cursor = upTo;
    if (page.length < PAGE) return;
  }
}

const eventOf = (n: PendingNotification): RunEvent =>
  ({ v: EVENTS_VERSION, seq: n.seq, at: new Date(n.at).toISOString(), type: n.type, ...n.body }) as RunEvent;

async function deliver(s: WorkerState, t: Target, n: PendingNotification): Promise<void> {
  const store = s.store!;
  const abort = new AbortController();
  s.busy.set(t.key, abort);
  let attempt = n.attempts + 1;
  // Counted before it is made, so an attempt a crash cuts short counts too; none without the count.
  if (!guardedWrite(s, () => (attempt = store.attempted(t.key, n.seq)))) {
    s.busy.delete(t.key);
    return settle(s);
  }
  const event = eventOf(n);
  let result: DeliveryResult;
  try {
    result = await senderOf(s, t.plan.kind).send({
      target: t,
      event,
      line: eventLine(notifiedRun(s), event),
      run: notifiedRun(s),
      attempt,
      signal: abort.signal,
    });
  } catch (err) {
    result = { ok: false, permanent: false, error: (err as Error).message };
  }
  const now = s.run!.clock.now();
  if (result.ok) guardedWrite(s, () => store.delivered(t.key, n.seq, now));
  else {
    const error = scrubServerText(result.error);
    guardedWrite(s, () => store.failed(t.key, n.seq, error, result.permanent ? null : now + backoffMs(attempt)));
    if (s.final) s.doneAtEnd.add(t.key);
    if (!s.warned.has(t.key)) {
      s.warned.add(t.key);
      s.opts.onWarning(
        `notify: ${t.label}: ${cutShort(error)} (${result.permanent ? 'not tried again by this run' : 'tried again with backoff'}; \`status\` lists what waits)`,
      );
    }
  }
  s.busy.delete(t.key);
  pump(s);
}

/** Starts the next delivery of every idle target whose oldest notification is due. */
export function pump(s: WorkerState): void {
  const { run, store } = s;
  if (!run || !store || s.broken || s.closing) return settle(s);
  const now = run.clock.now();
  for (const t of s.targets) {
    if (s.busy.has(t.key) || s.doneAtEnd.has(t.key)) continue;
    const next = guardedRead(() => store.head(t.key));
    if (!next) continue;
    // At the end every waiting notification gets its attempt now, backoff or not.
    if (!s.final && next.nextAttemptAt !== null && next.nextAttemptAt > now) continue;
    void deliver(s, t, next);
  }
  settle(s);
}

function settle(s: WorkerState): void {
  if (s.busy.size === 0 && s.onIdle) s.onIdle();
}

/** The log read and the due deliveries started: what every tick and the run's progress do. */
export function tick(s: WorkerState): void {
  try {
    readLog(s);
    pump(s);
  } catch {
    // A busy checkpoint: the next tick tries again.
  }
}
