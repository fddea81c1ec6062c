/**
 * What waits to be delivered to the plan's `notify:` targets, in words: `status` shows it while
 * anything is undelivered, and a run's end says what it leaves for the next run. Pure. Lines stay
 * within 80 columns but for a long target label: a receiver's error is cut short (the checkpoint
 * keeps it whole).
 */
import type { NotifyTargetView } from '../store/types.js';
import { escapeControls } from './escape.js';

/** A target's waiting deliveries, and whether the plan still lists it. */
export type WaitingNotifications = NotifyTargetView & { inPlan?: boolean };

/** What of a receiver's error a line shows. */
const ERROR_WIDTH = 66;

/** How many notifications wait, over every target. */
export function countWaiting(views: readonly WaitingNotifications[]): number {
  return views.reduce((n, v) => n + v.waiting, 0);
}

const time = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const cut = (text: string, width: number) => (text.length > width ? `${text.slice(0, width - 3)}...` : text);

/**
 * Per target (indented by two): how many wait and the oldest of them; since when, its attempts,
 * and when it is tried again, by the live run (`running`) or by the plan's next run; what the
 * target last answered.
 */
export function waitingLines(views: readonly WaitingNotifications[], running: boolean): string[] {
  const lines: string[] = [];
  for (const v of views) {
    const o = v.oldest;
    const when = !running
      ? 'the next run of this plan sends them'
      : o.nextAttemptAt === null
        ? 'given up by this run: the next run tries again'
        : `next attempt ${time(o.nextAttemptAt)}`;
    lines.push(`  ${escapeControls(v.label)}: ${v.waiting} waiting, the oldest seq ${o.seq} (${o.type})`);
    if (v.inPlan === false) lines.push('    no longer in the plan: sent once the plan lists it again');
    lines.push(`    since ${time(o.at)}, ${o.attempts} attempt(s); ${when}`);
    if (o.lastError) lines.push(`    last: ${cut(escapeControls(o.lastError), ERROR_WIDTH)}`);
  }
  return lines;
}
