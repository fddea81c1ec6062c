/**
 * The PromQL that the operator-facing docs and example plans show, taken from the files themselves so
 * that a test runs exactly what an operator would copy (an edited doc is checked again):
 *
 * - in a YAML block (a fenced ```yaml block of a Markdown file, or a whole plans/*.yaml file): every
 *   `throttle.rules[].query`, every `capacity.storages.<storage>.free` that is a query rather than a
 *   size, and every `groups[].rules[].expr` of a Prometheus rules file;
 * - every fenced ```promql block, one query per block (lines starting with `#` are comments);
 * - with `inline`, every inline code span of the prose and tables (outside fenced blocks) that names
 *   a series of an exporter the sandbox plays (`node_`, `gitaly_`, `grpc_server_`, `sidekiq_`,
 *   `process_cpu_`, `promhttp_`) and nothing that is not PromQL (a path, a flag, `<placeholder>`).
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { parse } from 'yaml';

export interface DocQuery {
  /** Where it is, `docs/operations.md:301` (the line of the block's opening fence, or of the plan's key). */
  where: string;
  kind: 'rule' | 'capacity' | 'alert' | 'promql' | 'inline';
  /** The rule's or alert's name, or the storage, when it has one. */
  name: string | null;
  query: string;
}

interface Fence {
  lang: string;
  line: number;
  text: string;
}

/** The fenced code blocks of a Markdown text, with the line of their opening fence. */
export function fencedBlocks(markdown: string): Fence[] {
  const out: Fence[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]!); j++) body.push(lines[j]!.slice(indent));
    out.push({ lang: open[2]!, line: i + 1, text: body.join('\n') });
    i = j;
  }
  return out;
}

/** A size as plans write it (`2TiB`, `500GiB`, a number of bytes), which is no query. */
const SIZE = /^\s*\d+(\.\d+)?\s*([KMGTP]i?B|B)?\s*$/i;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The queries of one parsed YAML document (a plan, a plan fragment or a rules file). */
function queriesOfYaml(doc: unknown, where: string): DocQuery[] {
  if (!isRecord(doc)) return [];
  const out: DocQuery[] = [];
  const throttle = doc['throttle'];
  if (isRecord(throttle) && Array.isArray(throttle['rules'])) {
    for (const r of throttle['rules'])
      if (isRecord(r) && typeof r['query'] === 'string')
        out.push({ where, kind: 'rule', name: String(r['name'] ?? ''), query: r['query'] });
  }
  const capacity = doc['capacity'];
  if (isRecord(capacity) && isRecord(capacity['storages'])) {
    for (const [storage, room] of Object.entries(capacity['storages']))
      if (isRecord(room) && typeof room['free'] === 'string' && !SIZE.test(room['free']))
        out.push({ where, kind: 'capacity', name: storage, query: room['free'] });
  }
  if (Array.isArray(doc['groups'])) {
    for (const g of doc['groups'])
      if (isRecord(g) && Array.isArray(g['rules']))
        for (const r of g['rules'])
          if (isRecord(r) && typeof r['expr'] === 'string')
            out.push({ where, kind: 'alert', name: String(r['alert'] ?? r['record'] ?? ''), query: r['expr'] });
  }
  return out;
}

/** A series name of the exporters the sandbox plays, at the start of a span or after `(` or a space. */
const EXPORTER_SERIES = /(^|[\s(])(node|gitaly|grpc_server|sidekiq|process_cpu|promhttp)_[a-z_]+/;

/** Identifiers with an exporter's prefix that name no series (a readiness check). */
const NOT_SERIES = new Set(['gitaly_check']);
/** `name{label, label}`: the docs' notation for a series' labels, not a selector. */
const LABEL_LIST = /\{\s*\w+(\s*,\s*\w+)*\s*\}/;

/** The inline code spans of `markdown` outside fenced blocks that read as PromQL, with their line. */
function inlineQueries(markdown: string, name: string): DocQuery[] {
  const out: DocQuery[] = [];
  let fenced = false;
  for (const [i, line] of markdown.split('\n').entries()) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    for (const m of line.matchAll(/`([^`]+)`/g)) {
      const span = m[1]!.trim();
      if (!EXPORTER_SERIES.test(span) || NOT_SERIES.has(span) || LABEL_LIST.test(span)) continue;
      if (/^[(_]|[<>]\w|\/(api|-)\/|\.(rb|go|ts|yml|json)\b|^\w+\/|\s--/.test(span)) continue;
      out.push({ where: `${name}:${i + 1}`, kind: 'inline', name: null, query: span });
    }
  }
  return out;
}

/** Every query of `file` (Markdown or YAML); `root` makes the `where` relative. */
export function queriesIn(file: string, root: string, opts: { inline?: boolean } = {}): DocQuery[] {
  const text = readFileSync(file, 'utf8');
  const name = relative(root, file);
  if (/\.ya?ml$/.test(file)) return queriesOfYaml(parse(text), name);
  const out: DocQuery[] = [];
  for (const block of fencedBlocks(text)) {
    const where = `${name}:${block.line}`;
    if (block.lang === 'yaml') {
      let doc: unknown;
      try {
        doc = parse(block.text);
      } catch {
        continue; // an illustration with placeholders; the doc tests check YAML elsewhere
      }
      out.push(...queriesOfYaml(doc, where));
    } else if (block.lang === 'promql') {
      const query = block.text
        .split('\n')
        .filter((l) => !l.trimStart().startsWith('#'))
        .join('\n')
        .trim();
      if (query) out.push({ where, kind: 'promql', name: null, query });
    }
  }
  if (opts.inline) out.push(...inlineQueries(text, name));
  return out;
}
