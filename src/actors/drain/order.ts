/**
 * The one schedule's order (`move.order: together`): every item of every kind on every source in
 * one largest-first order, so the drain has one tail instead of one per kind and source.
 *
 * Within one (kind, source) the order is the checkpoint's own (store/schema.ts, RANK_ORDER_SQL):
 * by size class, largest first, a fork network's members ranked by the network's bytes and kept
 * together, then by id. Across pairs the same key decides, with the kinds whose size the API does
 * not give (snippets, group wikis) ranked by the allowance placement charges them
 * (placement.ts, SIZE_ALLOWANCE); a project of unknown size still comes last, as within its kind.
 * Ties go to the pair that comes first (sources in the plan's order, then kinds). Each pair's rows
 * come from its own index walk, in its own order, so merging them needs only this key: no index
 * over every pair.
 */
import type { Kind } from '../../plan/types.js';
import { SIZE_ALLOWANCE } from './placement.js';

/** What an item's place in the order is made of. */
export interface OrderKey {
  /** Its size class: floor(log2(bytes)), -1 for 0 bytes, -2 for a project of unknown size. */
  cls: number;
  /** Its network's root id, or its own id: a network's members follow each other. */
  group: number;
  id: number;
  /** The index of its (source, kind) pair in the run's order. */
  pair: number;
}

/** The size class of `bytes` as the checkpoint's index computes it (SIZE_CLASS_SQL). */
export function sizeClass(bytes: number | null): number {
  if (bytes === null) return -2;
  if (bytes < 1) return -1;
  // The index's CASE stops at 2^50; log2 may round up just below a power of two.
  let c = Math.min(50, Math.floor(Math.log2(bytes)));
  if (2 ** c > bytes) c--;
  return c;
}

/** The class an item ranks by in the one schedule. */
export function rankClass(kind: Kind, rankBytes: number | null): number {
  return kind === 'projects' ? sizeClass(rankBytes) : sizeClass(SIZE_ALLOWANCE[kind]);
}

/** The key of an item row of pair `pair`. */
export function orderKey(
  kind: Kind,
  row: { id: number; sizeBytes: number | null; network?: number | null; rankBytes?: number | null },
  pair: number,
): OrderKey {
  return {
    // COALESCE(rank_bytes, size_bytes): only a network's members have rank bytes.
    cls: rankClass(kind, row.rankBytes ?? row.sizeBytes),
    group: row.network ?? row.id,
    id: row.id,
    pair,
  };
}

/** Negative when `a` comes first. */
export function compareKeys(a: OrderKey, b: OrderKey): number {
  return b.cls - a.cls || a.group - b.group || a.id - b.id || a.pair - b.pair;
}

/**
 * Merges lists that are each already in the order into one, up to `limit` entries: a k-way merge
 * over the heads (the lists are few: one per kind and source).
 */
export function mergeOrdered<T>(lists: readonly (readonly T[])[], keyOf: (x: T) => OrderKey, limit: number): T[] {
  const heads = lists.map(() => 0);
  const keys = lists.map((l) => (l.length > 0 ? keyOf(l[0] as T) : null));
  const out: T[] = [];
  while (out.length < limit) {
    let best = -1;
    for (let i = 0; i < lists.length; i++) {
      const k = keys[i];
      if (k && (best < 0 || compareKeys(k, keys[best] as OrderKey) < 0)) best = i;
    }
    if (best < 0) break;
    const list = lists[best] as readonly T[];
    out.push(list[heads[best] as number] as T);
    const next = (heads[best] as number) + 1;
    heads[best] = next;
    keys[best] = next < list.length ? keyOf(list[next] as T) : null;
  }
  return out;
}
