/**
 * Polling in-flight moves through the paginated move lists (newest first) rather than one GET per
 * move: a page of 100 covers every move of a throttled run in flight, so a poll costs one request.
 */
import type { InstanceApi, MoveRecord } from '../../api/types.js';
import type { Kind } from '../../plan/types.js';

export const MOVES_PER_PAGE = 100;

export interface PollResult {
  /** Moves found, by id. */
  found: Map<number, MoveRecord>;
  /** Moves newer than `discoverAbove` (bulk discovery), newest first. */
  discovered: MoveRecord[];
  /** Wanted ids the instance no longer knows (404 on GET). */
  missing: number[];
}

/**
 * Reads move-list pages from the newest until every wanted id was seen, the page reaches ids
 * below the smallest wanted one, or a page after the first holds none of them (and, when
 * discovering, until at or below `discoverAbove`). The few ids not seen that way are fetched one
 * by one.
 */
export async function pollMoves(
  api: InstanceApi,
  kind: Kind,
  wanted: readonly number[],
  discoverAbove: number | null = null,
): Promise<PollResult> {
  const want = new Set(wanted);
  const found = new Map<number, MoveRecord>();
  const discovered: MoveRecord[] = [];
  // A loop, not Math.min(...wanted): bulk mode can track more ids than a call's argument limit.
  let minWanted = Infinity;
  let maxWanted = -Infinity;
  for (const id of wanted) {
    if (id < minWanted) minWanted = id;
    if (id > maxWanted) maxWanted = id;
  }
  if (want.size > 0 || discoverAbove !== null) {
    let page: number | null = 1;
    while (page !== null) {
      const res = await api.listMoves(kind, page, MOVES_PER_PAGE);
      let lowest = Infinity;
      let highest = -Infinity;
      let hits = 0;
      for (const m of res.moves) {
        lowest = Math.min(lowest, m.id);
        highest = Math.max(highest, m.id);
        if (want.has(m.id)) {
          found.set(m.id, m);
          hits++;
        }
        if (discoverAbove !== null && m.id > discoverAbove && !want.has(m.id)) discovered.push(m);
      }
      // Newest first: once a page reaches below an id, every newer move has been seen. A page with
      // none of ours, below our newest, means the rest are old (long-running) moves: one GET each
      // beats paging to them. Pages above our newest hold moves created since (the run's own POSTs
      // still unanswered, or someone else's): they say nothing about ours, so paging goes on.
      const wantedDone =
        found.size === want.size || lowest <= minWanted || (page > 1 && hits === 0 && highest < maxWanted);
      const discoveryDone = discoverAbove === null || lowest <= discoverAbove;
      if (res.moves.length === 0 || (wantedDone && discoveryDone)) break;
      page = res.nextPage;
    }
  }
  const missing: number[] = [];
  for (const id of want) {
    if (found.has(id)) continue;
    const m = await api.getMove(kind, id);
    if (m) found.set(id, m);
    else missing.push(id);
  }
  return { found, discovered, missing };
}
