/**
 * The worker's end: one more attempt for everything waiting, within the end's wait, and after a
 * lost lease the run's last events sent once, unrecorded. Each says what is left undelivered.
 */
import { EVENTS_VERSION } from '../events/events-version.js';
import type { RunEvent } from '../events/run-events.js';
import { scrubServerText } from '../secrets/registry.js';
import type { Clock } from '../shared/clock.js';
import type { NotifyEntry } from '../store/types.js';
import { pump } from './delivery.js';
import type { DeliveryResult } from './policy.js';
import { eventLine } from './text.js';
import type { NotifyLeft } from './types.js';
import { guardedRead, notifiedRun, senderOf } from './worker-state.js';
import type { WorkerState } from './worker-state.js';

/** How long the end's wait goes on before the run says what it waits for. */
const SAY_SLOW_MS = 1_000;
/** After the end's wait, how long aborted attempts get to settle and be recorded. */
const SETTLE_MS = 2_000;

/** The end: one more attempt for everything waiting, until each target failed once or the wait is over. */
export async function finalPass(s: WorkerState, waitMs: number, clock: Clock): Promise<void> {
  s.final = true;
  const idle = new Promise<void>((done) => (s.onIdle = done));
  pump(s);
  // A target slow to answer holds the final report back: say why, once it is noticeable.
  const slow = clock.setTimeout(() => {
    if (s.busy.size > 0)
      s.opts.onNote(`notify: delivering the run's last notifications (at most ${Math.round(waitMs / 1000)}s)`);
  }, SAY_SLOW_MS);
  slow.unref();
  const timer = new Promise<'late'>((done) => clock.setTimeout(() => done('late'), waitMs).unref());
  if ((await Promise.race([idle, timer])) === 'late') await abortAll(s, clock);
  clock.clearTimeout(slow);
  s.onIdle = null;
  const waiting = guardedRead(() => s.store!.waiting()) ?? [];
  const inPlan = (key: string) => s.targets.some((t) => t.key === key);
  if (waiting.length > 0)
    s.left = { waiting: waiting.map((w) => ({ ...w, inPlan: inPlan(w.target) })), unrecorded: false };
}

/** Attempts still running when the end's wait is over are aborted, then recorded as failed. */
async function abortAll(s: WorkerState, clock: Clock): Promise<void> {
  s.closing = true;
  if (s.busy.size === 0) return;
  const settled = new Promise<void>((done) => (s.onIdle = done));
  for (const a of s.busy.values()) a.abort();
  await Promise.race([settled, new Promise((done) => clock.setTimeout(() => done(undefined), SETTLE_MS).unref())]);
}

/**
 * After a lost lease the checkpoint is another process's: the run's last events go out once, to
 * the targets that want them, without being recorded.
 */
export async function sendUnrecorded(
  s: WorkerState,
  entries: NotifyEntry[],
  waitMs: number,
  clock: Clock,
): Promise<void> {
  const abort = new AbortController();
  const timer = clock.setTimeout(() => abort.abort(), waitMs);
  timer.unref();
  const failures: NotifyLeft['waiting'] = [];
  // Numbered after this process's last notification; the checkpoint keeps none of them.
  const after = guardedRead(() => s.store!.lastSeq()) ?? 0;
  await Promise.all(
    s.targets.map(async (t) => {
      const mine = entries.filter((e) => e.targets.some((ref) => ref.key === t.key));
      for (const [i, e] of mine.entries()) {
        const seq = after + entries.indexOf(e) + 1;
        const event = { v: EVENTS_VERSION, seq, at: new Date(e.at).toISOString(), ...e.body } as RunEvent;
        const result = await senderOf(s, t.plan.kind)
          .send({
            target: t,
            event,
            line: eventLine(notifiedRun(s), event),
            run: notifiedRun(s),
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
  s.left = { waiting: failures, unrecorded: true };
}
