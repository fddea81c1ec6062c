/**
 * `capacity:`: how much room each receiving storage has, so that pre-flight can
 * refuse a drain that does not fit before its first write, and the run can pause when a destination
 * fills up (`keep_free`).
 *
 *   capacity:
 *     keep_free: 100GiB
 *     storages:
 *       cluster: {free: 'node_filesystem_avail_bytes{mountpoint="/var/opt/gitlab/git-data"}'}
 *       nfs-3: {free: 2TiB}
 */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import type { FieldDoc, JsonSchema } from './field-table.js';
import { VAR_STRING, textSchema } from './json-schema.js';
import type { Entry, Reader } from './reader.js';
import type { CapacityPlan } from './values.js';

export const CAPACITY_KEYS = ['keep_free', 'storages'] as const;
const STORAGE_KEYS = ['free'] as const;
const UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  kib: 2 ** 10,
  mb: 1e6,
  mib: 2 ** 20,
  gb: 1e9,
  gib: 2 ** 30,
  tb: 1e12,
  tib: 2 ** 40,
  pb: 1e15,
  pib: 2 ** 50,
};
export const SIZE_PATTERN = '^\\s*\\d+(?:\\.\\d+)?\\s*(?:[kKmMgGtTpP][iI]?)?[bB]\\s*$';
const SIZE_RE = /^\s*(\d+(?:\.\d+)?)\s*([kmgtp]i?)?b\s*$/i;

/**
 * The largest size a plan may write: 2^53 - 1 bytes (just under 8 PiB), the largest whole number of
 * bytes a JavaScript number holds exactly, and more than any one Gitaly storage holds. A larger
 * figure is a typing mistake (1e23 bytes is 86 billion PiB), and past it sums of bytes stop being
 * exact (YAML reads 9007199254740993 as 9007199254740992).
 */
export const MAX_SIZE_BYTES = Number.MAX_SAFE_INTEGER;

/** Why a size past MAX_SIZE_BYTES is refused, for the plan's file:line:col message. */
export const SIZE_TOO_LARGE =
  'is 8 PiB (2^53 bytes) or more, more than any storage holds: check the figure and its unit';

/** `2TiB`, `500GB`, `1024B` -> bytes (1024-based with `i`); null when the text is no size. */
export function parseSize(text: string): number | null {
  const m = SIZE_RE.exec(text);
  if (!m) return null;
  return Math.round(Number(m[1]) * UNITS[`${(m[2] ?? '').toLowerCase()}b`]!);
}

/** Bytes as people read them: `1.5 TiB`. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${i === 0 ? String(v) : v.toFixed(1)} ${units[i]}`;
}

const get = (m: Map<string, Entry>, k: string): Node | null => m.get(k)?.value ?? null;

function readBytes(r: Reader, node: Node, path: string): number | undefined {
  r.mark(path, r.posOf(node));
  let b: number | null = null;
  if (isScalar(node) && typeof node.value === 'number') {
    if (Number.isInteger(node.value) && node.value >= 0) b = node.value;
  } else {
    const s = r.string(node, path);
    if (!s) return undefined;
    b = parseSize(s.value);
  }
  if (b === null) {
    r.error(path, r.posOf(node), 'expected bytes: a whole number, or a size such as 100GiB, 2TiB, 500GB');
    return undefined;
  }
  if (b > MAX_SIZE_BYTES) {
    r.error(path, r.posOf(node), SIZE_TOO_LARGE);
    return undefined;
  }
  return b;
}

/** Reads `capacity`; undefined when it is unusable (each problem reported at its node). */
export function readCapacity(r: Reader, node: Node, path: string): CapacityPlan | undefined {
  r.mark(path, r.posOf(node));
  const m = r.map(node, path, CAPACITY_KEYS);
  if (!m) return undefined;
  let ok = true;
  let keepFreeBytes = 0;
  const kf = get(m, 'keep_free');
  if (!r.isNull(kf)) {
    const b = readBytes(r, kf!, `${path}.keep_free`);
    if (b === undefined) ok = false;
    else keepFreeBytes = b;
  }
  const storages: CapacityPlan['storages'] = {};
  const sNode = get(m, 'storages');
  if (r.isNull(sNode)) {
    r.error(
      `${path}.storages`,
      r.posOf(node),
      'is required: name the destination, e.g. storages: {cluster: {free: 2TiB}}',
    );
    return undefined;
  }
  r.mark(`${path}.storages`, r.posOf(sNode));
  for (const e of r.record(sNode, `${path}.storages`) ?? []) {
    const p = `${path}.storages.${e.name}`;
    r.mark(p, r.posOf(e.value, r.posOf(e.key)));
    const sm = r.map(e.value, p, STORAGE_KEYS);
    const free = sm ? get(sm, 'free') : null;
    if (!sm || r.isNull(free)) {
      if (sm)
        r.error(`${p}.free`, r.posOf(e.key), 'is required: a size (2TiB) or a PromQL query answering the free bytes');
      ok = false;
      continue;
    }
    r.mark(`${p}.free`, r.posOf(free));
    if (isScalar(free) && typeof free!.value === 'number') {
      const b = readBytes(r, free!, `${p}.free`);
      if (b === undefined) ok = false;
      else storages[e.name] = { bytes: b };
      continue;
    }
    const s = r.string(free, `${p}.free`);
    if (!s || s.value.trim() === '') {
      if (s) r.error(`${p}.free`, r.posOf(free), 'is empty');
      ok = false;
      continue;
    }
    const b = parseSize(s.value);
    if (b !== null && b > MAX_SIZE_BYTES) {
      r.error(`${p}.free`, r.posOf(free), SIZE_TOO_LARGE);
      ok = false;
      continue;
    }
    storages[e.name] = b !== null ? { bytes: b } : { query: s.value.trim() };
  }
  return ok ? { keepFreeBytes, storages } : undefined;
}

const BYTES_SCHEMA: JsonSchema = {
  anyOf: [{ type: 'integer', minimum: 0, maximum: MAX_SIZE_BYTES }, textSchema({ pattern: SIZE_PATTERN }), VAR_STRING],
};

export const CAPACITY_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    keep_free: BYTES_SCHEMA,
    storages: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        properties: { free: { anyOf: [{ type: 'integer', minimum: 0 }, textSchema({ pattern: '\\S' })] } },
        required: ['free'],
        additionalProperties: false,
      },
    },
  },
  required: ['storages'],
  additionalProperties: false,
};

export const CAPACITY_DOC: FieldDoc = {
  type: 'mapping',
  default: 'absent (room not checked)',
  more: 'See [rules and room from Prometheus](operations.md#rules-and-room-from-prometheus).',
  keys: {
    keep_free: {
      type: 'bytes',
      default: '`0`',
      allowed: 'a whole number or a size (`100GiB`, `500GB`), below 8 PiB',
      meaning:
        'What must stay free on the destination after the drain; below it during the run, the run pauses (rule `capacity:<storage>`).',
    },
    storages: {
      type: 'mapping storage -> {free}',
      default: 'required with `capacity`',
      allowed: '`free`: a size (`2TiB`, below 8 PiB) or a PromQL query (needs `prometheus`)',
      meaning: "Each receiving storage's free bytes. The destination must be listed.",
    },
  },
};
