import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { codeOf } from '../../shared/errors.js';
import { readItemsFile } from './items-file.js';
import type { ListedItem } from './items-format.js';
import { checkOf, digestOf, formatOfName, renderItems } from './items-format.js';

const dir = mkdtempSync(join(tmpdir(), 'shardmove-items-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HASH = 'a'.repeat(64);
const header = { planName: 'p', planHash: HASH, createdAt: '2026-01-01T00:00:00.000Z' };
const item = (id: number, path: string, over: Partial<ListedItem> = {}): ListedItem => ({
  kind: 'projects',
  id,
  path,
  sizeBytes: 1024 * id,
  source: 'nfs-1',
  destination: 'cluster',
  line: 0,
  ...over,
});
const ITEMS = [
  item(1, 'acme/plain'),
  item(2, 'acme/we"b, x'),
  item(3, '=cmd|"/C calc"!A0', { kind: 'snippets', sizeBytes: null }),
  item(4, 'multi\nline title', { kind: 'snippets', sizeBytes: null }),
  item(5, 'grüppe/ünïcode', { kind: 'groups', destination: 'gitaly-2' }),
];

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

function problems(file: string): string[] {
  try {
    readItemsFile(file, 'list', null);
  } catch (err) {
    expect(codeOf(err)).toBe('SHARDMOVE_ITEMS_FILE_INVALID');
    return (err as Error).message.split('\n').slice(1);
  }
  throw new Error('expected a refusal');
}

describe('the item list', () => {
  it('round-trips JSON lines and CSV, quotes, commas, line ends, formulas and unicode included', () => {
    for (const name of ['list.jsonl', 'list.csv']) {
      const file = write(name, [...renderItems(formatOfName(name)!, header, ITEMS)].join(''));
      const read = readItemsFile(file, name, null);
      expect(read.planHash).toBe(HASH);
      expect(read.items.map(({ line: _line, ...it }) => it)).toEqual(ITEMS.map(({ line: _line, ...it }) => it));
      expect(digestOf(HASH, read.items)).toBe(digestOf(HASH, [...ITEMS].reverse()));
    }
    const csv = [...renderItems('csv', header, ITEMS)].join('');
    expect(csv).toContain(`snippets,3,"'=cmd|""/C calc""!A0",,nfs-1,cluster,${HASH},`);
    expect(csv).toContain('"multi\nline title"');
    // A CSV with LF line ends (a spreadsheet's export) and a BOM reads the same.
    const lf = write('lf.csv', `\uFEFF${csv.replace(/\r\n/g, '\n')}`);
    expect(readItemsFile(lf, 'lf.csv', null).items).toHaveLength(ITEMS.length);
    // Sniffed without an extension.
    expect(readItemsFile(write('noext', csv), 'noext', null).format).toBe('csv');
  });

  it("reads a CSV and JSON lines whatever the saver's line ends (CR CR LF, a lone CR), a BOM and rows of empty cells", () => {
    const csv = [...renderItems('csv', header, ITEMS)].join('');
    const jsonl = [...renderItems('jsonl', header, ITEMS)].join('');
    const variants: [string, string][] = [
      ['crcrlf.csv', csv.replace(/\r\n/g, '\r\r\n')],
      ['cr.csv', `\uFEFF${csv.replace(/\r\n/g, '\r')}`],
      ['cells.csv', `\uFEFF${csv},,,,,,,\r\n,,,,,,,\r\n`],
      ['crcrlf.jsonl', `\uFEFF${jsonl.replace(/\n/g, '\r\r\n')}`],
      ['cr.jsonl', jsonl.replace(/\n/g, '\r')],
    ];
    for (const [name, text] of variants) {
      const read = readItemsFile(write(name, text), name, null);
      expect(read.items.map(({ line: _line, ...it }) => it)).toEqual(ITEMS.map(({ line: _line, ...it }) => it));
    }
    // A problem is still named at the line an editor shows: the second item row is line 3.
    const rows = csv.split('\r\n');
    rows[2] = rows[2]!.replace(',nfs-1,', ',nfs 1,');
    expect(problems(write('bad.csv', rows.join('\r\r\n')))).toEqual(['  list:3: source must be a name']);
  });

  it('refuses changed and typed lines, repeats and huge ids, each at its line', () => {
    const lines = [...renderItems('jsonl', header, ITEMS.slice(0, 3))].join('').trimEnd().split('\n');
    const typed = JSON.stringify({ ...JSON.parse(lines[1]!), id: 9 });
    const toSource = lines[2]!.replace('"destination":"cluster"', '"destination":"nfs-1"');
    const huge = lines[3]!.replace('"id":3', '"id":1e300');
    const file = write('edited.jsonl', [lines[0], typed, toSource, huge, lines[1], lines[1], '{"kind":'].join('\n'));
    expect(problems(file)).toEqual([
      '  list:4: id must be a whole number from 1 to 9007199254740991',
      '  list:7: not a JSON object (one per line)',
      '  list:2: projects 9: its check does not match its kind, id, source and destination under this plan: the line was changed or typed by hand; only lines the dry run wrote can be applied (remove lines freely)',
      '  list:3: projects 2: its check does not match its kind, id, source and destination under this plan: the line was changed or typed by hand; only lines the dry run wrote can be applied (remove lines freely)',
      '  list:6: projects 1 is listed twice (first on line 5)',
    ]);
  });

  it('refuses a CSV whose rows carry different plan hashes, and one without its header', () => {
    const csv = [...renderItems('csv', header, ITEMS.slice(0, 2))].join('').split('\r\n');
    const other = csv[2]!.replace(HASH, 'b'.repeat(64));
    expect(problems(write('mixed.csv', [csv[0], csv[1], other].join('\r\n')))).toEqual([
      `  list:3: plan_hash bbbbbbbbbbbb... differs from the first row's aaaaaaaaaaaa...`,
    ]);
    expect(problems(write('headless.csv', csv.slice(1).join('\r\n')))[0]).toMatch(
      /^ {2}list:1: the header row lacks kind/,
    );
  });

  it('writes control characters and bidi overrides of a title visibly, in both formats', () => {
    const evil = [item(9, 'a\u001b[2Jb\u202eevil', { kind: 'snippets' })];
    const visible = 'a\\u001b[2Jb\\u202eevil';
    const jsonl = [...renderItems('jsonl', header, evil)].join('');
    const csv = [...renderItems('csv', header, evil)].join('');
    for (const text of [jsonl, csv]) expect([...text].filter((c) => c === '\u001b' || c === '\u202e')).toEqual([]);
    expect((JSON.parse(jsonl.split('\n')[1]!) as { path: string }).path).toBe(visible);
    expect(csv).toContain(`snippets,9,${visible},`);
  });

  it.skipIf(process.getuid?.() === 0)('refuses a list it may not read (not as root, who reads every file)', () => {
    const file = write('locked.jsonl', [...renderItems('jsonl', header, ITEMS)].join(''));
    chmodSync(file, 0o000);
    expect(problems(file)).toEqual(['  list: not readable (permission denied)']);
  });

  it('ties the check to the plan hash and to every field it covers', () => {
    const a = checkOf(HASH, ITEMS[0]!);
    expect(checkOf('b'.repeat(64), ITEMS[0]!)).not.toBe(a);
    expect(checkOf(HASH, { ...ITEMS[0]!, destination: 'nfs-2' })).not.toBe(a);
    expect(checkOf(HASH, { ...ITEMS[0]!, path: 'renamed' } as ListedItem)).toBe(a);
  });
});
