/**
 * The commands README.md and docs/ show, as an operator would paste them: every `sh`, `bash` and
 * `console` block (a console block's commands are its `$ ` lines), one command line per entry with
 * its `\` continuations joined, and the command spans of the prose (`shardmove run PLAN ...`). A
 * small shell-word reader splits a line into simple commands (pipes, `&&`, `;`, `&`), with their
 * variable assignments, words and redirections, enough to check what each names.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface DocCommand {
  /** `README.md`, `docs/sandbox.md` ... */
  page: string;
  /** The line it starts on (1-based). */
  line: number;
  /** The command as pasted: continuations joined, the console prompt removed. */
  text: string;
  /** Which block it is in (the line of its opening fence), or null for a span of the prose. */
  block: number | null;
  /** A synopsis (`[--port 0]`) in a plain block: not for pasting, checked for its options only. */
  synopsis?: boolean;
}

export interface SimpleCommand {
  assigns: Record<string, string>;
  words: string[];
  redirects: { op: string; target: string }[];
  /** Ended by `&`: it runs in the background. */
  background: boolean;
}

/** README.md and every page of docs/, in a stable order. */
export function docPages(root: string): string[] {
  return [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => `docs/${f}`),
  ];
}

const SHELL = new Set(['sh', 'bash', 'shell', 'console']);

/** Every command line of the page's shell and console blocks. */
export function blockCommands(page: string, markdown: string): DocCommand[] {
  const out: DocCommand[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)(`{3,})(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang] = open as unknown as [string, string, string, string];
    let end = i + 1;
    while (end < lines.length && !lines[end]!.startsWith(`${indent}${fence}`)) end++;
    const body = lines.slice(i + 1, end).map((l) => l.slice(indent.length));
    if (SHELL.has(lang)) out.push(...commandsOfBlock(page, i + 1, body, lang === 'console'));
    else if (lang === '' || lang === 'text') out.push(...synopses(page, i + 1, body));
    i = end;
  }
  return out;
}

function commandsOfBlock(page: string, fenceLine: number, body: string[], console: boolean): DocCommand[] {
  const out: DocCommand[] = [];
  for (let j = 0; j < body.length; j++) {
    let text = body[j]!;
    if (console) {
      // Two terminals side by side put the prompt further right; anything else is output.
      const prompt = /^\s*\$ (.*)$/.exec(text);
      if (!prompt) continue;
      text = prompt[1]!;
    }
    if (/^\s*#/.test(text)) continue;
    const start = j;
    // A line goes on after a `\`, a trailing pipe, or inside a quote left open (a jq program).
    for (;;) {
      if (j + 1 >= body.length) break;
      if (/\\$/.test(text)) text = `${text.slice(0, -1)} ${body[++j]!.trim()}`;
      else if (/\|\s*$/.test(text)) text = `${text} ${body[++j]!.trim()}`;
      else if (quoteLeftOpen(text)) text = `${text}\n${body[++j]!}`;
      else break;
    }
    if (text.trim() === '') continue;
    out.push({ page, line: fenceLine + 1 + start, text: text.trim(), block: fenceLine });
  }
  return out;
}

/** Whether a quote is still open at the end of `text` (a comment's apostrophes do not count). */
function quoteLeftOpen(text: string): boolean {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"') i++;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '\\') i++;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) return false;
  }
  return quote !== null;
}

/**
 * A plain block's synopses (`shardmove sandbox [--port 0] ...`, its bracketed lines after it): not
 * for pasting, so checked like the prose's spans, for the options they name.
 */
function synopses(page: string, fenceLine: number, body: string[]): DocCommand[] {
  const out: DocCommand[] = [];
  let last = -2;
  body.forEach((l, j) => {
    if (/^(?:bin\/)?shardmove /.test(l)) {
      out.push({ page, line: fenceLine + 1 + j, text: l.trim(), block: null, synopsis: true });
      last = j;
    } else if (/^\s+\[/.test(l) && last === j - 1) {
      out[out.length - 1]!.text += ` ${l.trim()}`;
      last = j;
    }
  });
  return out;
}

/** The code spans of the prose that are shardmove commands (synopses included). */
export function proseCommands(page: string, markdown: string): DocCommand[] {
  const out: DocCommand[] = [];
  const lines = markdown.split('\n');
  let fence: string | null = null;
  lines.forEach((l, i) => {
    const f = /^ *(`{3,})/.exec(l);
    if (f) {
      fence = fence === null ? f[1]! : fence === f[1] ? null : fence;
      return;
    }
    if (fence !== null) return;
    for (const m of l.matchAll(/`((?:bin\/)?shardmove [^`]+)`/g))
      out.push({ page, line: i + 1, text: m[1]!.replace(/\\\|/g, '|'), block: null });
  });
  return out;
}

/** The simple commands of one command line. */
export function parseLine(text: string): SimpleCommand[] {
  const out: SimpleCommand[] = [];
  let cur: SimpleCommand = { assigns: {}, words: [], redirects: [], background: false };
  let word: string | null = null;
  let pendingRedirect: string | null = null;
  const endWord = () => {
    if (word === null) return;
    if (pendingRedirect) {
      cur.redirects.push({ op: pendingRedirect, target: word });
      pendingRedirect = null;
    } else if (cur.words.length === 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(word)) {
      const eq = word.indexOf('=');
      cur.assigns[word.slice(0, eq)] = word.slice(eq + 1);
    } else cur.words.push(word);
    word = null;
  };
  const endCommand = (background = false) => {
    endWord();
    cur.background = background;
    if (cur.words.length > 0 || Object.keys(cur.assigns).length > 0) out.push(cur);
    cur = { assigns: {}, words: [], redirects: [], background: false };
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      word = (word ?? '') + text.slice(i + 1, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end;
    } else if (c === '"') {
      let j = i + 1;
      let s = '';
      while (j < text.length && text[j] !== '"') {
        if (text[j] === '\\' && j + 1 < text.length) j++;
        s += text[j];
        j++;
      }
      word = (word ?? '') + s;
      i = j;
    } else if (c === '\\' && i + 1 < text.length) {
      word = (word ?? '') + text[++i];
    } else if (c === '$' && text[i + 1] === '(') {
      let depth = 0;
      let j = i;
      for (; j < text.length; j++) {
        if (text[j] === '(') depth++;
        if (text[j] === ')' && --depth === 0) break;
      }
      word = (word ?? '') + text.slice(i, j + 1);
      i = j;
    } else if (c === '#' && word === null) {
      break;
    } else if (/\s/.test(c)) {
      endWord();
    } else if (c === '|' || c === ';') {
      if (text[i + 1] === '|') i++;
      endCommand();
    } else if (c === '&') {
      if (text[i + 1] === '&') {
        i++;
        endCommand();
      } else endCommand(true);
    } else if (c === '<' || c === '>') {
      endWord();
      let op = c;
      if (text[i + 1] === '>') op += text[++i];
      pendingRedirect = op;
    } else {
      word = (word ?? '') + c;
    }
  }
  endCommand();
  return out;
}
