/**
 * The HTML report's sections on repository copies (../copies.ts): copies left behind on the
 * storage an item left, copies on the destination of failed moves, and copies that are live again
 * (their item lives on that storage now: never to be removed). The page's own table and section
 * helpers are passed in, so this module needs nothing of the page.
 */
import { CLUSTER_NOTE } from '../copies.js';
import type { LeftCopy, LiveCopy } from '../copies.js';

export interface PageParts {
  table(id: string, headers: string[], rows: (string | number)[][], numeric?: boolean[]): string;
  section(id: string, title: string, body: string): string;
  escapeHtml(s: string): string;
}

function whereNow(c: LeftCopy): string {
  return c.known === 'unknown' ? `NOT KNOWN: ${c.note}` : `${c.itemStorage ?? 'nowhere'} (${c.note})`;
}

/** The three sections, each only when it has a row. */
export function copiesHtml(d: { orphans: LeftCopy[]; liveCopies?: LiveCopy[] | undefined }, p: PageParts): string {
  const source = d.orphans.filter((c) => c.side === 'source');
  const destination = d.orphans.filter((c) => c.side === 'destination');
  const live = d.liveCopies ?? [];
  const cluster = `<p class="note">${p.escapeHtml(CLUSTER_NOTE)}</p>`;
  const rows = (list: LeftCopy[]) =>
    list.map((c) => [c.kind, c.id, c.name, c.source, c.cause, whereNow(c), c.diskPaths.join(' ')]);
  const headers = (on: string) => [
    'Kind',
    'Id',
    'Name',
    on,
    'Why',
    'Where the item lives',
    'Paths (relative to the storage)',
  ];
  const numeric = [false, true, false, false, false, false, false];
  /** One section of copies left behind: `tableId`'s rows, `on` naming the storage column. */
  const leftBehind = (tableId: string, title: string, note: string, on: string, list: LeftCopy[]) =>
    p.section(
      `${tableId}-section`,
      `${title} (${list.length})`,
      `<p class="note">${note}</p>` + p.table(tableId, headers(on), rows(list), numeric) + cluster,
    );
  const out: string[] = [];
  if (source.length > 0)
    out.push(
      leftBehind(
        'orphans',
        'Source copies left behind',
        'Moved, but a copy of the repository stays on the old storage (the move ended <code>cleanup failed</code>, or failed after the switch). Nothing deletes them: check where the item lives and each path on the storage, then remove it.',
        'Left on',
        source,
      ),
    );
  if (destination.length > 0)
    out.push(
      leftBehind(
        'destination-copies',
        'Copies left on the destination by failed moves',
        'The move did not take the item there, but it may have copied it before it failed (a job killed after the copy, or a later repository of the project failing). Nothing deletes them: check where the item lives and each path on the storage, then remove it.',
        'Copy on',
        destination,
      ),
    );
  if (live.length > 0)
    out.push(
      p.section(
        'live-copies-section',
        `Copies that are live (${live.length})`,
        '<p class="note">Each was, or would be, a copy left behind, but its item lives on that storage now: the copy IS the repository. Do not remove it.</p>' +
          p.table(
            'live-copies',
            ['Kind', 'Id', 'Name', 'Storage', 'Why'],
            live.map((c) => [c.kind, c.id, c.name, c.storage, c.why]),
            [false, true, false, false, false],
          ),
      ),
    );
  return out.join('\n');
}
