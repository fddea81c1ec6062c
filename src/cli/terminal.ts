/**
 * Everything main.ts writes goes through a TerminalOutput: text from the instance (names, error
 * messages) has its control characters escaped (../report/escape.ts), so no name can clear the
 * screen, retitle the window or hide what a line says. Two writers put control sequences of their
 * own on a terminal, and only they get past the escape, each by its own door:
 *
 * - the progress line, kept as the terminal's one live line (`showLive`): the renderer escaped the
 *   text in it and added its colours; whatever else is written meanwhile, to standard output or
 *   standard error, appears above it, and the line is drawn again below;
 * - a prompt (src/cli/confirm.ts), which hands the readline library `promptStream()`: readline
 *   redraws its line with cursor codes, and the question is ours.
 *
 * Plain objects, not a Proxy: what a TerminalOutput is and does is written here.
 */
import { EventEmitter } from 'node:events';
import { escapeControls } from '../report/escape.js';

export { escapeControls } from '../report/escape.js';

type Target = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
type WriteCallback = (err?: Error | null) => void;

/** Our own redraw of a progress line (`shardmove copy`'s): carriage return, then erase the line. */
// eslint-disable-next-line no-control-regex -- the escape sequence shardmove itself writes
const OWN_REDRAW = /^\r\x1b\[2?K/;
const ERASE_LINE = '\r\x1b[2K';

/** A chunk as it may reach a terminal: escaped, except a leading redraw of our own progress line. */
export function terminalText(chunk: string): string {
  const own = OWN_REDRAW.exec(chunk)?.[0] ?? '';
  return own + escapeControls(chunk.slice(own.length));
}

/**
 * The live line of a terminal that standard output and standard error share: shown by one of them,
 * erased before anything else is written to either, and drawn again once that text ended its line.
 */
export class LiveLine {
  private line: string | null = null;
  private owner: Target | null = null;

  /** Shows `line` (already escaped and coloured) on `owner`, in place of the previous one. */
  show(owner: Target, line: string): void {
    this.owner = owner;
    this.line = line;
    owner.write(`${ERASE_LINE}${line}`);
  }

  /** Erases the live line and forgets it. */
  clear(): void {
    if (this.line !== null) this.owner?.write(ERASE_LINE);
    this.line = null;
    this.owner = null;
  }

  /** Writes `text` to `target` above the live line: erased first, drawn again after a whole line. */
  around(target: Target, text: string, cb?: WriteCallback): boolean {
    if (this.line === null || !this.owner) return cb ? target.write(text, cb) : target.write(text);
    this.owner.write(ERASE_LINE);
    const ok = cb ? target.write(text, cb) : target.write(text);
    if (text.endsWith('\n')) this.owner.write(this.line);
    else this.line = null;
    return ok;
  }
}

/**
 * A stream that escapes control characters in every chunk (strings and buffers alike, read as
 * UTF-8) before `target` gets it. Its terminal properties are the target's; 'drain' and 'resize'
 * are passed on.
 */
export class TerminalOutput extends EventEmitter implements NodeJS.WritableStream {
  writable = true;

  constructor(
    private readonly target: Target,
    /** Shared with the other stream of the same terminal; null when this one is no terminal. */
    private readonly live: LiveLine | null = null,
  ) {
    super();
    target.on('drain', () => this.emit('drain'));
    if (target.isTTY) target.on('resize', () => this.emit('resize'));
  }

  get isTTY(): boolean {
    return this.target.isTTY === true;
  }

  get columns(): number | undefined {
    return this.target.columns;
  }

  write(chunk: Uint8Array | string, encoding?: BufferEncoding | WriteCallback, cb?: WriteCallback): boolean {
    const callback = typeof encoding === 'function' ? encoding : cb;
    const text = terminalText(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return this.live ? this.live.around(this.target, text, callback) : this.target.write(text, callback ?? noop);
  }

  /** Writes a last chunk, if any; the process's own streams are not closed. */
  end(chunk?: unknown, encoding?: unknown, cb?: unknown): this {
    const callback = [chunk, encoding, cb].find((a): a is () => void => typeof a === 'function');
    if (typeof chunk === 'string' || chunk instanceof Uint8Array) this.write(chunk);
    callback?.();
    return this;
  }

  /** Replaces the terminal's live line with `line` (escaped and coloured by its renderer). */
  showLive(line: string): void {
    if (this.live) this.live.show(this.target, line);
    else this.target.write(`${ERASE_LINE}${line}`);
  }

  /**
   * Writes a whole line a renderer escaped itself, colours kept (the progress line in a file or a
   * pipe under FORCE_COLOR); above the live line, if one is shown.
   */
  writeRendered(line: string): void {
    const text = `${line}\n`;
    if (this.live) this.live.around(this.target, text);
    else this.target.write(text);
  }

  /** Erases the live line. */
  clearLive(): void {
    if (this.live) this.live.clear();
    else this.target.write(ERASE_LINE);
  }

  /**
   * The terminal itself, for the readline library's prompt, whose cursor codes must arrive as they
   * are. Only for text of our own: the live line is erased first.
   */
  promptStream(): Target {
    this.live?.clear();
    return this.target;
  }
}

const noop = () => undefined;

/** `stream` with control characters escaped (one stream alone: no live line shared with another). */
export function terminalSafe(stream: Target): TerminalOutput {
  return new TerminalOutput(stream, stream.isTTY ? new LiveLine() : null);
}

/**
 * The process's standard output and standard error, escaped. When both are terminals they are taken
 * to be the same one and share its live line, so a warning on standard error never lands inside
 * the progress line on standard output.
 */
export function terminalStreams(stdout: Target, stderr: Target): { stdout: TerminalOutput; stderr: TerminalOutput } {
  if (stdout.isTTY && stderr.isTTY) {
    const live = new LiveLine();
    return { stdout: new TerminalOutput(stdout, live), stderr: new TerminalOutput(stderr, live) };
  }
  return { stdout: terminalSafe(stdout), stderr: terminalSafe(stderr) };
}

/** The terminal behind a stream main.ts made (or the stream itself): what readline draws a prompt on. */
export function promptStreamOf(stream: Target): Target {
  return stream instanceof TerminalOutput ? stream.promptStream() : stream;
}

/**
 * Colours on this stream: a terminal (not `TERM=dumb`), unless `NO_COLOR` is set to anything but
 * the empty string (no-color.org); `FORCE_COLOR` (anything but `0` or `false`) turns them on even
 * in a file or a pipe, and wins over NO_COLOR, as in Node itself.
 */
export function wantsColour(stream: { isTTY?: boolean }, env: Readonly<Record<string, string | undefined>>): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return !['0', 'false'].includes(force.toLowerCase());
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return stream.isTTY === true && env.TERM !== 'dumb';
}
