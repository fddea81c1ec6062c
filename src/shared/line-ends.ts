/**
 * Line ends of a text file someone may have saved elsewhere: LF (what shardmove writes for JSON
 * lines), CRLF (what it writes for CSV, and what Windows tools and spreadsheets save), a lone CR
 * (a classic Mac "CSV (Macintosh)" export), and CR CR LF (a CRLF file converted to CRLF once more:
 * a Windows text-mode write, or git's autocrlf over a file that had CRLF already). Each is one line
 * end, so a message's file:line names the line an editor shows.
 */

/** One line end: any CRs then LF, or a lone CR. */
export const LINE_END = /\r*\n|\r/;

/** The UTF-8 byte order mark that Excel and Notepad put at the start of a file they save. */
const BOM = '\uFEFF';

/** `text` without a leading byte order mark. */
export function withoutBom(text: string): string {
  return text.startsWith(BOM) ? text.slice(BOM.length) : text;
}

/** The lines of `text` (a leading byte order mark removed), whatever its line ends. */
export function linesOf(text: string): string[] {
  return withoutBom(text).split(LINE_END);
}

/**
 * The length of the line end at `text[i]` (0 when there is none): for a parser that walks the text
 * one character at a time, as a CSV reader must (a quoted field keeps its line ends).
 */
export function lineEndAt(text: string, i: number): number {
  let j = i;
  while (text[j] === '\r') j++;
  if (text[j] === '\n') return j + 1 - i;
  return j > i ? 1 : 0;
}
