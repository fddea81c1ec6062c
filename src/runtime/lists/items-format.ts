/**
 * The reviewed item list's format (`run --dry-run --items FILE` writes it, `run --only FILE` applies
 * it, read by ./items-file.ts): every item a run would move, one per line, as JSON lines or CSV,
 * with the plan's hash.
 *
 * JSON lines (`.jsonl`, `.ndjson`, `.json`): a header line, then one object per item:
 *
 *   {"shardmove_items":1,"plan":"retire-nfs","plan_hash":"9f2c...","created_at":"2026-...Z","items":2}
 *   {"kind":"projects","id":12,"path":"acme/tools","size_bytes":1048576,"source":"nfs-1","destination":"cluster","check":"5d41402abc4b2a76"}
 *
 * CSV (`.csv`): a header row `kind,id,path,size_bytes,source,destination,plan_hash,check`, each
 * row carrying the plan's hash (a spreadsheet keeps it through a sort). RFC 4180 quoting; a text
 * that a spreadsheet would take for a formula (`=`, `+`, `-`, `@`) gets a leading `'`. Control
 * characters and bidi overrides in a path (a snippet's title can hold any) are written as `\uXXXX`.
 *
 * `check` is a digest of the plan hash, kind, id, source and destination: a line typed by hand or
 * changed (another destination, a source for a destination) does not match it and is refused. Lines
 * may be removed freely: the list applied is the list as reviewed. `path` and `size_bytes` are for
 * the reviewers; the run reads each item's own on the instance.
 */
import { createHash } from 'node:crypto';
import { extname } from 'node:path';
import type { GivenItem } from '../../actors/index.js';
import { escapeControls } from '../../report/escape.js';

export const ITEMS_FORMAT = 1;
export type ItemsFormat = 'jsonl' | 'csv';
export const CSV_COLUMNS = ['kind', 'id', 'path', 'size_bytes', 'source', 'destination', 'plan_hash', 'check'] as const;
/** A list is names and a few numbers per item: a million items fit far below this. */
export const MAX_ITEMS_FILE_BYTES = 512_000_000;

/** One item of the list: what the runtime gives the drain, and the line it stands on. */
export interface ListedItem extends GivenItem {
  /** The line it was read from (1-based), for messages; 0 for a list being written. */
  line: number;
}

export interface ItemsList {
  format: ItemsFormat;
  planHash: string;
  /** The plan's name as the list's header says it (JSON lines only). */
  planName: string | null;
  items: ListedItem[];
}

/** The format a file's name says, or null. */
export function formatOfName(file: string): ItemsFormat | null {
  const ext = extname(file).toLowerCase();
  if (ext === '.jsonl' || ext === '.ndjson' || ext === '.json') return 'jsonl';
  if (ext === '.csv') return 'csv';
  return null;
}

/** The line's `check`: ties kind, id, source and destination to the plan hash. */
export function checkOf(planHash: string, it: Pick<ListedItem, 'kind' | 'id' | 'source' | 'destination'>): string {
  return createHash('sha256')
    .update(`${planHash}\n${it.kind}\n${it.id}\n${it.source}\n${it.destination}`)
    .digest('hex')
    .slice(0, 16);
}

/** The digest of a list: its items (kind, id, source, destination), in any order, whatever the format. */
export function digestOf(planHash: string, items: readonly ListedItem[]): string {
  const lines = items.map((i) => `${i.kind}\t${i.id}\t${i.source}\t${i.destination}`).sort();
  return createHash('sha256')
    .update(`${planHash}\n${lines.join('\n')}`)
    .digest('hex');
}

/** The list's text, in chunks (a large list is never one string). */
export function* renderItems(
  format: ItemsFormat,
  header: { planName: string; planHash: string; createdAt: string },
  items: readonly ListedItem[],
): Generator<string> {
  if (format === 'jsonl') {
    yield `${JSON.stringify({
      shardmove_items: ITEMS_FORMAT,
      plan: header.planName,
      plan_hash: header.planHash,
      created_at: header.createdAt,
      items: items.length,
    })}\n`;
    for (const it of items)
      yield `${JSON.stringify({
        kind: it.kind,
        id: it.id,
        // Written visibly: a bidi override in a title would reorder the line a reviewer reads.
        path: escapeControls(it.path),
        size_bytes: it.sizeBytes,
        source: it.source,
        destination: it.destination,
        check: checkOf(header.planHash, it),
      })}\n`;
    return;
  }
  yield `${CSV_COLUMNS.join(',')}\r\n`;
  for (const it of items) {
    const row = [
      it.kind,
      String(it.id),
      spreadsheetSafe(it.path),
      it.sizeBytes === null ? '' : String(it.sizeBytes),
      it.source,
      it.destination,
      header.planHash,
      checkOf(header.planHash, it),
    ];
    yield `${row.map(csvField).join(',')}\r\n`;
  }
}

/**
 * A text a spreadsheet would evaluate (`=1+1`, `@SUM(...)`) is kept as text, and control characters
 * and bidi overrides (a title can hold any) are written visibly, as every output of shardmove does.
 */
function spreadsheetSafe(text: string): string {
  const shown = escapeControls(text);
  return /^[=+\-@\t\r]/.test(shown) ? `'${shown}` : shown;
}

function csvField(text: string): string {
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
