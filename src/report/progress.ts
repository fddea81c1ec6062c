/**
 * The live progress output: on a TTY one line redrawn in place (at most 4 times a second); otherwise
 * a summary line every 10 seconds, so CI logs stay readable.
 */
import type { CapData } from '../events/vocabulary.js';
import { formatWindowTime } from '../time/windows.js';
import type { StatusSummary } from '../store/types.js';
import { formatApproxDuration, progressByKind, rateAndEta } from './summary.js';

export interface ProgressView {
  /** e.g. "drain nfs-1/projects". */
  step: string;
  summary: StatusSummary;
  elapsedMs: number;
  /** The cap in force the run recorded last (null before its first drain). */
  cap?: CapData | null;
  /** The plan's schedule zone, for the next window's time. */
  timezone?: string;
}

/** One line: the step, each kind's done/total, in flight, failed and retrying, quarantined; the rate and the ETA. */
export function renderProgressLine(view: ProgressView): string {
  // Zero counts are left out so the line fits a terminal.
  const kinds = progressByKind(view.summary)
    .map((p) => {
      const extra = [
        p.inFlight > 0 ? `${p.inFlight} in flight` : '',
        p.retrying > 0 ? `${p.retrying} failed, retrying` : '',
        p.quarantined > 0 ? `${p.quarantined} quarantined` : '',
        p.staying > 0 ? `${p.staying} staying` : '',
      ].filter(Boolean);
      return `${p.kind} ${p.done}/${p.total}${extra.length > 0 ? ` (${extra.join(', ')})` : ''}`;
    })
    .join(', ');
  const rate = rateAndEta(view.summary, view.elapsedMs);
  const override = describeCap(view.cap ?? null, view.timezone ?? 'UTC');
  // Rate and ETA before the per-kind counts: a narrow terminal cuts the end of the line.
  return `[${formatApproxDuration(view.elapsedMs)}] ${view.step}${override} | ${Math.round(rate.perMinute)} moves/min, ETA ${formatApproxDuration(rate.etaMs)}${kinds ? ` | ${kinds}` : ''}`;
}

/** The cap in force in a few words, when it is not simply the plan's. */
function describeCap(c: CapData | null, timezone: string): string {
  if (!c) return '';
  switch (c.limit) {
    case 'paused':
      // The operator knows why they paused; a pause nobody asked for says who did.
      return c.reason.startsWith('paused by the failure breaker')
        ? ' PAUSED by the failure breaker (shardmove status says why)'
        : ' PAUSED';
    case 'window':
      return c.until != null
        ? ` WAITING for the next window (${formatWindowTime(c.until, timezone)})`
        : ' WAITING: outside every maintenance window';
    case 'rule':
      return ` HELD by ${c.rule ? `rule ${c.rule}` : 'a throttle rule'}${c.since != null ? ` since ${new Date(c.since).toISOString()}` : ''} (${c.reason})`;
    case 'throttle':
      return ` (cap ${c.cap}: ${c.reason})`;
    case 'control':
      return ` (cap ${c.cap})`;
    case 'plan':
      return '';
  }
}

export interface ProgressOutput {
  /** Draws now if the throttle allows (call on every progress event). */
  poke(): void;
  /** Stops the timer and ends the line on a TTY. */
  stop(): void;
}

/** Starts drawing `read()` to `stream` until `stop()`. `read` may throw (e.g. a busy database): that draw is skipped. */
export function startProgress(
  stream: NodeJS.WritableStream & { isTTY?: boolean; columns?: number },
  read: () => ProgressView,
): ProgressOutput {
  const tty = stream.isTTY === true;
  const baseGapMs = tty ? 250 : 10_000;
  // Reading the counts is a synchronous query: on a huge checkpoint, draw less often so the
  // progress line never takes more than ~5% of the event loop.
  let gapMs = baseGapMs;
  let last = 0;
  let drawn = false;
  const draw = () => {
    const now = Date.now();
    if (now - last < gapMs) return;
    last = now;
    let line: string;
    try {
      line = renderProgressLine(read());
    } catch {
      return;
    } finally {
      gapMs = Math.max(baseGapMs, (Date.now() - now) * 20);
    }
    if (tty) {
      const width = stream.columns ?? 160;
      stream.write(`\r\x1b[2K${line.length > width - 1 ? `${line.slice(0, width - 2)}…` : line}`);
      drawn = true;
    } else {
      stream.write(`${line}\n`);
    }
  };
  // Non-TTY: the first line comes after one interval, so short runs stay quiet.
  if (!tty) last = Date.now();
  const timer = setInterval(draw, tty ? 250 : 1_000);
  timer.unref();
  return {
    poke: () => {
      if (tty) draw();
    },
    stop() {
      clearInterval(timer);
      if (tty && drawn) stream.write('\r\x1b[2K');
    },
  };
}
