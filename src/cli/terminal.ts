/**
 * Text from the instance (project names, error messages, Geo site names) reaches the terminal in
 * reports, `status` and error lines. A name holding `ESC [2J` would clear the operator's screen, an
 * OSC sequence would retitle the window, a bare `\r` or a bidi override would hide or reorder what a
 * line says. Every byte main.ts writes goes through here: control characters become visible
 * `\uXXXX` text, which is also a valid JSON escape, so `--json` and `--events -` output stays JSON
 * with the same values.
 */

/** C0 controls but tab and newline, DEL, C1 controls, and the bidi embeddings, overrides and isolates. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Our own redraw of the progress line: carriage return, then erase the line. Nothing else passes raw. */
// eslint-disable-next-line no-control-regex -- the escape sequence shardmove itself writes
const OWN_REDRAW = /^\r\x1b\[2?K/;

/** `text` with every control character written as `\uXXXX` (tab and newline kept). */
export function escapeControls(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A chunk as it may reach a terminal: escaped, except a leading redraw of our own progress line. */
export function terminalText(chunk: string): string {
  const own = OWN_REDRAW.exec(chunk)?.[0] ?? '';
  return own + escapeControls(chunk.slice(own.length));
}

/**
 * `stream` with its `write` escaping control characters (strings and buffers alike, read as UTF-8);
 * everything else (isTTY, columns, events) is the stream's own.
 */
export function terminalSafe<S extends NodeJS.WritableStream>(stream: S): S {
  const write = (chunk: unknown, ...rest: unknown[]): boolean => {
    const text =
      typeof chunk === 'string'
        ? chunk
        : Buffer.isBuffer(chunk) || chunk instanceof Uint8Array
          ? Buffer.from(chunk).toString('utf8')
          : String(chunk);
    return (stream.write as (c: string, ...r: unknown[]) => boolean)(terminalText(text), ...rest);
  };
  return new Proxy(stream, {
    get(target, prop) {
      if (prop === 'write') return write;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
