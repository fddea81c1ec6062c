/**
 * `move.select`: which items of the sources a run moves (all of them when absent).
 *
 *   move:
 *     select:
 *       namespaces: [acme, legal/holdings]   # full paths of groups or users; subgroups included
 *       projects: [4711, tools/ci]           # project ids or full paths
 *       exclude: [acme/frozen, 815]          # ids or full paths (a project, or a whole namespace)
 *       file: pilot.txt                      # one id or path per line, relative to the plan file
 *
 * Only the form is checked here (no network): pre-flight asks the instance for every name and refuses
 * those it does not know, at the entry's file:line:col (or the file's file:line). Each entry keeps
 * where it was written for that; the plan's hash covers the entries and not where they are.
 */
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import type { FieldDoc, JsonSchema } from './field-table.js';
import { textSchema } from './json-schema.js';
import type { Entry, Reader } from './reader.js';
import type { MoveSelect, SelectEntry } from './values.js';
import { fileProblem } from '../shared/file-problem.js';
import { linesOf } from '../shared/line-ends.js';

export const SELECT_KEYS = ['namespaces', 'projects', 'exclude', 'file'] as const;

/** The largest id an entry may name: JavaScript's safe integers (GitLab ids are far below). */
export const MAX_SELECT_ID = Number.MAX_SAFE_INTEGER;
/** A select file is a list of names, not a data set. */
export const MAX_SELECT_FILE_BYTES = 10_000_000;
const MAX_PATH_LENGTH = 2048;

const get = (m: Map<string, Entry>, k: string): Node | null => m.get(k)?.value ?? null;

/**
 * Why `text` cannot be a full path, or undefined when it can. Only the form: GitLab's own path rules
 * (ASCII letters, digits, `_.-`) are the instance's to apply, so a name it cannot hold is refused by
 * pre-flight with the instance's answer, not guessed at here.
 */
export function pathProblem(text: string): string | undefined {
  if (text === '') return 'an empty path';
  if (text.length > MAX_PATH_LENGTH) return `at most ${MAX_PATH_LENGTH} characters`;
  if (/\s/u.test(text) || hasControl(text)) return 'a full path has no spaces or control characters';
  if (text.startsWith('/') || text.endsWith('/')) return 'a full path neither starts nor ends with "/"';
  if (text.includes('//')) return 'a full path has no empty part ("//")';
  return undefined;
}

/** Whether `text` holds a control character (C0 or DEL). */
function hasControl(text: string): boolean {
  return [...text].some((c) => c < ' ' || c === '\u007f');
}

/**
 * A project id as written, or undefined when `text` is none (digits only). Used where a quoted
 * string of digits can only be an id: under `projects` (a project's full path has its namespace)
 * and on a select file's line (no quotes there). Under `namespaces` and `exclude` a quoted string is
 * a path, an all-digit group's included (`"2024"`); only a YAML number is an id.
 */
function idOf(text: string): number | undefined {
  return /^\d+$/.test(text) ? Number(text) : undefined;
}

type Form = 'namespace' | 'project' | 'either';

/** Why an entry read as `ref` does not fit `form`, or undefined. */
function formProblem(ref: number | string, form: Form): string | undefined {
  if (typeof ref === 'number') {
    if (form === 'namespace')
      return `a namespace is named by its full path (acme, acme/team), not by an id; a group whose path is all digits is written in quotes ("${ref}")`;
    if (!Number.isSafeInteger(ref) || ref < 1) return `an id is a whole number from 1 to ${MAX_SELECT_ID}`;
    return undefined;
  }
  const p = pathProblem(ref);
  if (p) return p;
  if (form === 'project' && !ref.includes('/'))
    return `a project's full path has its namespace (acme/${ref}); a namespace goes under move.select.namespaces`;
  return undefined;
}

/** The canonical key of a reference, for finding repeats (paths compare as GitLab does, ignoring case). */
export function refKey(ref: number | string): string {
  return typeof ref === 'number' ? `#${ref}` : ref.toLowerCase();
}

/** One list of entries (`namespaces`, `projects`, `exclude`); undefined when unusable (reported). */
function readEntries(r: Reader, node: Node, path: string, form: Form): SelectEntry[] | undefined {
  r.mark(path, r.posOf(node));
  const items = r.seq(node, path, form === 'namespace' ? 'full paths' : 'ids or full paths');
  if (!items) return undefined;
  if (items.length === 0) {
    r.error(path, r.posOf(node), 'list at least one, or leave the key out');
    return undefined;
  }
  const out: SelectEntry[] = [];
  const seen = new Map<string, string>();
  let ok = true;
  items.forEach((item, i) => {
    const at = r.posOf(item);
    const where = `${path}[${i}]`;
    r.mark(where, at);
    let ref: number | string | undefined;
    if (isScalar(item) && typeof item.value === 'number') ref = item.value;
    else {
      const s = r.string(item, where);
      if (s) ref = form === 'project' ? (idOf(s.value) ?? s.value) : s.value;
    }
    if (ref === undefined) {
      ok = false;
      return;
    }
    const problem = formProblem(ref, form);
    if (problem) {
      r.error(where, at, problem);
      ok = false;
      return;
    }
    const key = refKey(ref);
    const first = seen.get(key);
    if (first) {
      r.error(where, at, `${JSON.stringify(ref)} is listed twice (first at ${first})`);
      ok = false;
      return;
    }
    const here = `${r.file}:${at.line}:${at.col}`;
    seen.set(key, here);
    out.push({ ref, at: here });
  });
  return ok ? out : undefined;
}

/** What reading a select file found: its entries, or the problems (each with the file's file:line). */
export interface SelectFileRead {
  entries: SelectEntry[];
  problems: string[];
}

/**
 * The lines of a select file: one project id or full path per line (a path may name a namespace);
 * blank lines and lines starting with `#` are skipped, spaces around a name are trimmed. `shown` is
 * the file as messages name it.
 */
export function parseSelectLines(text: string, shown: string): SelectFileRead {
  const entries: SelectEntry[] = [];
  const problems: string[] = [];
  const seen = new Map<string, number>();
  const lines = linesOf(text);
  lines.forEach((raw, i) => {
    const line = i + 1;
    const t = raw.trim();
    if (t === '' || t.startsWith('#')) return;
    const ref = idOf(t) ?? t;
    const problem = formProblem(ref, 'either');
    if (problem) {
      problems.push(`${shown}:${line}: ${problem}`);
      return;
    }
    const key = refKey(ref);
    const first = seen.get(key);
    if (first !== undefined) {
      problems.push(`${shown}:${line}: ${JSON.stringify(ref)} is listed twice (first on line ${first})`);
      return;
    }
    seen.set(key, line);
    entries.push({ ref, at: `${shown}:${line}` });
  });
  return { entries, problems };
}

/** Reads the select file named at `node`; reports every problem at the `file:` entry. */
function readSelectFile(r: Reader, node: Node, path: string): { path: string; entries: SelectEntry[] } | undefined {
  const at = r.posOf(node);
  r.mark(path, at);
  const s = r.string(node, path);
  if (!s) return undefined;
  const problem =
    s.value === '' ? 'an empty path' : hasControl(s.value) ? 'a path without control characters' : undefined;
  if (problem) {
    r.error(path, at, problem);
    return undefined;
  }
  const absolute = isAbsolute(s.value) ? s.value : resolve(r.baseDir, s.value);
  // Messages name the file as a path from where the plan was named, so that an editor opens it.
  const shown = isAbsolute(s.value) ? s.value : join(r.file, '..', s.value);
  let text: string;
  try {
    const st = statSync(absolute);
    if (st.isDirectory()) throw Object.assign(new Error('a directory'), { code: 'EISDIR' });
    if (st.size > MAX_SELECT_FILE_BYTES) {
      r.error(path, at, `${shown} is ${st.size} bytes; a select file holds at most ${MAX_SELECT_FILE_BYTES}`);
      return undefined;
    }
    text = new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(absolute));
  } catch (err) {
    r.error(path, at, `${shown}: ${fileProblem(err)}`);
    return undefined;
  }
  const read = parseSelectLines(text, shown);
  for (const p of read.problems) r.error(path, at, p);
  if (read.problems.length > 0) return undefined;
  if (read.entries.length === 0) {
    r.error(path, at, `${shown} names nothing (only blank lines and # comments): name at least one id or path`);
    return undefined;
  }
  return { path: absolute, entries: read.entries };
}

/** `move.select`; undefined when unusable (reported). */
export function readSelect(r: Reader, node: Node, path: string): MoveSelect | undefined {
  const fields = r.fields(node, path, SELECT_KEYS);
  if (!fields) return undefined;
  const m = fields.entries;
  if (fields.written.length === 0) {
    r.error(path, r.posOf(node), 'name what moves: namespaces, projects or file, and/or what does not: exclude');
    return undefined;
  }
  const list = (k: 'namespaces' | 'projects' | 'exclude', form: Form): SelectEntry[] | undefined | null => {
    const v = get(m, k);
    return r.isNull(v) ? null : readEntries(r, v!, `${path}.${k}`, form);
  };
  const namespaces = list('namespaces', 'namespace');
  const projects = list('projects', 'project');
  const exclude = list('exclude', 'either');
  const fileNode = get(m, 'file');
  const file = r.isNull(fileNode) ? null : readSelectFile(r, fileNode!, `${path}.file`);
  if (namespaces === undefined || projects === undefined || exclude === undefined || file === undefined)
    return undefined;
  const sel: MoveSelect = {
    namespaces: namespaces ?? [],
    projects: projects ?? [],
    exclude: exclude ?? [],
    file,
  };
  // The same name both chosen and excluded says two things at once: say which.
  const chosen = new Map(
    [...sel.namespaces, ...sel.projects, ...(sel.file?.entries ?? [])].map((e) => [refKey(e.ref), e]),
  );
  let ok = true;
  sel.exclude.forEach((e, i) => {
    const both = chosen.get(refKey(e.ref));
    if (!both) return;
    r.error(
      `${path}.exclude[${i}]`,
      r.at(`${path}.exclude[${i}]`),
      `${JSON.stringify(e.ref)} is both selected (${both.at}) and excluded`,
    );
    ok = false;
  });
  return ok ? sel : undefined;
}

const REF_SCHEMA: JsonSchema = {
  anyOf: [
    { type: 'integer', minimum: 1, maximum: MAX_SELECT_ID },
    textSchema({ pattern: '^[^\\s/][^\\s]*$', maxLength: MAX_PATH_LENGTH }),
  ],
};

export const SELECT_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    namespaces: {
      type: 'array',
      items: textSchema({ pattern: '^[^\\s/][^\\s]*$', maxLength: MAX_PATH_LENGTH }),
      minItems: 1,
      uniqueItems: true,
    },
    projects: { type: 'array', items: REF_SCHEMA, minItems: 1, uniqueItems: true },
    exclude: { type: 'array', items: REF_SCHEMA, minItems: 1, uniqueItems: true },
    file: textSchema({ minLength: 1 }),
  },
  minProperties: 1,
  additionalProperties: false,
};

export const SELECT_DOC: FieldDoc = {
  type: 'mapping',
  default: 'absent (every item on the sources)',
  allowed: 'throttled mode; every name must exist on the instance (pre-flight)',
  more:
    "Project snippets follow their project, group wikis their group, personal snippets their author's namespace (the username). " +
    'What is not selected stays on the source as planned; the selection is judged again on the instance right before each move and at verification (an item transferred out of it is not moved). See [choosing what moves](operations.md#choosing-what-moves).',
  keys: {
    namespaces: {
      type: 'list of full paths',
      default: 'none',
      allowed: 'groups or users, each once',
      meaning:
        'Everything in these namespaces and their subgroups. Always paths: a top-level group whose path is all digits is quoted (`"2024"`); an unquoted number is refused.',
    },
    projects: {
      type: 'list of ids or full paths',
      default: 'none',
      allowed: 'projects, each once',
      meaning: 'These projects (and their snippets).',
    },
    exclude: {
      type: 'list of ids or full paths',
      default: 'none',
      allowed: 'projects (id or path) or namespaces (path)',
      meaning:
        'Never moved, even when selected otherwise. Alone, everything else is selected. A YAML number is a project id, a quoted string a path (`"2024"`: the group 2024).',
    },
    file: {
      type: 'path',
      default: 'none',
      allowed: 'a UTF-8 file relative to the plan file, at most 10 MB',
      meaning:
        'One project id or full path (a project or a namespace) per line; blank lines and `#` comments skipped; any line ends and a leading BOM.',
    },
  },
};

/** The selection in one line for `validate` and the dry run: what is chosen, what is excluded. */
export function describeSelect(sel: MoveSelect): string {
  const names = (list: readonly SelectEntry[]) =>
    `${list
      .slice(0, 3)
      .map((e) => String(e.ref))
      .join(', ')}${list.length > 3 ? `, ... (${list.length})` : ''}`;
  const chosen = [
    sel.namespaces.length > 0 ? `namespaces ${names(sel.namespaces)}` : '',
    sel.projects.length > 0 ? `projects ${names(sel.projects)}` : '',
    sel.file ? `${sel.file.entries.length} name(s) from ${sel.file.path}` : '',
  ].filter(Boolean);
  const what = chosen.length > 0 ? `only ${chosen.join('; ')}` : 'everything';
  return `${what}${sel.exclude.length > 0 ? `, except ${names(sel.exclude)}` : ''} (move.select)`;
}
