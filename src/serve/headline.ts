/**
 * A run's state in one line, in the progress line's words: RUNNING, PAUSED by ..., HELD by rule ...,
 * WAITING for a window, STOPPING, DONE, FAILED. Pure, on `status --json`'s document, so the list of
 * runs and the page say what `status` says.
 */
import type { StatusReport } from '../report/status.js';

type Said = Pick<StatusReport, 'state' | 'now' | 'step' | 'dryRun' | 'quarantined' | 'error' | 'listOutcome'>;

export function headlineOf(r: Said): string {
  const dry = r.dryRun ? 'DRY RUN ' : '';
  const quarantined = r.quarantined.length;
  switch (r.state) {
    case 'running': {
      const now = r.now;
      const step = r.step ? ` (${r.step})` : '';
      if (now?.stopped) return `${dry}${now.full}${now.detail ? `: ${now.detail}` : ''}`;
      return `${dry}RUNNING${step}${now ? `, ${now.full}` : ''}`;
    }
    case 'done':
      return `${dry}DONE${r.listOutcome ? `: ${r.listOutcome}` : ''}`;
    case 'doneWithQuarantine':
      return `${dry}DONE with ${quarantined} quarantined`;
    case 'failed':
      return `${dry}FAILED${r.error ? `: ${r.error.message}` : ''}`;
    case 'stopped':
      return `${dry}STOPPED on request; run again continues it`;
    case 'interrupted':
      return `${dry}INTERRUPTED${r.step ? ` in ${r.step}` : ''}; run again continues it`;
    case 'not started':
      return `${dry}NOT STARTED`;
    default:
      return `${dry}${r.state.toUpperCase()}`;
  }
}
