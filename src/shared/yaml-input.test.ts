import { describe, expect, it } from 'vitest';
import { LineCounter, parseDocument } from 'yaml';
import { readFileSync } from 'node:fs';
import type { YamlLimits } from './yaml-input.js';
import { MAX_NESTING, decodeUtf8, parseYaml } from './yaml-input.js';

const parse = (text: string, limits: YamlLimits = {}) => {
  const lineCounter = new LineCounter();
  const got = parseYaml(text, { lineCounter, prettyErrors: false, uniqueKeys: true, strict: true }, limits);
  return { ...got, at: (offset: number) => lineCounter.linePos(offset) };
};

/** The limit the text crosses and where, as `limit line:col`; undefined when it crosses none. */
function over(text: string, limits: YamlLimits = {}): string | undefined {
  const got = parse(text, limits);
  if (!got.over) return undefined;
  const { line, col } = got.at(got.over.offset);
  return `${got.over.limit} ${line}:${col}`;
}
const tooDeep = (text: string) => over(text)?.replace(/^nesting /, '');

describe('parseYaml: nesting, read in time linear in its depth', () => {
  it('reads what the yaml package reads, with the same errors', () => {
    for (const file of ['plans/example.yaml', 'plans/demo.yaml', 'plans/copy-example.yaml', 'plans/sandbox.yaml']) {
      const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
      expect(parse(text).doc?.toJS()).toEqual(parseDocument(text).toJS());
    }
    const duplicates = [
      'a: 1\na: 2\n',
      'a: {b: 1, "b": 2, c: {d: 1, d: 2}}\n',
      "- {1: a, '1': b, 1: c}\n",
      'a: 1\nb: 2\n? a\n: 3\n',
      '~: 1\nnull: 2\n',
      'x: [{a: 1}, {a: 2}]\n',
      '.nan: {a: 1, a: 2}\n? [a, {b: 1, b: 2}]\n: 1\n',
    ];
    for (const text of [
      'a: [\n',
      'a: b: c\n',
      'a: 1\n---\nb: 2\n',
      '',
      '# only a comment\n',
      'a: b: 1\na: 2\n',
      ...duplicates,
    ]) {
      const ours = parse(text).doc!;
      const theirs = parseDocument(text, { prettyErrors: false, uniqueKeys: true, strict: true });
      expect(ours.errors.map((e) => [e.code, e.pos])).toEqual(theirs.errors.map((e) => [e.code, e.pos]));
      expect(ours.toJS()).toEqual(theirs.toJS());
    }
  });

  it(`takes ${MAX_NESTING} levels and refuses the next one where it opens, in any style`, () => {
    // The top-level mapping is the first level.
    expect(tooDeep(`a: ${'['.repeat(MAX_NESTING - 1)}${']'.repeat(MAX_NESTING - 1)}\n`)).toBeUndefined();
    expect(tooDeep(`a: ${'['.repeat(MAX_NESTING)}${']'.repeat(MAX_NESTING)}\n`)).toBe(`1:${4 + MAX_NESTING - 1}`);
    expect(tooDeep(`a: ${'{b: '.repeat(MAX_NESTING)}1${'}'.repeat(MAX_NESTING)}\n`)).toBe(
      `1:${4 + 4 * (MAX_NESTING - 1)}`,
    );
    // Block mappings: line n (1-based) opens level n, indented n - 1.
    const block = Array.from({ length: MAX_NESTING + 1 }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n') + ' 1\n';
    expect(tooDeep(block)).toBe(`${MAX_NESTING + 1}:${MAX_NESTING + 1}`);
    expect(
      tooDeep(Array.from({ length: MAX_NESTING }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n') + ' 1\n'),
    ).toBeUndefined();
    // Compact sequences on one line: `- - - x`.
    expect(tooDeep(`a:\n  ${'- '.repeat(MAX_NESTING)}x\n`)).toBe(`2:${3 + 2 * (MAX_NESTING - 1)}`);
    // Brackets in quotes, comments, block scalars and plain scalars are text, not nesting.
    expect(
      tooDeep(`a: "${'['.repeat(100)}"\nb: x${'['.repeat(100)}\nc: |\n  ${'- '.repeat(100)}\n# ${'{'.repeat(100)}\n`),
    ).toBeUndefined();
  });

  it('answers a 1 MB file of brackets with the position of the first level too deep', () => {
    // Before: minutes of parsing, then "Maximum call stack size exceeded" from the composer.
    expect(tooDeep(`a: ${'['.repeat(999_990)}`)).toBe(`1:${4 + MAX_NESTING - 1}`);
    expect(tooDeep(`a:\n${'  - '.repeat(250_000)}x\n`)).toBe(`2:${3 + 4 * (MAX_NESTING - 1)}`);
  });
});

describe('parseYaml: tokens, anchors and aliases', () => {
  it('stops at the first token over the bound', () => {
    // Document start, scalar marker, a, :, space, [, marker, 1, comma, space, marker, 2, ], newline.
    expect(over('a: [1, 2]\n', { maxTokens: 14 })).toBeUndefined();
    expect(over('a: [1, 2]\n', { maxTokens: 12 })).toBe('tokens 1:9');
    // Six tokens, then four per item: the 50,001st is the comma of item 12,498, at offset 5 + 3 * 12,498.
    expect(over(`a: [${'1, '.repeat(500_000)}1]\n`, { maxTokens: 50_000 })).toBe('tokens 1:37500');
  });

  it('counts anchors and aliases, not & and * inside scalars, and says where the first alias is', () => {
    const text = 'a: &x [*x, "*y", \'&z\', b *c &d]\nb: *x\nc: |\n  *e &f\n';
    expect(over(text, { maxAliases: 3 })).toBeUndefined();
    expect(over(text, { maxAliases: 2 })).toBe('aliases 2:4');
    const got = parse('a: &x 1\nb: [*x]\n');
    expect(got.at(got.firstAlias!)).toEqual({ line: 2, col: 5 });
    expect(parse('a: "*x"\n').firstAlias).toBeUndefined();
  });
});

describe('parseYaml: duplicate keys', () => {
  it('finds a repeated key among a hundred thousand in one pass', () => {
    // The composer compared each key with every earlier one: 96 s for a 1 MB plan of keys.
    const keys = Array.from({ length: 100_000 }, (_, i) => `  k${i}: 1\n`).join('');
    const got = parse(`a:\n${keys}  k5: 2\n`);
    expect(got.doc?.errors.map((e) => [e.code, got.at(e.pos[0])])).toEqual([
      ['DUPLICATE_KEY', { line: 100_002, col: 3 }],
    ]);
  });
});

describe('decodeUtf8: bytes that are not UTF-8 are an error at their position', () => {
  const bytes = (...parts: Array<string | number[]>) =>
    Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));
  const where = (b: Buffer) => decodeUtf8(b).notUtf8;

  it('decodes UTF-8, keeping a byte order mark for the YAML parser', () => {
    expect(decodeUtf8(bytes('a: é ☕ 𝄞\n')).text).toBe('a: é ☕ 𝄞\n');
    expect(decodeUtf8(bytes([0xef, 0xbb, 0xbf], 'a: 1\n')).text).toBe('\uFEFFa: 1\n');
  });

  it('finds the first byte that is not UTF-8: its offset, line, column in characters, and value', () => {
    expect(where(bytes('a: 1\nb: é', [0xff], ' x\n'))).toEqual({ offset: 10, line: 2, col: 5, byte: 0xff });
    // A lone continuation byte, a sequence cut short, an overlong form, a surrogate, a lead byte past U+10FFFF.
    expect(where(bytes('ab', [0x80]))).toEqual({ offset: 2, line: 1, col: 3, byte: 0x80 });
    expect(where(bytes('ab', [0xc3, 0x41], 'c'))).toEqual({ offset: 2, line: 1, col: 3, byte: 0xc3 });
    expect(where(bytes('ab', [0xe2, 0x98]))).toEqual({ offset: 2, line: 1, col: 3, byte: 0xe2 });
    expect(where(bytes('ab', [0xc0, 0x80]))).toEqual({ offset: 2, line: 1, col: 3, byte: 0xc0 });
    expect(where(bytes('ab', [0xed, 0xa0, 0x80]))).toEqual({ offset: 2, line: 1, col: 3, byte: 0xed });
    expect(where(bytes('ab', [0xf5, 0x80, 0x80, 0x80]))).toEqual({ offset: 2, line: 1, col: 3, byte: 0xf5 });
    // After a four-byte character (two UTF-16 units, as the YAML parser's columns count).
    expect(where(bytes('𝄞', [0xfe]))).toEqual({ offset: 4, line: 1, col: 3, byte: 0xfe });
  });
});
