/**
 * Reading a reviewed item list (./items-format.ts): every line checked, every problem named at its
 * `file:line` and all refused at once (exit 2); nothing of a list that fails is used.
 */
import { readFileSync, statSync } from 'node:fs';
import { KINDS } from '../../plan/values.js';
import type { Kind } from '../../plan/types.js';
import { ITEMS_FILE_INVALID, RuntimeError } from '../errors.js';
import type { ItemsFormat, ItemsList, ListedItem } from './items-format.js';
import { CSV_COLUMNS, ITEMS_FORMAT, MAX_ITEMS_FILE_BYTES, checkOf, formatOfName } from './items-format.js';
import { fileProblem } from '../../shared/file-problem.js';
import { lineEndAt, linesOf, withoutBom } from '../../shared/line-ends.js';

/** Problems listed in a refusal before the rest are counted. */
const MAX_LISTED = 30;

/**
 * Reads a list; `format` null takes it from the name, else from the first character. Throws
 * RuntimeError SHARDMOVE_ITEMS_FILE_INVALID (exit 2) with every problem at its file:line.
 */
export function readItemsFile(file: string, shown: string, format: ItemsFormat | null): ItemsList {
  let text: string;
  try {
    const st = statSync(file);
    if (st.isDirectory()) throw Object.assign(new Error('a directory, not a file'), { code: 'EISDIR' });
    if (st.size > MAX_ITEMS_FILE_BYTES)
      throw new Error(`${st.size} bytes; a list holds at most ${MAX_ITEMS_FILE_BYTES}`);
    text = new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(file));
  } catch (err) {
    throw invalid(shown, [`${shown}: ${fileProblem(err)}`]);
  }
  text = withoutBom(text);
  const fmt = format ?? formatOfName(file) ?? (text.trimStart().startsWith('{') ? 'jsonl' : 'csv');
  const problems: string[] = [];
  const list = fmt === 'jsonl' ? parseJsonLines(text, shown, problems) : parseCsv(text, shown, problems);
  if (problems.length > 0) throw invalid(shown, problems);
  return list!;
}

function invalid(shown: string, problems: readonly string[]): RuntimeError {
  const listed = problems.slice(0, MAX_LISTED).map((p) => `  ${p}`);
  if (problems.length > MAX_LISTED) listed.push(`  ... and ${problems.length - MAX_LISTED} more`);
  return new RuntimeError(
    ITEMS_FILE_INVALID,
    `${shown} is not a usable item list (${problems.length} problem${problems.length === 1 ? '' : 's'}); nothing was read from the instance or written:\n${listed.join('\n')}`,
  );
}

type Raw = Record<string, unknown>;

function parseJsonLines(text: string, shown: string, problems: string[]): ItemsList | null {
  const lines = linesOf(text);
  let header: Raw | null = null;
  const items: ListedItem[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    const at = `${shown}:${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      problems.push(`${at}: not a JSON object (one per line)`);
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push(`${at}: not a JSON object (one per line)`);
      return;
    }
    const raw = value as Raw;
    if (header === null) {
      if (raw['shardmove_items'] === undefined) {
        problems.push(`${at}: the first line must be the list's header ({"shardmove_items":1,"plan_hash":...})`);
        header = {};
        return;
      }
      header = raw;
      if (raw['shardmove_items'] !== ITEMS_FORMAT)
        problems.push(
          `${at}: shardmove_items ${JSON.stringify(raw['shardmove_items'])}: this shardmove reads format 1`,
        );
      if (typeof raw['plan_hash'] !== 'string' || !/^[0-9a-f]{64}$/.test(raw['plan_hash']))
        problems.push(`${at}: plan_hash must be the plan's sha256 (64 hex digits)`);
      return;
    }
    if (raw['shardmove_items'] !== undefined) {
      problems.push(`${at}: a second header`);
      return;
    }
    const it = itemOf(raw, i + 1, at, problems);
    if (it) items.push(it);
  });
  if (header === null) {
    problems.push(`${shown}: empty: no header and no item`);
    return null;
  }
  const h = header as Raw;
  const planHash = typeof h['plan_hash'] === 'string' && /^[0-9a-f]{64}$/.test(h['plan_hash']) ? h['plan_hash'] : '';
  return {
    format: 'jsonl',
    planHash,
    planName: typeof h['plan'] === 'string' ? h['plan'] : null,
    // Without a usable header hash no line can be checked: the header's problem is the answer.
    items: planHash === '' ? [] : checked(items, planHash, shown, problems, new Map()),
  };
}

/** One item's fields, each checked; undefined (reported) when any is unusable. */
function itemOf(raw: Raw, line: number, at: string, problems: string[]): (ListedItem & { check: string }) | undefined {
  const bad: string[] = [];
  const kind = raw['kind'];
  if (typeof kind !== 'string' || !(KINDS as readonly string[]).includes(kind))
    bad.push(`kind must be one of ${KINDS.join(', ')}`);
  const id = typeof raw['id'] === 'string' && /^\d+$/.test(raw['id']) ? Number(raw['id']) : raw['id'];
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1)
    bad.push(`id must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER}`);
  for (const key of ['source', 'destination', 'check'] as const) {
    const v = raw[key];
    if (typeof v !== 'string' || v === '' || /[\s/\\]/.test(v) || v.length > 255) bad.push(`${key} must be a name`);
  }
  const size = raw['size_bytes'];
  if (size !== null && size !== undefined && size !== '' && !(Number.isSafeInteger(Number(size)) && Number(size) >= 0))
    bad.push('size_bytes must be a whole number of bytes, or empty');
  if (bad.length > 0) {
    problems.push(`${at}: ${bad.join('; ')}`);
    return undefined;
  }
  return {
    kind: kind as Kind,
    id: id as number,
    path: typeof raw['path'] === 'string' ? raw['path'] : '',
    sizeBytes: size === null || size === undefined || size === '' ? null : Number(size),
    source: raw['source'] as string,
    destination: raw['destination'] as string,
    check: raw['check'] as string,
    line,
  };
}

/** Refuses a line whose check does not match, and an item listed twice (naming both lines). */
function checked(
  items: (ListedItem & { check?: string })[],
  planHash: string,
  shown: string,
  problems: string[],
  hashes: Map<number, string>,
): ListedItem[] {
  const seen = new Map<string, number>();
  const out: ListedItem[] = [];
  for (const it of items) {
    const at = `${shown}:${it.line}`;
    const own = hashes.get(it.line) ?? planHash;
    if (own !== planHash) {
      problems.push(`${at}: plan_hash ${own.slice(0, 12)}... differs from the first row's ${planHash.slice(0, 12)}...`);
      continue;
    }
    if (it.check !== checkOf(planHash, it)) {
      problems.push(
        `${at}: ${it.kind} ${it.id}: its check does not match its kind, id, source and destination under this plan: ` +
          'the line was changed or typed by hand; only lines the dry run wrote can be applied (remove lines freely)',
      );
      continue;
    }
    const key = `${it.kind}:${it.id}`;
    const first = seen.get(key);
    if (first !== undefined) {
      problems.push(`${at}: ${it.kind} ${it.id} is listed twice (first on line ${first})`);
      continue;
    }
    seen.set(key, it.line);
    const { check: _check, ...item } = it;
    out.push(item);
  }
  return out;
}

function parseCsv(text: string, shown: string, problems: string[]): ItemsList | null {
  const records = csvRecords(text, shown, problems);
  const first = records[0];
  if (!first) {
    problems.push(`${shown}: empty: no header row and no item`);
    return null;
  }
  const columns = first.fields.map((c) => c.trim().toLowerCase());
  const missing = CSV_COLUMNS.filter((c) => c !== 'path' && c !== 'size_bytes' && !columns.includes(c));
  if (missing.length > 0) {
    problems.push(
      `${shown}:${first.line}: the header row lacks ${missing.join(', ')} (columns: ${CSV_COLUMNS.join(',')})`,
    );
    return null;
  }
  const items: (ListedItem & { check: string })[] = [];
  const hashes = new Map<number, string>();
  let planHash = '';
  for (const r of records.slice(1)) {
    // A blank line, or a row of empty cells (a spreadsheet saves the rows it once showed as `,,,,`).
    if (r.fields.every((f) => f === '')) continue;
    const at = `${shown}:${r.line}`;
    if (r.fields.length !== columns.length) {
      problems.push(`${at}: ${r.fields.length} fields, the header has ${columns.length}`);
      continue;
    }
    const raw: Raw = Object.fromEntries(columns.map((c, i) => [c, r.fields[i]]));
    const hash = String(raw['plan_hash'] ?? '');
    if (!/^[0-9a-f]{64}$/.test(hash)) {
      problems.push(`${at}: plan_hash must be the plan's sha256 (64 hex digits)`);
      continue;
    }
    if (planHash === '') planHash = hash;
    const it = itemOf(raw, r.line, at, problems);
    if (!it) continue;
    hashes.set(r.line, hash);
    // The `'` spreadsheetSafe put before a formula-like text; a path that starts with `'` otherwise is kept.
    if (typeof raw['path'] === 'string' && /^'[=+\-@\t\r]/.test(raw['path'])) it.path = raw['path'].slice(1);
    items.push(it);
  }
  if (planHash === '' && problems.length === 0) problems.push(`${shown}: no item row, so no plan_hash to check`);
  return { format: 'csv', planHash, planName: null, items: checked(items, planHash, shown, problems, hashes) };
}

/** RFC 4180 records with the line each starts on; a quoted field may hold commas, quotes and line ends. */
function csvRecords(text: string, shown: string, problems: string[]): { line: number; fields: string[] }[] {
  const out: { line: number; fields: string[] }[] = [];
  let line = 1;
  let i = 0;
  while (i < text.length) {
    const start = line;
    const fields: string[] = [];
    let field = '';
    let quoted = false;
    for (;;) {
      if (i >= text.length) {
        if (quoted) problems.push(`${shown}:${start}: a quoted field is not closed`);
        fields.push(field);
        break;
      }
      const c = text[i]!;
      if (quoted) {
        if (c === '"' && text[i + 1] === '"') {
          field += '"';
          i += 2;
        } else if (c === '"') {
          quoted = false;
          i++;
        } else {
          // A quoted field keeps its line ends as they are; each still counts as one line.
          const end = lineEndAt(text, i);
          if (end > 0) line++;
          field += text.slice(i, i + Math.max(end, 1));
          i += Math.max(end, 1);
        }
      } else if (c === '"' && field === '') {
        quoted = true;
        i++;
      } else if (c === ',') {
        fields.push(field);
        field = '';
        i++;
      } else if (lineEndAt(text, i) > 0) {
        fields.push(field);
        i += lineEndAt(text, i);
        line++;
        break;
      } else {
        field += c;
        i++;
      }
    }
    out.push({ line: start, fields });
  }
  return out;
}
