/** Words for a terminal: lines that stay within 80 columns where they can. */

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
  if (one.length <= 80) return [one];
  const more = `${indent}  `;
  return [`${indent}${head}`, ...wrapWords(rest, 80 - more.length).map((l) => `${more}${l}`)];
}
