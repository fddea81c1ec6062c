/**
 * One line per event, for people: a Slack message (`format: slack`) and `SHARDMOVE_TEXT` for a
 * command. Every type has its line (the table's type names them all, so a new event fails the build
 * until it has one). Text from the instance (GitLab's error messages) is quoted with its control
 * characters escaped, and Slack's three control characters (`&`, `<`, `>`) as Slack asks, so an
 * error message holding `<!channel>` cannot ping a whole channel.
 */
import type { RunEvent, RunEventType } from '../events/run-events.js';
import { formatPlanDuration } from '../time/durations.js';
import { escapeControls } from '../report/escape.js';
import { scrubServerText } from '../secrets/registry.js';
import type { NotifiedRun } from './types.js';
import { CONSOLE_PAUSE, stopByWords } from '../events/hold.js';

type Line<T extends RunEventType> = (e: Extract<RunEvent, { type: T }>) => string;

/** Instance text kept short: a line, not a page. */
const MAX_QUOTE = 300;
const quote = (text: string | null | undefined): string => {
  // Scrubbed before it is cut: a cut must not leave a piece of a secret that the whole would have lost.
  const t = escapeControls(scrubServerText(String(text ?? '')))
    .replace(/\s+/g, ' ')
    .trim();
  return t.length > MAX_QUOTE ? `${t.slice(0, MAX_QUOTE - 3)}...` : t;
};
const item = (e: { kind: string; source: string; id: number }) => `${e.kind} ${e.id} on ${e.source}`;
const ms = (n: number) => (n >= 1000 ? formatPlanDuration(Math.round(n / 1000) * 1000) : `${n}ms`);

/** A pause in the progress line's words: who or what holds the run, and why when that says more. */
const paused: Line<'run.paused'> = (e) => {
  const why = quote(e.reason);
  switch (e.by) {
    case 'control':
      return e.reason === CONSOLE_PAUSE ? 'PAUSED by the console' : 'PAUSED by shardmove control';
    case 'breaker': {
      const count = /^paused by the failure breaker: (\d+ moves? failed within \S+)/.exec(e.reason)?.[1];
      // The breaker's reason names the run's own control command (actors/drain/breaker.ts).
      const unpause =
        /then (shardmove control \S.* --unpause)$/.exec(e.reason)?.[1] ?? 'shardmove control PLAN --unpause';
      return `PAUSED by the failure breaker${count ? `: ${count}` : ''}; \`${unpause}\` goes on`;
    }
    case 'rule':
      return `HELD by rule ${quote(e.rule ?? '')}: ${why}`;
    case 'capacity':
      return `HELD: no room (${quote(e.rule ?? 'capacity')}): ${why}`;
    case 'window':
      return `WAITING for a maintenance window${e.until ? ` until ${e.until}` : e.until === null ? ' (none opens again)' : ''}`;
    case 'throttle':
      return `HELD by the throttle: ${why}`;
    case 'queue':
      return `HELD: the bulk move's job waits in Sidekiq's queue: ${why}`;
    case 'ratelimit':
      return `HELD by the instance's rate limit${e.until ? ` until ${e.until}` : ''}: ${why}`;
    case 'outage':
      return `HELD: ${why}`;
  }
};

const LINES: { [T in RunEventType]: Line<T> } = {
  'run.started': (e) => `run ${e.resumed ? 'resumed' : 'started'}${e.dryRun ? ' (dry run)' : ''}, pid ${e.pid}`,
  'step.started': (e) => `step ${e.step} started`,
  'step.ended': (e) => `step ${e.step} ended ${e.outcome} after ${ms(e.durationMs)}`,
  'move.scheduled': (e) => `${item(e)}: move ${e.moveId} scheduled${e.bulk ? ' (bulk)' : ''}`,
  'move.finished': (e) =>
    `${item(e)}: move ${e.moveId} finished${e.cleanupFailed ? `, cleanup failed: ${quote(e.error)}` : ''}`,
  'move.failed': (e) =>
    `${item(e)}: move ${e.moveId} failed${e.class ? ` (${e.class})` : ''}: ${quote(e.error ?? 'no reason given')}`,
  'move.quarantined': (e) =>
    `${item(e)} QUARANTINED${e.attempts === null ? '' : ` after ${e.attempts} attempt(s)`}${e.class ? ` (${e.class})` : ''}: ${quote(e.reason)}`,
  'cap.changed': (e) => `cap ${e.cap}${e.limit ? ` (${e.limit})` : ''}: ${quote(e.reason)}`,
  'run.paused': (e) => paused(e),
  'run.unpaused': (e) => `goes on (was held by ${e.by}), cap ${e.cap}`,
  'breaker.tripped': (e) => `failure breaker TRIPPED: ${e.failures} moves failed within ${ms(e.withinMs)}`,
  'window.opened': (e) => `maintenance window ${quote(e.window)} opened${e.closesAt ? `, closes ${e.closesAt}` : ''}`,
  'window.closed': (e) => `outside every maintenance window${e.nextOpensAt ? `, next opens ${e.nextOpensAt}` : ''}`,
  progress: (e) => `${e.done}/${e.total} done, ${e.inFlight} in flight, ${e.quarantined} quarantined`,
  'network.split': (e) => `fork network ${e.network} split over several destinations`,
  'lock.taken_over': (e) =>
    `took over the run lock of pid ${e.previous.pid} on ${quote(e.previous.host)} (${e.reason})`,
  'lease.lost': (e) =>
    `LOST the run lock${e.holder ? ` to pid ${e.holder.pid} on ${quote(e.holder.host)}` : ''}: this process stopped`,
  'run.stopping': (e) =>
    `STOPPING on request (${e.by === 'control' ? 'shardmove control --stop' : (stopByWords(e.by) ?? 'the stop file')}), ${e.inFlight} move(s) in flight followed to their end`,
  'run.finished': (e) =>
    `run finished ${e.outcome} (exit ${e.exitCode})${e.quarantined ? `, ${e.quarantined} quarantined` : ''}${e.error ? `: ${quote(e.error.message)} (${e.error.code})` : ''}`,
};

/** The event in one line: `shardmove <plan> on <host>: <what happened>`. */
export function eventLine(run: Pick<NotifiedRun, 'plan' | 'host'>, e: RunEvent): string {
  const line = (LINES[e.type] as (e: RunEvent) => string)(e);
  return `shardmove ${run.plan}${run.host ? ` on ${quote(run.host)}` : ''}: ${line}`;
}

/**
 * A notification as JSON (a webhook's `format: json` body, a command's standard input): the
 * `--events` object and, under `run`, which run it is about.
 */
export function notificationJson(event: RunEvent, run: NotifiedRun): string {
  return JSON.stringify({ ...event, run });
}

/** The line as Slack's `text` takes it: `&`, `<` and `>` escaped (Slack's formatting rules). */
export function slackText(line: string): string {
  return line.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
