/**
 * Loading a plan: read the file, parse the YAML keeping line:col, walk it with the schema, run the
 * named rules, refuse anything that looks like a literal secret. Every problem is collected and
 * reported at once as a PlanError; nothing else is ever thrown for a bad plan.
 * Every secret it resolves joins the process's registry (../secrets/registry.ts).
 */
import { codeOf } from '../shared/errors.js';
import { readFile, stat } from 'node:fs/promises';
import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Document, Node } from 'yaml';
import { LineCounter, isMap, isPair, isScalar, isSeq } from 'yaml';
import type { PlanProblem } from './errors.js';
import { PlanError, PlanFileError } from './errors.js';
import { hashPlan, planHashInput } from './hash.js';
import type { SecretFileReader } from './reader.js';
import { Reader } from './reader.js';
import { runRules } from './rules.js';
import { readPlanTree } from './schema.js';
import { findTokenLike, hasTokenLike, redact } from './secrets.js';
import { resolvedSecrets } from '../secrets/registry.js';
import type { Plan } from './types.js';
import type { YamlLimitHit } from '../shared/yaml-input.js';
import { MAX_NESTING, decodeUtf8, parseYaml } from '../shared/yaml-input.js';

/** A plan ready to run. */
export interface LoadedPlan {
  plan: Plan;
  /** sha256 hex over the plan without credentials (hash.ts). */
  hash: string;
  /** What the hash covers (hash.ts `planHashInput`), kept in the checkpoint to name what changed later. */
  hashInput?: unknown;
  /** Warnings: the plan loads, but an operator should look. */
  warnings: PlanProblem[];
  /** The file as given (used in messages). */
  file: string;
  /** The `weights` mapping as the plan wrote it, before the default was merged in. */
  planWeights?: Record<string, number>;
  /**
   * Absolute paths of the credential files the plan names, by field path (`instance.token_file`,
   * `instance.oauth.refresh_token_file` ...), e.g. to write a refreshed OAuth token back. Paths only.
   */
  secretFiles?: Record<string, string>;
}

/** Options for parsing plan text. */
export interface ParsePlanOptions {
  /** Where ${VAR}s come from. */
  env: Readonly<Record<string, string | undefined>>;
  /** Directory that *_file paths are relative to (default: the plan file's directory). */
  baseDir?: string;
  /** Reads secret files (default: the file system, synchronously). */
  readFile?: SecretFileReader;
  /**
   * Default true. False for commands that never contact the instance (`status`): credential fields
   * are still checked for form (no literal secrets) but their variables and files are not read, and
   * `plan.instance.credentials` holds empty values. The hash is the same either way.
   */
  resolveSecrets?: boolean;
}

/** Plans are small; anything bigger is not a plan and is refused before parsing. */
const MAX_PLAN_BYTES = 1_000_000;

/**
 * Reads a secret file from disk; undefined when it does not exist. A pipe is read too, so a token
 * can come from stdin (`token_file: /dev/stdin` with `... | shardmove run`); a terminal or a device is not.
 */
export const readSecretFileFromDisk: SecretFileReader = (path) => {
  try {
    const st = statSync(path);
    if (!st.isFile() && !st.isFIFO()) throw new PlanFileError('ENOTFILE', path);
    return { text: readFileSync(path, 'utf8'), mode: st.mode };
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return undefined;
    throw err;
  }
};

/** The reader of a plan's text (a move plan's or a copy plan's): relative paths from the plan's folder. */
export function readerOf(
  text: string,
  file: string,
  opts: Pick<ParsePlanOptions, 'env' | 'baseDir' | 'readFile' | 'resolveSecrets'>,
): Reader {
  return new Reader(
    file,
    text,
    new LineCounter(),
    opts.env,
    opts.baseDir ?? dirname(resolve(file)),
    opts.readFile ?? readSecretFileFromDisk,
    opts.resolveSecrets ?? true,
  );
}

/**
 * Parses and validates plan text. Returns the loaded plan or throws PlanError with every problem;
 * never throws anything else. Pure except for reading *_file secrets through `opts.readFile`.
 */
export function parsePlanText(text: string, file: string, opts: ParsePlanOptions): LoadedPlan {
  const r = readerOf(text, file, opts);
  let result: ReturnType<typeof readPlanTree> | undefined;
  readPlanDocument(r, (doc) => {
    // A copy plan (`shardmove copy`) has its own loader (copy-load.ts); say so instead of listing its fields as unknown.
    const copyKey = doc.errors.length === 0 ? topLevelKey(doc, 'copy') : undefined;
    if (copyKey) r.error('copy', r.posOf(copyKey), 'this is a copy plan: run it with `shardmove copy PLAN`');
    else if (doc.errors.length === 0) {
      result = readPlanTree(r, (doc.contents ?? null) as Node | null);
      if (!result.invalid.has('*')) {
        const findings = runRules({
          plan: result.plan,
          planWeights: result.planWeights,
          at: (p) => r.at(p),
          valid: (p) => isValid(result!.invalid, p),
        });
        for (const f of findings)
          (f.severity === 'error' ? r.error : r.warn).call(r, f.path, r.at(f.path), f.message, f.rule);
      }
    }
  });
  // Every secret resolved, fed once to the process's registry: each client scrubs what servers answer with it.
  resolvedSecrets.add(...r.secrets);
  const clean = (p: PlanProblem): PlanProblem => ({
    ...p,
    message: redact(p.message, r.secrets),
    path: redact(p.path, r.secrets),
  });
  const warnings = r.warnings.map(clean);
  if (r.errors.length > 0 || !result) throw new PlanError(file, r.errors.map(clean), warnings);
  return {
    plan: result.plan,
    hash: hashPlan(result.plan),
    hashInput: planHashInput(result.plan),
    warnings,
    file,
    planWeights: result.planWeights,
    secretFiles: { ...r.secretFiles },
  };
}

/**
 * Reads a plan file and validates it (parsePlanText). Relative paths resolve against `opts.cwd`;
 * *_file secrets against the plan's directory. Throws PlanError only.
 */
export async function loadPlan(
  file: string,
  opts: {
    env: Readonly<Record<string, string | undefined>>;
    cwd: string;
    readFile?: SecretFileReader;
    resolveSecrets?: boolean;
  },
): Promise<LoadedPlan> {
  const { abs, text } = await readPlanFile(file, opts.cwd);
  return parsePlanText(text, file, {
    env: opts.env,
    baseDir: dirname(abs),
    ...(opts.readFile ? { readFile: opts.readFile } : {}),
    ...(opts.resolveSecrets !== undefined ? { resolveSecrets: opts.resolveSecrets } : {}),
  });
}

/**
 * Reads a plan file's text (move or copy plan), refusing directories, devices and files over 1 MB.
 * Throws PlanError only; `abs` is the path resolved against `cwd`.
 */
export async function readPlanFile(file: string, cwd: string): Promise<{ abs: string; text: string }> {
  const abs = resolve(cwd, file);
  let bytes: Buffer;
  try {
    const st = await stat(abs);
    if (!st.isFile()) throw new PlanFileError('ENOTFILE', abs);
    if (st.size > MAX_PLAN_BYTES) throw new PlanFileError('EFBIG', abs);
    bytes = await readFile(abs);
  } catch (err) {
    const code = codeOf(err) ?? 'error';
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EFBIG'
          ? 'larger than 1 MB, not a plan'
          : `cannot read it (${code})`;
    throw new PlanError(file, [{ file, line: 1, col: 1, path: '', message: why, severity: 'error' }]);
  }
  // Not readFile(abs, 'utf8'): it turns bytes that are not UTF-8 into U+FFFD, and the plan would load.
  const { text, notUtf8 } = decodeUtf8(bytes);
  if (notUtf8) {
    const message = `not UTF-8 (byte 0x${notUtf8.byte.toString(16).padStart(2, '0')} at offset ${notUtf8.offset}); save the plan as UTF-8`;
    throw new PlanError(file, [{ file, line: notUtf8.line, col: notUtf8.col, path: '', message, severity: 'error' }]);
  }
  return { abs, text };
}

/**
 * The plan's `name` as written, for commands that need only the checkpoint's name (`status`,
 * `control`) when the plan does not load (its other ${VAR}s unset in this shell). Read with the
 * loader's own limits (1 MB, UTF-8, PLAN_YAML_LIMITS), so a hostile file costs no more here than in
 * `validate`. Undefined when the file cannot be read, is not YAML within the limits, or has no name.
 */
export async function readPlanName(file: string, cwd: string): Promise<string | undefined> {
  return (await readPlanHead(file, cwd))?.name;
}

/**
 * What names a plan's checkpoint, read as `readPlanName` reads the name: `name` (undefined when
 * absent or not text) and `checkpoint`, the value as written (undefined when absent or null), for
 * the caller to judge. Undefined when the file cannot be read or is not a YAML mapping.
 */
export async function readPlanHead(
  file: string,
  cwd: string,
): Promise<{ name: string | undefined; checkpoint: unknown } | undefined> {
  let text: string;
  try {
    ({ text } = await readPlanFile(file, cwd));
  } catch {
    return undefined;
  }
  const { doc } = parseYaml(text, { lineCounter: new LineCounter(), uniqueKeys: false }, PLAN_YAML_LIMITS);
  if (!doc || doc.errors.length > 0) return undefined;
  const root = doc.contents as Node | null;
  if (!isMap(root)) return undefined;
  const scalar = (key: string): unknown => {
    const pair = root.items.find((p) => isScalar(p.key) && p.key.value === key);
    if (pair === undefined || pair.value == null) return undefined;
    return isScalar(pair.value) ? (pair.value.value ?? undefined) : pair.value;
  };
  const name = scalar('name');
  return {
    name: typeof name === 'string' && name.trim() !== '' ? name : undefined,
    checkpoint: scalar('checkpoint'),
  };
}

/** The key node of a top-level field, when the document is a mapping that has it. */
export function topLevelKey(doc: Document, name: string): Node | undefined {
  const root = doc.contents as Node | null;
  if (!isMap(root)) return undefined;
  for (const pair of root.items)
    if (isPair(pair) && isScalar(pair.key) && pair.key.value === name) return pair.key as Node;
  return undefined;
}

function isValid(invalid: ReadonlySet<string>, path: string): boolean {
  if (invalid.has('*')) return false;
  for (const bad of invalid) if (path === bad || path.startsWith(`${bad}.`) || path.startsWith(`${bad}[`)) return false;
  return true;
}

/**
 * What YAML a plan may be, besides at most 1 MB: nested at most MAX_NESTING levels (plans need 3)
 * and at most this many tokens (keys, values, brackets, spaces, comments ...). The example plan has
 * 230; the bound keeps a hostile plan under the size cap (a million `[]`, a hundred thousand keys or
 * list items) from costing seconds to parse and walk.
 */
export const PLAN_YAML_LIMITS = { maxNesting: MAX_NESTING, maxTokens: 50_000 } as const;

/**
 * Reads the reader's text as YAML within the plan limits, for a move plan and a copy plan alike:
 * reports its syntax problems, hands the document to `read` (which reads it only when it parsed
 * without errors), then looks for tokens written in clear. A limit hit throws its one PlanError at
 * once; anything else thrown comes out as one plan problem.
 */
export function readPlanDocument(r: Reader, read: (doc: Document) => void): void {
  try {
    const { doc, over } = parseYaml(
      r.sourceText,
      { lineCounter: r.lineCounter, prettyErrors: false, uniqueKeys: true, strict: true, merge: false },
      PLAN_YAML_LIMITS,
    );
    // Nothing past the limit was read: that one problem is the answer.
    if (over) throw new PlanError(r.file, [limitProblem(r, over)]);
    reportYamlErrors(r, r.sourceText, [...doc.errors, ...doc.warnings]);
    read(doc);
    scanForTokens(r, r.sourceText, doc);
  } catch (err) {
    if (err instanceof PlanError) throw err;
    // A bug in the walker must still come out as a plan problem, not a crash with a stack.
    r.error(
      '',
      { line: 1, col: 1 },
      `could not read the plan (${err instanceof Error ? err.name : 'error'}); please report this`,
    );
  }
}

/**
 * The one problem of a plan over a YAML limit (PLAN_YAML_LIMITS): nothing else is reported, since
 * the rest of the file was never composed.
 */
export function limitProblem(r: Reader, over: YamlLimitHit): PlanProblem {
  const message =
    over.limit === 'nesting'
      ? `YAML nested deeper than ${over.max} levels (mappings and lists inside each other); a plan needs 3`
      : `more than ${over.max} YAML ${over.limit} (keys, values, brackets, comments ...); a plan has a few hundred`;
  return { file: r.file, ...r.posAt(over.offset), path: '', message, severity: 'error' };
}

/** At most this many YAML syntax errors are shown: after the first few, the parser mostly reports its own confusion. */
const MAX_YAML_ERRORS = 10;

/**
 * Reports YAML syntax errors, one per line (a broken line makes the parser report every token after
 * it), without the parser's source excerpts, which could hold a secret.
 */
export function reportYamlErrors(
  r: Reader,
  text: string,
  errors: ReadonlyArray<{ code: string; message: string; pos: [number, number] }>,
): void {
  const seen = new Set<number>();
  let shown = 0;
  for (const e of errors) {
    const at = r.posAt(e.pos[0]);
    if (seen.has(at.line)) continue;
    seen.add(at.line);
    if (shown === MAX_YAML_ERRORS) {
      r.error('', at, 'YAML: more syntax errors follow; fix the ones above first');
      return;
    }
    shown += 1;
    r.error('', at, yamlMessage(e.code, e.message, lineText(text, e.pos[0])));
  }
}

function lineText(text: string, offset: number): string {
  const start = text.lastIndexOf('\n', offset - 1) + 1;
  const end = text.indexOf('\n', offset);
  return text.slice(start, end < 0 ? text.length : end);
}

function yamlMessage(code: string, message: string, line: string): string {
  if (code === 'DUPLICATE_KEY') return 'duplicate key: each field may appear once';
  const first = message
    .split('\n')[0]!
    .replace(/ at line \d+, column \d+:?$/, '')
    .replace(/: ".*"$/s, '');
  // `{ url: ${X} }` is the classic trap: in flow style, `{` inside a plain scalar opens a mapping.
  const hint = hasUnquotedRefInFlow(line) ? ' (inside { } or [ ], quote references: "${VAR}")' : '';
  return `YAML: ${first}${hint}`;
}

/**
 * Whether a `{` or `[` is followed by `${` with no quote between them. One pass: the regex
 * /[{[][^'"]*\$\{/ says the same but retries from every bracket, quadratic on a long line.
 */
function hasUnquotedRefInFlow(line: string): boolean {
  let open = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '{' || c === '[') open = true;
    else if (c === '"' || c === "'") open = false;
    else if (open && c === '$' && line[i + 1] === '{') return true;
  }
  return false;
}

/**
 * Refuses anything token-looking anywhere in the file: values, keys and comments. Scalars already
 * reported as literal secrets are skipped so each secret is reported once.
 */
export function scanForTokens(r: Reader, text: string, doc: Document): void {
  // Each key is named once, however many spans it holds or leads to (a key may be most of the file).
  const names = new Map<Node | null, string>();
  const nameOf = (key: Node | null) => names.get(key) ?? names.set(key, keyName(key)).get(key)!;
  for (const span of findTokenLike(text)) {
    if (r.secretRanges.some(([s, e]) => span.start >= s && span.start < e)) continue;
    const path = pathAt(doc.contents as Node | null, span.start, '', nameOf);
    r.error(
      path ?? '',
      r.posAt(span.start),
      'text that looks like an access token: secrets come from the environment (${VAR}) or a file (*_file), never the plan text',
    );
  }
}

/**
 * A key as a path names it: `***` when it holds token-looking text (the path is shown), shortened
 * when long, so that a problem's path stays a line and never repeats the file.
 */
function keyName(key: Node | null): string {
  if (!isScalar(key)) return '?';
  const name = String(key.value);
  if (hasTokenLike(name)) return '***';
  return name.length > 100 ? `${name.slice(0, 97)}...` : name;
}

/** The dotted path of the deepest node whose source range holds `offset`; undefined outside all of them. */
function pathAt(
  node: Node | null,
  offset: number,
  path: string,
  nameOf: (key: Node | null) => string,
): string | undefined {
  if (!node?.range || offset < node.range[0] || offset >= node.range[2]) return undefined;
  // Items are in file order: only the last one that starts at or before the offset can hold it.
  if (isMap(node)) {
    const pair = node.items[lastStartingBy(node.items, (p) => (p.key as Node | null)?.range?.[0], offset)];
    if (!pair) return path;
    const key = pair.key as Node | null;
    const name = nameOf(key);
    const child = path ? `${path}.${name}` : name;
    if (key?.range && offset >= key.range[0] && offset < key.range[2]) return child;
    return pathAt(pair.value as Node | null, offset, child, nameOf) ?? path;
  }
  if (isSeq(node)) {
    const items = node.items as Node[];
    const i = lastStartingBy(items, (item) => item?.range?.[0], offset);
    return (i >= 0 ? pathAt(items[i]!, offset, `${path}[${i}]`, nameOf) : undefined) ?? path;
  }
  return path;
}

/** By binary search, the index of the last item (in file order) that starts at or before `offset`; -1 when none does. */
function lastStartingBy<T>(items: readonly T[], startOf: (item: T) => number | undefined, offset: number): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((startOf(items[mid]!) ?? 0) <= offset) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
