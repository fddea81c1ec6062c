/**
 * The seed's compact inventory: `inventory.items_file` names a file of one item per
 * line, for inventories too large for YAML. Parsing 100,000 items as YAML mappings takes 6 s and
 * 600 MB; a million never fits the seeding budget. This file is what `shardmove twin` writes.
 *
 * Format, version 1 (UTF-8, one JSON value per line, `\n` or `\r\n`):
 *
 *     {"shardmove_sandbox_items":1,"columns":["kind","id","storage","size_bytes","hidden","pending_delete"],"namespace":"twin"}
 *     ["project",1,"nfs-1",41943040,0,0]
 *     ["group",7,"nfs-2",null,0,1]
 *
 * The first line is the header: the format version, the columns (exactly these, in this order) and
 * optionally the namespace of the projects (default `group-1`, as for explicit items). Then one
 * array per item: kind (`project`, `snippet`, `group`), id (ascending within a kind), a configured
 * storage, the repository size in bytes (null: unknown, seeded as 10 MB like an explicit item
 * without `size_mb`), and the hidden and pending-delete flags (0 or 1; hidden: EE projects only;
 * pending deletion: projects and groups). Names are generated from the id (`project-12`), as for
 * generated items. Empty lines are skipped.
 *
 * File items go in after generated ones and before the explicit lists; each replaces a generated
 * item of the same kind and id, and is replaced by an explicit one.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fakeChecksum } from './checksum.js';
import type { Db, ItemKind } from './db.js';
import { ITEM_COLUMNS } from './db.js';
import type { Seed } from './seed-schema.js';

export const ITEMS_FORMAT = 1;
export const ITEMS_COLUMNS = ['kind', 'id', 'storage', 'size_bytes', 'hidden', 'pending_delete'] as const;

/** The items of a file, column by column: about 20 bytes per item, whatever the names. */
export interface SeedItems {
  file: string;
  count: number;
  namespace: string;
  kinds: Uint8Array;
  ids: Float64Array;
  storages: Uint16Array;
  storageNames: string[];
  /** Bytes; NaN when unknown. */
  sizes: Float64Array;
  /** Bit 1: hidden, bit 2: pending deletion. */
  flags: Uint8Array;
}

const KINDS: readonly ItemKind[] = ['project', 'snippet', 'group'];
const HIDDEN = 1;
const PENDING = 2;
/** Problems listed before the rest are summed up: a wrong file would otherwise print a million lines. */
const MAX_PROBLEMS = 20;
const MB = 1024 * 1024;
/** Default size of an item whose size is unknown, as for explicit items without `size_mb`. */
const DEFAULT_SIZE_MB = 10;
/** Commit count of every file item, as for explicit items without `commit_count`. */
const COMMITS = 10;

/** Read files, by the seed's inventory object they belong to (a seed changed in place reads again). */
const read = new WeakMap<object, SeedItems>();

/**
 * Reads and checks the seed's items file (relative paths from `dir`), once per inventory object.
 * Returns its items (null when the seed names none) or every problem as `file:line: message`.
 */
export function readSeedItems(seed: Seed, dir: string): { items: SeedItems | null; problems: string[] } {
  const name = seed.inventory.items_file;
  if (name === undefined) return { items: null, problems: [] };
  const cached = read.get(seed.inventory);
  if (cached) return { items: cached, problems: [] };
  const file = isAbsolute(name) ? name : resolve(dir, name);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return { items: null, problems: [`${file}: inventory.items_file: cannot read: ${(err as Error).message}`] };
  }
  const parsed = parseSeedItems(text, file, seed);
  if (parsed.items) read.set(seed.inventory, parsed.items);
  return parsed;
}

/** Parses items file text against the seed's storages, edition and unlistable ids (pure). */
export function parseSeedItems(
  text: string,
  file: string,
  seed: Seed,
): { items: SeedItems | null; problems: string[] } {
  const problems: string[] = [];
  let extra = 0;
  const problem = (line: number, message: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push(`${file}:${line}: ${message}`);
    else extra++;
  };
  let lines = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++;
  const capacity = lines + 1;
  const kinds = new Uint8Array(capacity);
  const ids = new Float64Array(capacity);
  const storages = new Uint16Array(capacity);
  const sizes = new Float64Array(capacity);
  const flags = new Uint8Array(capacity);
  const storageIndex = new Map(seed.instance.storages.map((s, i) => [s, i] as const));
  const ce = seed.instance.edition === 'ce';
  const lastId = [0, 0, 0];
  let namespace = 'group-1';
  let header = false;
  let count = 0;
  let lineNo = 0;
  for (let start = 0; start < text.length || lineNo === 0;) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    lineNo++;
    const line = text.slice(start, end > start && text.charCodeAt(end - 1) === 13 ? end - 1 : end);
    start = end + 1;
    if (line.trim() === '') {
      if (start > text.length) break;
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      problem(lineNo, `not JSON: ${(err as Error).message}`);
      continue;
    }
    if (!header) {
      header = true;
      const h = checkHeader(value);
      if (typeof h === 'string') {
        problem(lineNo, h);
        break;
      }
      namespace = h.namespace;
      continue;
    }
    const row = checkRow(value, { storageIndex, ce, lastId });
    if (typeof row === 'string') {
      problem(lineNo, row);
      continue;
    }
    kinds[count] = row.kind;
    ids[count] = row.id;
    storages[count] = row.storage;
    sizes[count] = row.size;
    flags[count] = row.flags;
    count++;
  }
  if (!header) problem(1, `no header line: the file must begin with ${JSON.stringify(headerOf('group-1'))}`);
  if (problems.length === 0) {
    // instance.unlistable must name projects that exist: the schema checked the generated and
    // explicit ones, the rest must be in this file.
    const generated = seed.inventory.generate?.projects ?? 0;
    const explicit = new Set((seed.inventory.projects ?? []).map((p) => p.id));
    const inFile = new Set<number>();
    for (let i = 0; i < count; i++) if (kinds[i] === 0) inFile.add(ids[i] as number);
    for (const id of seed.instance.unlistable) {
      if (id > generated && !explicit.has(id) && !inFile.has(id))
        problems.push(`${file}: instance.unlistable: unknown project ${id}`);
    }
  }
  if (extra > 0) problems.push(`${file}: ... and ${extra} more problems`);
  if (problems.length > 0) return { items: null, problems };
  return {
    items: { file, count, namespace, kinds, ids, storages, storageNames: [...seed.instance.storages], sizes, flags },
    problems: [],
  };
}

/** The header line of a version-1 file. */
export function headerOf(namespace: string): Record<string, unknown> {
  return { shardmove_sandbox_items: ITEMS_FORMAT, columns: ITEMS_COLUMNS, namespace };
}

function checkHeader(value: unknown): { namespace: string } | string {
  const expected = `the header must be ${JSON.stringify(headerOf('group-1'))} (namespace optional)`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return `not a header: ${expected}`;
  const h = value as Record<string, unknown>;
  const unknown = Object.keys(h).filter((k) => !['shardmove_sandbox_items', 'columns', 'namespace'].includes(k));
  if (unknown.length > 0)
    return `header: unknown field "${unknown[0]}"; known fields: shardmove_sandbox_items, columns, namespace`;
  if (h.shardmove_sandbox_items !== ITEMS_FORMAT)
    return `header: shardmove_sandbox_items must be ${ITEMS_FORMAT} (this sandbox reads version ${ITEMS_FORMAT})`;
  if (JSON.stringify(h.columns) !== JSON.stringify(ITEMS_COLUMNS))
    return `header: columns must be ${JSON.stringify(ITEMS_COLUMNS)}`;
  if (
    h.namespace !== undefined &&
    (typeof h.namespace !== 'string' || h.namespace === '' || h.namespace.includes('/'))
  ) {
    return 'header: namespace must be a non-empty string without "/"';
  }
  return { namespace: typeof h.namespace === 'string' ? h.namespace : 'group-1' };
}

interface RowContext {
  storageIndex: Map<string, number>;
  ce: boolean;
  lastId: number[];
}

function checkRow(
  value: unknown,
  c: RowContext,
): { kind: number; id: number; storage: number; size: number; flags: number } | string {
  if (!Array.isArray(value) || value.length !== ITEMS_COLUMNS.length)
    return `an item is an array of ${ITEMS_COLUMNS.length}: ${ITEMS_COLUMNS.join(', ')}`;
  const [kindName, id, storage, size, hidden, pending] = value as unknown[];
  const kind = KINDS.indexOf(kindName as ItemKind);
  if (kind === -1) return `kind must be project, snippet or group; got ${JSON.stringify(kindName)}`;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1)
    return `id must be an integer >= 1; got ${JSON.stringify(id)}`;
  if (id <= (c.lastId[kind] as number))
    return `${kindName} ${id}: ids must ascend within a kind (the previous ${kindName} was ${c.lastId[kind]})`;
  c.lastId[kind] = id;
  const s = typeof storage === 'string' ? c.storageIndex.get(storage) : undefined;
  if (s === undefined)
    return `${kindName} ${id}: unknown storage ${JSON.stringify(storage)} (instance.storages names the storages)`;
  if (size !== null && (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0))
    return `${kindName} ${id}: size_bytes must be an integer >= 0 or null`;
  if ((hidden !== 0 && hidden !== 1) || (pending !== 0 && pending !== 1))
    return `${kindName} ${id}: hidden and pending_delete must be 0 or 1`;
  if (hidden === 1 && kind !== 0) return `${kindName} ${id}: only projects can be hidden`;
  if (hidden === 1 && c.ce)
    return `${kindName} ${id}: hidden projects exist only in the enterprise edition (edition: ee)`;
  if (pending === 1 && kind === 1) return `${kindName} ${id}: snippets have no pending-delete state`;
  return {
    kind,
    id,
    storage: s,
    size: size === null ? Number.NaN : size,
    flags: (hidden === 1 ? HIDDEN : 0) | (pending === 1 ? PENDING : 0),
  };
}

/** Rows per INSERT: like the generator, bind only what differs per row; SQLite builds the rest. */
const BATCH_ROWS = 500;
const PARAMS = 7;

/**
 * Writes the file's items into `items` (inside the caller's transaction): names and paths from the
 * id, private, the default commit count, and its checksum stand-in.
 */
export function insertSeedItems(db: Db, items: SeedItems, now: string): void {
  const select = (rows: number) => `INSERT OR REPLACE INTO items (${ITEM_COLUMNS}, hidden, pending_delete)
    SELECT column1, i, column1 || '-' || i, column1 || '-' || i, CASE column1 WHEN 'group' THEN '' ELSE ? END,
      'private', column3, 0, column4, column5, ${COMMITS}, 1, NULL, ?, ?, column6, column7
    -- JavaScript numbers bind as REAL: the cast keeps names free of a trailing ".0".
    FROM (SELECT CAST(column2 AS INTEGER) AS i, * FROM (VALUES ${Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}))`;
  const full = db.prepare(select(BATCH_ROWS));
  const buffer: unknown[] = [items.namespace, now, now];
  const flush = () => {
    const rows = (buffer.length - 3) / PARAMS;
    if (rows === BATCH_ROWS) full.run(buffer);
    else if (rows > 0) db.prepare(select(rows)).run(buffer);
    buffer.length = 3;
  };
  for (let i = 0; i < items.count; i++) {
    const kind = KINDS[items.kinds[i] as number] as ItemKind;
    const id = items.ids[i] as number;
    const bytes = items.sizes[i] as number;
    const f = items.flags[i] as number;
    buffer.push(
      kind,
      id,
      items.storageNames[items.storages[i] as number],
      Number.isNaN(bytes) ? DEFAULT_SIZE_MB : bytes / MB,
      fakeChecksum(kind, id, COMMITS),
      f & HIDDEN ? 1 : 0,
      f & PENDING ? 1 : 0,
    );
    if (buffer.length === 3 + BATCH_ROWS * PARAMS) flush();
  }
  flush();
}
