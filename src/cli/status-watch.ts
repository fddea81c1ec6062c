/**
 * `shardmove status PLAN --watch [--interval D]`: status again and again, from the same code path
 * as one `status` (the checkpoint read-only, no lock taken), until Ctrl-C, which exits 0.
 *
 * - On a terminal: the screen redrawn in place, each line cut to the terminal's width, the cursor
 *   hidden while it watches and shown again at the end. One frame is one write, so an interrupt
 *   never leaves half of one.
 * - In a pipe or a file: one block per interval, each after a header line with the time.
 * - With --json: one JSON document per line per interval (NDJSON).
 *
 * A checkpoint that is not there yet (a watch started before its run) is said and waited for.
 * The pure parts (the interval, a frame) are exported for the tests.
 */
import { parseDuration } from '../time/durations.js';
import { escapeControls } from '../report/escape.js';
import type { Clock } from '../shared/clock.js';
import { ArgsError } from './errors.js';

/** The interval when --interval is not given, and the shortest one accepted. */
export const WATCH_INTERVAL_DEFAULT_MS = 2000;
export const WATCH_INTERVAL_MIN_MS = 1000;

/** --interval's milliseconds, or an ArgsError (exit 2) naming what is wrong with it. */
export function watchIntervalOf(opts: { watch?: boolean; interval?: string }): number {
  if (opts.interval === undefined) return WATCH_INTERVAL_DEFAULT_MS;
  if (!opts.watch) throw new ArgsError('status: --interval is how often --watch redraws: add --watch');
  const parsed = parseDuration(opts.interval);
  if (!parsed.ok) throw new ArgsError(`status: --interval ${JSON.stringify(opts.interval)}: ${parsed.reason}`);
  if (parsed.ms < WATCH_INTERVAL_MIN_MS)
    throw new ArgsError(`status: --interval ${JSON.stringify(opts.interval)} is too short; the shortest is 1s`);
  return parsed.ms;
}

const HIDE_CURSOR = '\x1b[?25l';
export const SHOW_CURSOR = '\x1b[?25h';
const HOME = '\x1b[H';
const ERASE_TO_LINE_END = '\x1b[K';
const ERASE_BELOW = '\x1b[J';

/** `line` cut to `width` characters (code points), the cut said by a last `…`. */
export function fitLine(line: string, width: number): string {
  const chars = [...line];
  if (chars.length <= width) return line;
  return width <= 1 ? chars.slice(0, width).join('') : `${chars.slice(0, width - 1).join('')}…`;
}

/** A line that holds a command to paste: never cut (a cut command does not do what it says). */
const COMMAND = /(^\s*|`)shardmove /;

/**
 * One terminal frame: cursor home, each line of `text` escaped (names come from the instance),
 * cut to `columns` and its rest of line erased, then everything below erased: drawn over the
 * previous frame without clearing the screen first, so it does not flicker. A line holding a
 * command (`shardmove ...`) is never cut: it is printed whole, and the terminal wraps it onto as
 * many rows as it needs (a copy of it pastes as one command). At most `rows - 1` rows, so the
 * terminal never scrolls (which would break the redraw in place).
 */
export function watchFrame(text: string, size: { columns?: number; rows?: number }): string {
  const columns = size.columns && size.columns > 0 ? size.columns : 80;
  const lines = text
    .replace(/\n$/, '')
    .split('\n')
    .map((l) => {
      const escaped = escapeControls(l);
      const whole = COMMAND.test(escaped);
      const shown = whole ? escaped : fitLine(escaped, columns);
      return { shown, rows: Math.max(1, Math.ceil([...shown].length / columns)) };
    });
  let kept = lines;
  if (size.rows && size.rows > 1 && lines.reduce((n, l) => n + l.rows, 0) > size.rows - 1) {
    kept = [];
    let used = 0;
    for (const l of lines) {
      if (used + l.rows > size.rows - 2) break;
      kept.push(l);
      used += l.rows;
    }
    const cut = lines.length - kept.length;
    kept.push({ shown: `… ${cut} more lines (a taller terminal shows them)`, rows: 1 });
  }
  const body = kept.map((l) => `${l.shown}${ERASE_TO_LINE_END}`).join('\n');
  return `${HIDE_CURSOR}${HOME}${body}\n${ERASE_BELOW}`;
}

/** A pipe's block: a header line with the time, then the status. */
export function watchBlock(text: string, at: number): string {
  const when = new Date(at)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
  return `=== shardmove status at ${when} ===\n${text.endsWith('\n') ? text : `${text}\n`}`;
}

/** What one look at the checkpoint gave: the status as text (or one JSON line), or no checkpoint yet. */
export type WatchLook = { text: string } | { missing: string; text: string };

type Out = NodeJS.WritableStream & { isTTY?: boolean; columns?: number; rows?: number };

/** Resolves once `text` is handed to the operating system; false when the reader is gone (EPIPE). */
function writeAll(out: Out, text: string): Promise<boolean> {
  return new Promise((done) => {
    out.write(text, (err?: Error | null) => done(!err));
  });
}

/** The raw terminal behind our escaping stream, for a frame we escaped ourselves. */
export type RawOf = (out: Out) => Out;

/**
 * Looks every `intervalMs` until `signal` aborts (Ctrl-C) or the reader of a pipe leaves; 0 then.
 * `look` is one status (the same as `status` without --watch).
 */
export async function watchStatus(
  look: () => Promise<WatchLook>,
  opts: {
    intervalMs: number;
    json: boolean;
    signal: AbortSignal;
    stdout: Out;
    stderr: Out;
    raw: RawOf;
    /** The time of a pipe's header line and the wait between looks. */
    clock: Pick<Clock, 'now' | 'sleep'>;
  },
): Promise<number> {
  const terminal = opts.stdout.isTTY === true && !opts.json;
  const screen = terminal ? opts.raw(opts.stdout) : opts.stdout;
  let saidMissing: string | null = null;
  try {
    while (!opts.signal.aborted) {
      const got = await look();
      if ('missing' in got && saidMissing !== got.missing) {
        saidMissing = got.missing;
        if (!terminal)
          opts.stderr.write(`shardmove status: no checkpoint yet at ${got.missing}; waiting for a run to make it\n`);
      } else if (!('missing' in got)) saidMissing = null;
      if (opts.signal.aborted) break;
      const text = opts.json
        ? got.text
        : terminal
          ? watchFrame(got.text, { columns: opts.stdout.columns, rows: (opts.stdout as { rows?: number }).rows })
          : watchBlock(got.text, opts.clock.now());
      if (!(await writeAll(screen, text))) return 0;
      try {
        await opts.clock.sleep(opts.intervalMs, opts.signal);
      } catch {
        break;
      }
    }
  } finally {
    if (terminal) await writeAll(screen, SHOW_CURSOR);
  }
  return 0;
}
