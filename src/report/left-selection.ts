/**
 * Items `move.select` no longer chose when their move was due (a project transferred into an
 * excluded namespace since it was listed, or since a reviewed list was made): they were not moved and
 * stay on their source. Named in the run's summary, `status` and the report, in the same words.
 */
import type { Kind } from '../plan/types.js';

/** One item that left the selection, as the checkpoint records it. */
export interface LeftSelectionItem {
  kind: Kind;
  id: number;
  name: string;
  source: string;
  /** "left the selection: now acme/team/web, excluded by acme/team". */
  reason: string;
}

/** The items listed by name before the rest are counted. */
export const LEFT_SELECTION_LISTED = 50;

/** What the checkpoint's rows give for the outputs: the first rows by kind and id, and how many in all. */
export function leftSelectionOf(read: {
  rows: readonly { kind: Kind; id: number; name: string; source: string; lastError: string | null }[];
  total: number;
}): { items: LeftSelectionItem[]; total: number } {
  return {
    items: read.rows.map((r) => ({
      kind: r.kind,
      id: r.id,
      name: r.name,
      source: r.source,
      reason: r.lastError ?? '',
    })),
    total: read.total,
  };
}

/** The summary's lines: a heading and one line per item (none when no item left the selection). */
export function leftSelectionLines(
  left: { items: readonly LeftSelectionItem[]; total: number } | undefined,
  more = 'status --json lists them',
): string[] {
  if (!left || left.total === 0) return [];
  const lines = [
    '',
    `Not moved: left the selection (${left.total}); move.select no longer chose them when their move was due, they stay on their source:`,
    ...left.items.map((i) => `  ${i.kind} ${i.id} (${i.name}) on ${i.source}: ${i.reason}`),
  ];
  if (left.total > left.items.length) lines.push(`  ... and ${left.total - left.items.length} more (${more})`);
  return lines;
}
