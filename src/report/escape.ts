/**
 * Text from the instance (project names, error messages, Geo site names) and from the checkpoint
 * reaches the terminal in reports, `status`, error lines and the progress line. A name holding
 * `ESC [2J` would clear the operator's screen, an OSC sequence would retitle the window, a bare `\r`
 * or a bidi override would hide or reorder what a line says. Escaped, each control character becomes
 * visible `\uXXXX` text, which is also a valid JSON escape, so `--json` and `--events -` output stays
 * JSON with the same values. Pure, so report/ can escape what it colours itself (the progress line)
 * and cli/terminal.ts everything else.
 */

/** C0 controls but tab and newline, DEL, C1 controls, and the bidi embeddings, overrides and isolates. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every control character written as `\uXXXX` (tab and newline kept). */
export function escapeControls(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
