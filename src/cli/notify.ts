/**
 * `run`'s notifications (the plan's `notify:`): the delivery worker with the CLI's words for how a
 * run ended (`run.finished` with the exit code the process returns), its warnings on standard
 * error, and at the end what it leaves undelivered for the next run.
 */
import { createNotifier } from '../notify/worker.js';
import type { Notifier } from '../notify/worker.js';
import type { NotifyLeft } from '../notify/types.js';
import { redact } from '../plan/secrets.js';
import { countWaiting, waitingLines } from '../report/notifications.js';
import type { RunOutcome } from '../runtime/types.js';
import { scrubServerText } from '../secrets/registry.js';
import type { CommandContext } from './context.js';
import { finishedOfError, finishedOfOutcome } from './events-file.js';

/** The notifier of one `run`; `exitCodeOf` is the exit code the CLI gives an outcome. */
export function createRunNotifier(
  planFile: string,
  ctx: CommandContext,
  exitCodeOf: (outcome: RunOutcome) => number,
): Notifier {
  return createNotifier({
    planFile,
    cwd: ctx.cwd,
    env: ctx.env,
    lastEvents: (end) =>
      'outcome' in end
        ? [finishedOfOutcome(end.outcome, exitCodeOf(end.outcome))]
        : finishedOfError(end.error, (s) => scrubServerText(redact(s))),
    onWarning: (message) => ctx.stderr.write(`warning: ${message}\n`),
    onNote: (message) => ctx.stderr.write(`note: ${message}\n`),
  });
}

/** Says what the run's end left undelivered (nothing when all went out). */
export function sayUndelivered(left: NotifyLeft | null, out: Pick<CommandContext, 'stderr'>): void {
  if (!left || left.waiting.length === 0) return;
  const n = countWaiting(left.waiting);
  const head = left.unrecorded
    ? `note: notify: ${n} notification(s) not delivered (the run lost its lock: sent once, not kept):`
    : `note: notify: ${n} notification(s) not delivered; the next run sends them:`;
  out.stderr.write(`${[head, ...waitingLines(left.waiting, false)].join('\n')}\n`);
}
