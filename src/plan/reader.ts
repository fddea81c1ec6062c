/**
 * The walker the schema uses over the YAML syntax tree: it reads typed values out of nodes, expands
 * ${VAR}s, and records every problem at the node it is about (file:line:col) instead of stopping at
 * the first one. Also keeps the position of every field it read, for the cross-field rules.
 */
import type { LineCounter, Node, Pair } from 'yaml';
import { isAlias, isMap, isScalar, isSeq } from 'yaml';
import type { PlanProblem } from './errors.js';
import { expandVars } from './expand.js';
import { hasTokenLike, showValue } from './secrets.js';

/** 1-based line and column. */
export interface Pos {
  line: number;
  col: number;
}

/** Reads a secret file: its text and permission bits, or undefined when it does not exist. */
export type SecretFileReader = (absolutePath: string) => { text: string; mode: number } | undefined;

/** A map entry as the walker sees it: the key node and the value node (null when empty). */
export interface Entry {
  key: Node;
  value: Node | null;
}

/** Everything one load collects while walking a plan. */
export class Reader {
  readonly errors: PlanProblem[] = [];
  readonly warnings: PlanProblem[] = [];
  /** Resolved secret values, redacted from every message. */
  readonly secrets: string[] = [];
  /** Offsets ranges of scalars already reported as literal secrets (the token scan skips them). */
  readonly secretRanges: Array<[number, number]> = [];
  readonly positions = new Map<string, Pos>();
  /** Credential field path (`instance.oauth.refresh_token_file`) -> absolute file path it names. */
  readonly secretFiles: Record<string, string> = {};

  constructor(
    readonly file: string,
    /** The full plan text, to place ${VAR} references inside scalars. */
    readonly sourceText: string,
    readonly lineCounter: LineCounter,
    readonly env: Readonly<Record<string, string | undefined>>,
    readonly baseDir: string,
    readonly readFile: SecretFileReader,
    /** False: credential fields are checked for form (no literal secrets) but not read. */
    readonly resolveSecrets = true,
  ) {}

  posAt(offset: number): Pos {
    const lp = this.lineCounter.linePos(Math.max(0, offset));
    return { line: Math.max(1, lp.line), col: Math.max(1, lp.col) };
  }

  posOf(node: Node | null | undefined, fallback?: Pos): Pos {
    if (node?.range) return this.posAt(node.range[0]);
    return fallback ?? { line: 1, col: 1 };
  }

  error(path: string, at: Pos, message: string, rule?: string): void {
    this.errors.push({ file: this.file, ...at, path, message, severity: 'error', ...(rule ? { rule } : {}) });
  }

  warn(path: string, at: Pos, message: string, rule?: string): void {
    this.warnings.push({ file: this.file, ...at, path, message, severity: 'warning', ...(rule ? { rule } : {}) });
  }

  /** Records where a field is, for rules that report about it later. */
  mark(path: string, at: Pos): void {
    this.positions.set(path, at);
  }

  /** Where `path` (or its nearest recorded ancestor) is in the file. */
  at(path: string): Pos {
    let p = path;
    for (;;) {
      const found = this.positions.get(p);
      if (found) return found;
      const cut = Math.max(p.lastIndexOf('.'), p.lastIndexOf('['));
      if (cut <= 0) return this.positions.get('') ?? { line: 1, col: 1 };
      p = p.slice(0, cut);
    }
  }

  /** Reports aliases, which plans do not support: a value should be visible where it is used. */
  private noAlias(node: Node, path: string): boolean {
    if (!isAlias(node)) return true;
    this.error(path, this.posOf(node), 'aliases (*name) are not supported in plans; write the value out');
    return false;
  }

  /**
   * Reads a mapping: reports a non-map, non-string keys and unknown keys (suggesting the closest
   * known one). Returns the known entries, or undefined when the node is not a map.
   */
  map(node: Node | null, path: string, known: readonly string[]): Map<string, Entry> | undefined {
    if (node === null) return undefined;
    if (!this.noAlias(node, path)) return undefined;
    if (!isMap(node)) {
      this.error(path, this.posOf(node), `expected a mapping of ${known.join(', ')}`);
      return undefined;
    }
    const out = new Map<string, Entry>();
    for (const pair of node.items as Pair<Node | null, Node | null>[]) {
      const key = pair.key;
      const keyPos = this.posOf(key, this.posOf(node));
      if (!key || !isScalar(key) || (typeof key.value !== 'string' && typeof key.value !== 'number')) {
        this.error(path, keyPos, 'keys must be plain names');
        continue;
      }
      const name = String(key.value);
      const childPath = path ? `${path}.${name}` : name;
      if (!known.includes(name)) {
        if (hasTokenLike(name)) continue; // the token scan reports it, without repeating it
        const near = closest(name, known);
        this.error(
          childPath,
          keyPos,
          `unknown field ${showValue(name)}${near ? ` (did you mean "${near}"?)` : `; known fields: ${known.join(', ')}`}`,
        );
        continue;
      }
      out.set(name, { key, value: pair.value ?? null });
    }
    return out;
  }

  /** Reads an open mapping of name -> node (weights): keys are data, not field names. */
  record(node: Node | null, path: string): Array<{ name: string; key: Node; value: Node | null }> | undefined {
    if (node === null) return undefined;
    if (!this.noAlias(node, path)) return undefined;
    if (!isMap(node)) {
      this.error(path, this.posOf(node), 'expected a mapping of storage name to weight');
      return undefined;
    }
    const out: Array<{ name: string; key: Node; value: Node | null }> = [];
    for (const pair of node.items as Pair<Node | null, Node | null>[]) {
      const key = pair.key;
      if (!key || !isScalar(key) || (typeof key.value !== 'string' && typeof key.value !== 'number')) {
        this.error(path, this.posOf(key, this.posOf(node)), 'keys must be storage names');
        continue;
      }
      out.push({ name: String(key.value), key, value: pair.value ?? null });
    }
    return out;
  }

  /** Reads a sequence; returns its item nodes, or undefined when the node is not a sequence. */
  seq(node: Node | null, path: string, what: string): Node[] | undefined {
    if (node === null) return undefined;
    if (!this.noAlias(node, path)) return undefined;
    if (!isSeq(node)) {
      this.error(path, this.posOf(node), `expected a list of ${what}, e.g. [a, b]`);
      return undefined;
    }
    return node.items as Node[];
  }

  /**
   * Reads a sequence of items, at least one and at most `max` (at `path`, marked), each by `readItem`
   * at `path[i]`. Undefined when the node is no such sequence or any item is unusable (each reported).
   */
  each<T>(
    node: Node,
    path: string,
    what: { items: string; wrongCount: string; max?: number },
    readItem: (item: Node, itemPath: string) => T | undefined,
  ): T[] | undefined {
    this.mark(path, this.posOf(node));
    const items = this.seq(node, path, what.items);
    if (!items) return undefined;
    if (items.length === 0 || items.length > (what.max ?? Infinity)) {
      this.error(path, this.posOf(node), what.wrongCount);
      return undefined;
    }
    const out: T[] = [];
    let ok = true;
    items.forEach((item, i) => {
      const value = readItem(item, `${path}[${i}]`);
      if (value === undefined) ok = false;
      else out.push(value);
    });
    return ok ? out : undefined;
  }

  /**
   * Reads a mapping of optional fields (at `path`, marked): its entries and the fields written with a
   * value, or undefined when the node is not a mapping (reported).
   */
  fields<K extends string>(
    node: Node,
    path: string,
    known: readonly K[],
  ): { entries: Map<string, Entry>; written: K[] } | undefined {
    this.mark(path, this.posOf(node));
    const entries = this.map(node, path, known);
    if (!entries) return undefined;
    return { entries, written: known.filter((k) => !this.isNull(entries.get(k)?.value ?? null)) };
  }

  /** True when the node is absent or an explicit null / empty value. */
  isNull(node: Node | null): boolean {
    return node === null || (isScalar(node) && node.value === null);
  }

  /**
   * Reads a string scalar and expands its ${VAR}s. Missing variables are errors at the reference.
   * Returns the expanded value, and whether it was written only as references.
   */
  string(node: Node | null, path: string): { value: string; onlyRefs: boolean; fromVars: boolean } | undefined {
    if (node === null) return undefined;
    if (!this.noAlias(node, path)) return undefined;
    if (!isScalar(node) || typeof node.value !== 'string') {
      this.error(
        path,
        this.posOf(node),
        `expected a string${isScalar(node) && node.value !== null ? `, got ${typeof node.value}` : ''}`,
      );
      return undefined;
    }
    const ex = expandVars(node.value, this.env);
    if (ex.malformed.length > 0 || ex.missing.length > 0) {
      const refPos = this.refLocator(node);
      for (const at of ex.malformed)
        this.error(
          path,
          refPos('${', at),
          'malformed ${...}: write ${NAME} (letters, digits, _), or $${ for a literal ${',
        );
      for (const ref of ex.missing)
        this.error(path, refPos(`\${${ref.name}}`, ref.index), `environment variable ${ref.name} is not set`);
    }
    if (ex.malformed.length > 0 || ex.missing.length > 0) return undefined;
    return { value: ex.value, onlyRefs: ex.onlyRefs, fromVars: ex.refs.length > 0 };
  }

  /**
   * Places references inside a scalar: the n-th `${NAME}` (or `${`) of its value is taken to be the
   * n-th one of its source text, which holds when the scalar is on one line. Both texts are indexed
   * once, so a scalar with many references costs no more than its length.
   */
  private refLocator(node: Node): (needle: string, index: number) => Pos {
    const [start, end] = node.range ?? [0, 0];
    const inValue = refIndex(String((node as { value?: unknown }).value ?? ''));
    let inSource: Map<string, number[]> | undefined;
    return (needle, index) => {
      const before = countBelow(inValue.get(needle) ?? [], index);
      inSource ??= refIndex(this.sourceText.slice(start, end));
      const at = inSource.get(needle)?.[before];
      return at === undefined ? this.posOf(node) : this.posAt(start + at);
    };
  }
}

const REF_AT = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/y;

/** Offsets of every `${` in `text`, and of every `${NAME}` by its text, in order. */
function refIndex(text: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const add = (key: string, i: number) => {
    const list = out.get(key);
    if (list) list.push(i);
    else out.set(key, [i]);
  };
  for (let i = text.indexOf('${'); i >= 0; i = text.indexOf('${', i + 1)) {
    add('${', i);
    REF_AT.lastIndex = i;
    const m = REF_AT.exec(text);
    if (m) add(m[0], i);
  }
  return out;
}

/** How many of the ascending `offsets` are below `index`. */
function countBelow(offsets: readonly number[], index: number): number {
  let lo = 0;
  let hi = offsets.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (offsets[mid]! < index) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/** The known name closest to `name`, when it is close enough to be a typo. */
export function closest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const d = distance(name.toLowerCase(), k);
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  const allowed = name.length <= 4 ? 1 : Math.max(2, Math.floor(name.length / 3));
  return best !== undefined && bestD <= allowed ? best : undefined;
}
