/**
 * Words for a terminal: lines that stay within a width (80 columns in a pipe, the terminal's own on
 * a TTY: the caller decides, see ../cli/terminal-width.ts) where they can. The one wrapper of the
 * text outputs (the final summary, `validate`'s summary, the copies, the networks): it breaks at
 * spaces only, never inside a command the operator will paste nor inside a path, and it hangs each
 * continuation under the text after the line's label.
 */

/** The width a text output is wrapped at when nothing says otherwise: a terminal of 80 columns, a pipe. */
export const DEFAULT_WIDTH = 80;

/** `text` in lines of at most `width` characters, broken at spaces (a longer word stands alone). */
export function wrapWords(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/**
 * `head` and `rest` on one line when it fits in 80 columns; else `head` on a line of its own after
 * `indent` (kept whole however long: a path to paste), then `rest` wrapped after two more spaces.
 */
export function headThenWrapped(indent: string, head: string, rest: string): string[] {
  const one = `${indent}${head} ${rest}`;
  if (one.length <= DEFAULT_WIDTH) return [one];
  const more = `${indent}  `;
  return [`${indent}${head}`, ...wrapWords(rest, DEFAULT_WIDTH - more.length).map((l) => `${more}${l}`)];
}

export interface FitOptions {
  /** The most columns a line takes (a word longer than that stands alone on its line). */
  width: number;
  /**
   * Text kept on one line wherever it appears (the commands the output prints, for the operator to
   * paste): moved whole to a line of its own when the rest of the line cannot hold it.
   */
  whole?: readonly string[];
  /** Where continuations start, in columns; by default under the label's text (hangOf). */
  hang?: number;
}

/**
 * Where a line's continuations start: under the text after its label. The label is a bullet
 * (`- `), an opening parenthesis, or the words up to the first `: ` when they end by half the
 * width; any other line (or a label too long to hang under) continues two columns further in.
 */
export function hangOf(line: string, width: number): number {
  const indent = /^ */.exec(line)![0].length;
  const rest = line.slice(indent);
  if (rest.startsWith('- ')) return indent + 2;
  if (rest.startsWith('(')) return indent + 1;
  const colon = rest.indexOf(': ');
  // The text starts after the spaces that follow the colon (`Weights now:    a=1` lines up with the line above).
  const text = colon + 1 + /^ */.exec(rest.slice(colon + 1))![0].length;
  // A backtick before the colon: the colon is inside a quoted command, not after a label.
  if (colon > 0 && indent + text <= width / 2 && !rest.slice(0, colon).includes('`')) return indent + text;
  return indent + 2;
}

interface Piece {
  /** The spaces before it. */
  gap: string;
  word: string;
  /** It holds a kept string or a quoted span (a command): it goes to a line of its own when it does not fit. */
  kept: boolean;
}

function isKept(word: string, whole: readonly string[]): boolean {
  return word.includes(' ') || whole.some((w) => w.length > 0 && word.includes(w));
}

/**
 * The unbreakable pieces of `text`, in order, each with the spaces before it: a `whole` string
 * (longest first) or a backtick-quoted span, with the punctuation stuck to its end, else a word.
 */
function pieces(text: string, whole: readonly string[]): Piece[] {
  const out: Piece[] = [];
  let i = 0;
  while (i < text.length) {
    const start = i;
    while (text[i] === ' ') i += 1;
    const gap = text.slice(start, i);
    if (i >= text.length) break;
    // To the next space, but on through a kept string that starts in the word (after an opening
    // parenthesis, say) or a quoted span: the punctuation after either stays with it.
    let end = i;
    while (end < text.length && text[end] !== ' ') {
      const kept = whole.find((w) => w.length > 0 && text.startsWith(w, end));
      const close = text[end] === '`' ? text.indexOf('`', end + 1) : -1;
      if (kept !== undefined) end += kept.length;
      else if (close > 0) end = close + 1;
      else end += 1;
    }
    out.push({ gap, word: text.slice(i, end), kept: end - i > 0 && isKept(text.slice(i, end), whole) });
    i = end;
  }
  return out;
}

/**
 * One line as lines of at most `width` columns: broken at spaces, the continuations hung under the
 * text after its label (hangOf), the `whole` strings and backtick-quoted spans never broken: one
 * that does not fit where it would start goes to a line of its own, two columns in when even the
 * hang leaves no room for it. A line that fits is returned as it is.
 */
export function fitLine(line: string, opts: FitOptions): string[] {
  const { width } = opts;
  if (line.length <= width) return [line];
  const whole = [...(opts.whole ?? [])].sort((a, b) => b.length - a.length);
  const indent = /^ */.exec(line)![0];
  const hang = ' '.repeat(opts.hang ?? hangOf(line, width));
  const out: string[] = [];
  let cur = indent;
  let fresh = true;
  for (const { gap, word, kept } of pieces(line.slice(indent.length), whole)) {
    if (fresh) {
      cur += word;
      fresh = false;
      continue;
    }
    // A word no line can hold (a hashed path) stays where it is: a line of its own would not fit either.
    const fits = cur.length + gap.length + word.length <= width || (!kept && indent.length + 2 + word.length > width);
    if (fits) {
      cur += gap + word;
      continue;
    }
    out.push(cur);
    // Too long for the hang: as far left as the line's own indent allows, so a command stays whole on as few columns as it can.
    cur = hang.length + word.length <= width ? hang + word : `${indent}  ${word}`;
  }
  out.push(cur);
  return out;
}

/** Every line of `lines` within the width (fitLine), the empty ones kept. */
export function fitLines(lines: readonly string[], opts: FitOptions): string[] {
  return lines.flatMap((l) => fitLine(l, opts));
}

/** A whole text (lines joined by newlines) within the width; its final newline kept. */
export function fitText(text: string, opts: FitOptions): string {
  const end = text.endsWith('\n');
  const body = fitLines((end ? text.slice(0, -1) : text).split('\n'), opts).join('\n');
  return end ? `${body}\n` : body;
}
