/**
 * Where a drain goes and how far (many destinations, partial drains): `move.to` as one storage or a list of them, and
 * `move.until` for a partial drain.
 *
 *   move:
 *     from: [nfs-1]
 *     to: [gitaly-2, gitaly-3]     # each item goes to the one with the most room left
 *     until: {moved: 2TiB}         # or {free: 500GiB}: stop once the source has that much free
 */
import type { Node } from 'yaml';
import { isScalar, isSeq } from 'yaml';
import { MAX_SIZE_BYTES, SIZE_PATTERN, SIZE_TOO_LARGE, parseSize } from './capacity-field.js';
import type { FieldDoc, JsonSchema } from './field-table.js';
import { VAR_STRING, textSchema } from './json-schema.js';
import type { Entry, Reader } from './reader.js';
import type { MoveUntil } from './values.js';

const STORAGE_RE = /[\s/\\]/;
export const STORAGE_SCHEMA = textSchema({ pattern: '^[^\\s/\\\\]+$', maxLength: 255 });

/** One storage name at `path`; undefined (reported) when it is none. */
export function readStorage(r: Reader, node: Node, path: string): string | undefined {
  const at = r.posOf(node);
  r.mark(path, at);
  const s = r.string(node, path);
  if (!s) return undefined;
  if (s.value === '' || STORAGE_RE.test(s.value) || s.value.length > 255) {
    r.error(path, at, 'expected a storage name (no spaces or slashes)');
    return undefined;
  }
  return s.value;
}

/** A list of storage names, at least one, each once (a repeat is reported where it is written). */
export function readStorageList(r: Reader, node: Node, path: string, what: string): string[] | undefined {
  const read: string[] = [];
  return r.each(node, path, { items: 'storage names', wrongCount: `list at least one ${what}` }, (item, itemPath) => {
    const s = readStorage(r, item, itemPath);
    if (s === undefined) return undefined;
    if (read.includes(s)) return void r.error(itemPath, r.posOf(item), `${JSON.stringify(s)} is listed twice`);
    read.push(s);
    return s;
  });
}

/** `move.to`: one storage, or a list of them; always a list once read. */
export function readDestinations(r: Reader, node: Node, path: string): string[] | undefined {
  if (!isSeq(node)) {
    const one = readStorage(r, node, path);
    return one === undefined ? undefined : [one];
  }
  return readStorageList(r, node, path, 'destination storage');
}

export const DESTINATIONS_SCHEMA: JsonSchema = {
  anyOf: [STORAGE_SCHEMA, { type: 'array', items: STORAGE_SCHEMA, minItems: 1, uniqueItems: true }],
};

export const DESTINATIONS_DOC: FieldDoc = {
  type: 'storage name, or a list of them',
  allowed: 'none of them a source; a list at least one, each once',
  more:
    'With a list, each item goes to the destination with the most room left after the bytes already placed there ' +
    "(room from [`capacity`](operations.md#rules-and-room-from-prometheus) where the plan has it, otherwise bytes in proportion to the destinations' weights; " +
    'a fork network is placed as one unit of its members, their pool objects and one pool copy, and with a list the sources are listed before the first move so that every member is known); ' +
    'the choice is recorded before the move is posted. See [Many destinations](operations.md#many-destinations-and-partial-drains).',
};

export const UNTIL_KEYS = ['moved', 'free'] as const;
const get = (m: Map<string, Entry>, k: string): Node | null => m.get(k)?.value ?? null;

/** `move.until`: `{moved: SIZE}` or `{free: SIZE}`, exactly one; undefined when unusable (reported). */
export function readUntil(r: Reader, node: Node, path: string): MoveUntil | undefined {
  const fields = r.fields(node, path, UNTIL_KEYS);
  if (!fields) return undefined;
  const { entries: m, written } = fields;
  if (written.length !== 1) {
    r.error(
      path,
      r.posOf(node),
      written.length === 0
        ? 'write one bound: {moved: 2TiB} or {free: 500GiB}'
        : 'write one bound, not both: {moved: ...} or {free: ...}',
    );
    return undefined;
  }
  const key = written[0]!;
  const v = get(m, key)!;
  r.mark(`${path}.${key}`, r.posOf(v));
  let bytes: number | null = null;
  if (isScalar(v) && typeof v.value === 'number') bytes = Number.isInteger(v.value) && v.value > 0 ? v.value : null;
  else {
    const s = r.string(v, `${path}.${key}`);
    if (!s) return undefined;
    bytes = parseSize(s.value);
    if (bytes === 0) bytes = null;
  }
  if (bytes === null) {
    r.error(`${path}.${key}`, r.posOf(v), 'expected bytes above 0: a whole number, or a size such as 500GiB, 2TiB');
    return undefined;
  }
  if (bytes > MAX_SIZE_BYTES) {
    r.error(`${path}.${key}`, r.posOf(v), SIZE_TOO_LARGE);
    return undefined;
  }
  return key === 'moved' ? { movedBytes: bytes } : { freeBytes: bytes };
}

const BYTES_SCHEMA: JsonSchema = {
  anyOf: [{ type: 'integer', minimum: 1, maximum: MAX_SIZE_BYTES }, textSchema({ pattern: SIZE_PATTERN }), VAR_STRING],
};

export const UNTIL_SCHEMA: JsonSchema = {
  type: 'object',
  properties: { moved: BYTES_SCHEMA, free: BYTES_SCHEMA },
  minProperties: 1,
  maxProperties: 1,
  additionalProperties: false,
};

export const UNTIL_DOC: FieldDoc = {
  type: 'mapping',
  default: 'absent (drain every source empty)',
  more: 'Largest first, as always; verification then checks what was scheduled and reports what is left on the source as expected. See [partial drains](operations.md#many-destinations-and-partial-drains).',
  keys: {
    moved: {
      type: 'bytes',
      default: 'one of the two',
      allowed: 'above 0 and below 8 PiB, a whole number or a size (`2TiB`)',
      meaning: 'Stop scheduling from each source once this many bytes have left it.',
    },
    free: {
      type: 'bytes',
      default: 'one of the two',
      allowed: 'above 0 and below 8 PiB; needs the source in `capacity.storages`',
      meaning: "Stop once the source's free space, from `capacity`, reaches this.",
    },
  },
};
