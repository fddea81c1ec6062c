/**
 * What waits to be delivered to the plan's `notify:` targets, in words: `status` shows it while
 * anything is undelivered, and a run's end says what it leaves for the next run. Pure.
 */
import type { NotifyTargetView } from '../store/types.js';
import { escapeControls } from './escape.js';

/** A target's waiting deliveries, and whether the plan still lists it. */
export type WaitingNotifications = NotifyTargetView & { inPlan?: boolean };

/** How many notifications wait, over every target. */
export function countWaiting(views: readonly WaitingNotifications[]): number {
  return views.reduce((n, v) => n + v.waiting, 0);
}

/**
 * One line per target (indented by two), then what its oldest waiting delivery last heard and
 * when it is tried again: by the live run (`running`), or by the plan's next run.
 */
export function waitingLines(views: readonly WaitingNotifications[], running: boolean): string[] {
  const lines: string[] = [];
  for (const v of views) {
    const o = v.oldest;
    const gone = v.inPlan === false ? ' (no longer in the plan: sent once it is listed again)' : '';
    const when = !running
      ? 'the next run of this plan sends it'
      : o.nextAttemptAt === null
        ? 'given up by this run (the same answer would come): the next run tries again'
        : `next attempt ${new Date(o.nextAttemptAt).toISOString()}`;
    lines.push(
      `  ${escapeControls(v.label)}: ${v.waiting} waiting since ${new Date(o.at).toISOString()} (${o.type}, seq ${o.seq})${gone}`,
    );
    lines.push(`    ${o.attempts} attempt(s)${o.lastError ? `, last: ${escapeControls(o.lastError)}` : ''}; ${when}`);
  }
  return lines;
}
