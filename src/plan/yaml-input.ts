/**
 * What the plan loaders do with a file before the schema sees it: decode the bytes as strict
 * UTF-8, and parse the YAML with bounded cost. The yaml package's composer recurses once per level of nesting and checks duplicate keys by
 * scanning every earlier key of the mapping, so a hostile file under the 1 MB cap (half a million
 * `[`, a hundred thousand keys) costs minutes or a stack overflow. Here nesting is counted on the
 * parser's stack while the text is tokenised, the parse stops at the first level too deep, and
 * duplicate keys are found in linear time. The sandbox's seed loader has its own copy (src/sandbox/yaml-input.ts): the sandbox
 * imports nothing from the orchestrator.
 */
import type { Document, DocumentOptions, LineCounter, ParseOptions, SchemaOptions } from 'yaml';
import { Composer, Lexer, Parser, YAMLParseError, isMap, isScalar, visit } from 'yaml';

/**
 * The deepest nesting of mappings and lists a plan may have. A plan nests three (the top-level
 * mapping > `instance` > `oauth`; the top level > `schedule` > `windows`), so 32 is ten times what
 * any plan needs, while the composer's recursion (a few frames per level) stays tiny.
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
export function decodeUtf8(bytes: Uint8Array): { text: string; notUtf8?: undefined } | { notUtf8: NotUtf8; text?: undefined } {
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

/** How many levels of mappings and lists are open on the parser's stack. */
function openCollections(stack: Parser['stack']): number {
  let n = 0;
  for (const token of stack) if (token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection') n += 1;
  return n;
}

/** Where the first collection nested deeper than `max` starts. */
function tooDeepAt(stack: Parser['stack'], max: number): number {
  let n = 0;
  for (const token of stack) {
    if (token.type !== 'block-map' && token.type !== 'block-seq' && token.type !== 'flow-collection') continue;
    n += 1;
    if (n > max) return token.offset;
  }
  return stack.at(-1)?.offset ?? 0;
}

export type YamlOptions = ParseOptions & DocumentOptions & SchemaOptions;

/** The parsed document, or where the text nests deeper than allowed (nothing is composed then). */
export type ParsedYaml = { doc: Document.Parsed; tooDeep?: undefined } | { tooDeep: { offset: number; max: number }; doc?: undefined };

/**
 * `parseDocument` from the yaml package, with two bounds on its cost: nesting deeper than
 * `maxNesting` stops the parse where it happens, before the composer (which recurses per level)
 * sees any of it, and duplicate keys (`uniqueKeys`, on unless false) are found with one set per
 * mapping instead of the composer's scan of every earlier key. Errors and positions are otherwise
 * the package's own.
 */
export function parseYaml(text: string, options: YamlOptions & { lineCounter: LineCounter }, maxNesting = MAX_NESTING): ParsedYaml {
  const { lineCounter } = options;
  const parser = new Parser(lineCounter.addNewLine);
  // Duplicate keys are looked for afterwards: the composer compares each key with every earlier one.
  const composer = new Composer({ ...options, uniqueKeys: false });
  let tooDeep: number | undefined;
  function* tokens() {
    // What Parser.parse does, one lexeme at a time so that the stack can be looked at in between.
    lineCounter.addNewLine(0);
    for (const lexeme of new Lexer().lex(text)) {
      yield* parser.next(lexeme);
      // The stack holds the document and at most a scalar or two besides the open collections.
      if (parser.stack.length > maxNesting && openCollections(parser.stack) > maxNesting) {
        tooDeep = tooDeepAt(parser.stack, maxNesting);
        return;
      }
    }
    yield* parser.end();
  }
  let doc: Document.Parsed | undefined;
  for (const next of composer.compose(tokens(), true, text.length)) {
    if (!doc) doc = next;
    else {
      // As parseDocument: one document per file.
      doc.errors.push(new YAMLParseError([next.range[0], next.range[1]], 'MULTIPLE_DOCS', 'Source contains multiple documents; please use YAML.parseAllDocuments()'));
      break;
    }
  }
  if (tooDeep !== undefined) return { tooDeep: { offset: tooDeep, max: maxNesting } };
  // compose(..., forceDoc = true) always yields a document.
  const parsed = doc!;
  if (options.uniqueKeys !== false) addDuplicateKeyErrors(parsed);
  return { doc: parsed };
}

/**
 * Reports each key that repeats an earlier key of its mapping, as the composer would with
 * `uniqueKeys: true` (scalars with the same value), at the repeated key. One set per mapping.
 */
function addDuplicateKeyErrors(doc: Document.Parsed): void {
  const found: YAMLParseError[] = [];
  visit(doc, {
    Map(_, map) {
      if (!isMap(map)) return;
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        const key = pair.key;
        // NaN is never equal to itself (the composer compares with ===).
        if (!isScalar(key) || key.value !== key.value) continue;
        if (!seen.has(key.value)) {
          seen.add(key.value);
          continue;
        }
        const at = key.range?.[0] ?? map.range?.[0] ?? 0;
        found.push(new YAMLParseError([at, at + 1], 'DUPLICATE_KEY', 'Map keys must be unique'));
      }
    },
  });
  if (found.length === 0) return;
  // In file order among the parser's own errors.
  doc.errors = [...doc.errors, ...found].sort((a, b) => a.pos[0] - b.pos[0]);
}
