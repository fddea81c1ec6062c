/**
 * What a loader does with a YAML file before its schema sees it: decode the bytes as strict UTF-8
 * and parse the YAML at a cost linear in its size. The yaml package's composer recurses once per
 * level of nesting and checks duplicate keys by scanning every earlier key of the mapping, and its
 * toJS resolves each alias by scanning every earlier anchor and alias, so a hostile file (half a
 * million `[`, a hundred thousand keys or anchors) costs minutes or a stack overflow. Here the
 * lexer feeds the parser one token at a time, the parse stops at the first limit crossed (nesting,
 * tokens, anchors and aliases), and duplicate keys are found with one set per mapping.
 *
 * On the shared floor: the plan loader and the sandbox's seed loader both read YAML through it.
 */
import type { Document, DocumentOptions, LineCounter, ParseOptions, SchemaOptions } from 'yaml';
import { CST, Composer, Lexer, Parser, YAMLParseError, isMap, isScalar, isSeq } from 'yaml';

/**
 * The deepest nesting of mappings and lists a plan or seed may have. Plans nest three levels (the
 * top-level mapping > `instance` > `oauth`), seeds four (> `inventory` > `projects` > an item), so
 * 32 is far more than either needs, and keeps the composer's recursion (a few frames per level) tiny.
 */
export const MAX_NESTING = 32;

/** Where the first byte that is not UTF-8 is: its byte offset, 1-based line and column (in characters), and the byte. */
export interface NotUtf8 {
  offset: number;
  line: number;
  col: number;
  byte: number;
}

const STRICT = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Decodes a file's bytes as UTF-8, refusing anything else: a byte that is not UTF-8 would otherwise
 * become U+FFFD and be accepted silently. A byte order mark stays in the text (the YAML parser reads
 * it), as it did with `readFile(file, 'utf8')`. The position is looked for only on failure.
 */
export function decodeUtf8(
  bytes: Uint8Array,
): { text: string; notUtf8?: undefined } | { notUtf8: NotUtf8; text?: undefined } {
  try {
    return { text: STRICT.decode(bytes) };
  } catch {
    return { notUtf8: firstNonUtf8(bytes) };
  }
}

/** Decodes `bytes[0, end)` as the start of a longer text: true unless it holds a malformed sequence. */
function prefixIsUtf8(bytes: Uint8Array, end: number): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes.subarray(0, end), { stream: true });
    return true;
  } catch {
    return false;
  }
}

function firstNonUtf8(bytes: Uint8Array): NotUtf8 {
  // The shortest prefix the decoder refuses ends at the byte where it noticed (binary search).
  let lo = 0;
  let hi = bytes.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (prefixIsUtf8(bytes, mid + 1)) lo = mid + 1;
    else hi = mid;
  }
  // A sequence cut short (`C3 41`, or the file's last bytes) is noticed after its first byte: report that one.
  let offset = lo;
  let text = '';
  for (let back = 0; back <= 3 && back <= lo; back++) {
    try {
      text = STRICT.decode(bytes.subarray(0, lo - back));
      offset = lo - back;
      break;
    } catch {
      // a multi-byte sequence still open at this end: step back over it
    }
  }
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) line += 1;
  return { offset, line, col: text.length - (text.lastIndexOf('\n') + 1) + 1, byte: bytes[offset] ?? 0 };
}

const isCollection = (token: Parser['stack'][number]) =>
  token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection';

/** Where the first collection nested deeper than `max` starts; undefined when none is. */
function tooDeepAt(stack: Parser['stack'], max: number): number | undefined {
  let n = 0;
  for (const token of stack) if (isCollection(token) && ++n > max) return token.offset;
  return undefined;
}

export type YamlOptions = ParseOptions & DocumentOptions & SchemaOptions;

/** Bounds on what parseYaml reads; each unlimited unless given, nesting MAX_NESTING. */
export interface YamlLimits {
  /** The deepest nesting of mappings and lists. */
  maxNesting?: number;
  /** The most lexical tokens (keys, values, indicators, spaces, comments ...). */
  maxTokens?: number;
  /** The most anchors (`&name`) and aliases (`*name`), together. */
  maxAliases?: number;
}

/** The limit a text crossed, and where. */
export interface YamlLimitHit {
  limit: 'nesting' | 'tokens' | 'aliases';
  max: number;
  offset: number;
}

/**
 * The parsed document and where its first alias is (undefined when it has none), or the limit the
 * text crossed (nothing after it was composed).
 */
export type ParsedYaml =
  | { doc: Document.Parsed; firstAlias: number | undefined; over?: undefined }
  | { over: YamlLimitHit; doc?: undefined; firstAlias?: undefined };

/**
 * `parseDocument` from the yaml package with bounded cost: the text is parsed one token at a time
 * and refused at the first limit it crosses, before the composer sees it; duplicate keys
 * (`uniqueKeys`, on unless false) are found with one set per mapping instead of the composer's scan
 * of every earlier key. Errors and positions are otherwise the package's own.
 */
export function parseYaml(
  text: string,
  options: YamlOptions & { lineCounter: LineCounter },
  limits: YamlLimits = {},
): ParsedYaml {
  const { maxNesting = MAX_NESTING, maxTokens = Infinity, maxAliases = Infinity } = limits;
  const { lineCounter } = options;
  const parser = new Parser(lineCounter.addNewLine);
  // Duplicate keys are looked for afterwards: the composer compares each key with every earlier one.
  const composer = new Composer({ ...options, uniqueKeys: false });
  let over: YamlLimitHit | undefined;
  let firstAlias: number | undefined;
  function* tokens() {
    // What Parser.parse does, one lexeme at a time so that the stack can be looked at in between.
    lineCounter.addNewLine(0);
    let count = 0;
    let aliases = 0;
    let previous = '';
    for (const lexeme of new Lexer().lex(text)) {
      const start = parser.offset;
      yield* parser.next(lexeme);
      if (++count > maxTokens) over = { limit: 'tokens', max: maxTokens, offset: start };
      // A scalar's text comes right after the SCALAR marker; anything else starting with & or * is an anchor or an alias.
      else if (previous !== CST.SCALAR && (lexeme[0] === '&' || lexeme[0] === '*')) {
        if (lexeme[0] === '*') firstAlias ??= start;
        if (++aliases > maxAliases) over = { limit: 'aliases', max: maxAliases, offset: start };
      }
      // The stack holds the document and at most a scalar or two besides the open collections.
      if (!over && parser.stack.length > maxNesting) {
        const at = tooDeepAt(parser.stack, maxNesting);
        if (at !== undefined) over = { limit: 'nesting', max: maxNesting, offset: at };
      }
      if (over) return;
      previous = lexeme;
    }
    yield* parser.end();
  }
  let doc: Document.Parsed | undefined;
  for (const next of composer.compose(tokens(), true, text.length)) {
    if (!doc) doc = next;
    else {
      // As parseDocument: one document per file.
      doc.errors.push(
        new YAMLParseError(
          [next.range[0], next.range[1]],
          'MULTIPLE_DOCS',
          'Source contains multiple documents; please use YAML.parseAllDocuments()',
        ),
      );
      break;
    }
  }
  if (over) return { over };
  // compose(..., forceDoc = true) always yields a document.
  const parsed = doc!;
  if (options.uniqueKeys !== false) addDuplicateKeyErrors(parsed);
  return { doc: parsed, firstAlias };
}

/**
 * Reports each key that repeats an earlier key of its mapping, as the composer would with
 * `uniqueKeys: true` (scalars with the same value), at the repeated key: one set per mapping, in
 * one walk (not yaml's visit, which costs three times as much on a seed of a million nodes).
 */
function addDuplicateKeyErrors(doc: Document.Parsed): void {
  const found: YAMLParseError[] = [];
  const walk = (node: unknown): void => {
    if (isSeq(node)) {
      for (const item of node.items) walk(item);
      return;
    }
    if (!isMap(node)) return;
    const seen = new Set<unknown>();
    for (const pair of node.items) {
      const key = pair.key;
      if (!isScalar(key)) walk(key);
      // NaN is never equal to itself (the composer compares with ===).
      else if (key.value === key.value && seen.has(key.value)) {
        const at = key.range?.[0] ?? node.range?.[0] ?? 0;
        found.push(new YAMLParseError([at, at + 1], 'DUPLICATE_KEY', 'Map keys must be unique'));
      } else seen.add(key.value);
      walk(pair.value);
    }
  };
  walk(doc.contents);
  if (found.length === 0) return;
  // In file order among the parser's own errors.
  doc.errors = [...doc.errors, ...found].sort((a, b) => a.pos[0] - b.pos[0]);
}
