/**
 * Item listings that survive a page GitLab cannot render. One unrenderable item turns its whole page
 * into a persistent 500 (docs/gitlab-behaviour.md §8), which the client's retries cannot fix. Here a
 * page that still fails after the client's retries is narrowed down (smaller pages, then one item at
 * a time) so the rest of the listing goes on, and the item that breaks it is reported as a gap.
 *
 * Pure over a page fetcher, so the HTTP client and the unit tests' fake instance share the logic.
 * Every narrowing is bounded: at most `MAX_PROBES` extra requests per failing page.
 */
import { ApiHttpError } from './errors.js';
import type { ItemRecord, UnlistableGap } from './types.js';
import type { Kind } from '../plan/types.js';

/** Page sizes tried in turn around a failing page. */
const NARROWING = [10, 1] as const;
/** Extra requests spent on one failing page before the rest of it is given up as one gap. */
const MAX_PROBES = 64;

/** A page failed in a way narrowing can work around: a server error that outlived the client's retries. */
export function isPersistentPageError(err: unknown): boolean {
  return err instanceof ApiHttpError && err.status >= 500;
}

/** One keyset page: items with id > `idAfter` (and < `idBefore` when given), ascending. */
export type KeysetFetch = (q: {
  idAfter: number;
  idBefore?: number;
  perPage: number;
}) => Promise<{ items: ItemRecord[]; hasNext: boolean }>;

/** One offset page (1-based), in the listing's own order. */
export type OffsetFetch = (page: number, perPage: number) => Promise<{ items: ItemRecord[]; hasNext: boolean }>;

interface ListOpts {
  kind: Kind;
  perPage: number;
  onUnlistable?: (gap: UnlistableGap) => void;
}

/**
 * Keyset pages by id, from `afterId`. A page that keeps failing is fetched again 10 at a time, then
 * one at a time; a single-item page that fails means the first item after the cursor breaks the
 * listing. Its id is then found exactly by binary search on `id_after`: the smallest `x` whose
 * page of one succeeds is the broken item's id (the page after `x - 1` failed, the one after `x`
 * did not). Ids below it that also fail are reported as one range.
 */
export async function* listKeysetIsolating(
  fetch: KeysetFetch,
  opts: ListOpts & { afterId: number },
): AsyncGenerator<ItemRecord[]> {
  let after = opts.afterId;
  for (;;) {
    let page: { items: ItemRecord[]; hasNext: boolean };
    try {
      page = await fetch({ idAfter: after, perPage: opts.perPage });
    } catch (err) {
      if (!isPersistentPageError(err)) throw err;
      const r = await narrowKeyset(fetch, after, opts);
      if (r.items.length > 0) yield r.items;
      if (r.next === null) return;
      after = r.next;
      continue;
    }
    if (page.items.length > 0) yield page.items;
    if (!page.hasNext || page.items.length === 0) return;
    after = (page.items[page.items.length - 1] as ItemRecord).id;
  }
}

/** Gets past one failing keyset page; returns the good items found and the cursor to go on from (null: the end). */
async function narrowKeyset(
  fetch: KeysetFetch,
  from: number,
  opts: ListOpts,
): Promise<{ items: ItemRecord[]; next: number | null }> {
  let probes = 0;
  const tryFetch = async (idAfter: number, perPage: number, idBefore?: number) => {
    probes++;
    try {
      return await fetch({ idAfter, perPage, ...(idBefore !== undefined ? { idBefore } : {}) });
    } catch (err) {
      if (!isPersistentPageError(err)) throw err;
      return null;
    }
  };
  const items: ItemRecord[] = [];
  let after = from;
  // Good items up to the broken one, with smaller and smaller pages over the failed page's span.
  let span = opts.perPage;
  for (const size of NARROWING) {
    if (size >= span) continue;
    let failed = false;
    for (let n = 0; n < Math.ceil(span / size); n++) {
      const p = await tryFetch(after, size);
      if (p === null) {
        failed = true;
        break;
      }
      items.push(...p.items);
      if (p.items.length < size || !p.hasNext) return { items, next: null };
      after = (p.items[p.items.length - 1] as ItemRecord).id;
    }
    // The failure did not come back at this size: go on with normal pages.
    if (!failed) return { items, next: after };
    span = size;
  }
  // The first item after `after` breaks the listing. Find an upper bound `hi` whose page succeeds...
  let lo = after;
  let step = 1;
  let hi: number | null = null;
  while (probes < MAX_PROBES) {
    const x = after + step;
    if ((await tryFetch(x, 1)) !== null) {
      hi = x;
      break;
    }
    lo = x;
    step *= 2;
  }
  if (hi === null) {
    opts.onUnlistable?.({
      kind: opts.kind,
      id: null,
      afterId: after,
      beforeId: null,
      reason: 'listing fails from here on',
    });
    return { items, next: null };
  }
  return { items, next: await pinBrokenId(tryFetch, after, lo, hi, () => probes < MAX_PROBES, opts) };
}

/** Binary search between a failing cursor `lo` and a succeeding one `hi`; reports the gap and returns where to go on. */
async function pinBrokenId(
  tryFetch: (idAfter: number, perPage: number, idBefore?: number) => Promise<unknown>,
  after: number,
  lo: number,
  hi: number,
  budget: () => boolean,
  opts: ListOpts,
): Promise<number> {
  // ...then the smallest id whose page succeeds: pages after lo fail, after hi succeed.
  while (hi - lo > 1 && budget()) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if ((await tryFetch(mid, 1)) !== null) hi = mid;
    else lo = mid;
  }
  if (hi - lo > 1) {
    opts.onUnlistable?.({
      kind: opts.kind,
      id: null,
      afterId: after,
      beforeId: hi + 1,
      reason: 'listing fails in this id range',
    });
    return hi;
  }
  // `hi` itself is the broken item. Anything between the cursor and it that fails too is a range.
  opts.onUnlistable?.({
    kind: opts.kind,
    id: hi,
    afterId: after,
    beforeId: hi + 1,
    reason: 'this item breaks the listing (HTTP 500)',
  });
  if (hi - after > 1 && (await tryFetch(after, 1, hi)) === null) {
    opts.onUnlistable?.({
      kind: opts.kind,
      id: null,
      afterId: after,
      beforeId: hi,
      reason: 'listing fails in this id range',
    });
  }
  return hi;
}

/**
 * Offset pages from page 1. A page that keeps failing is fetched again as pages of 10, then of 1
 * (page arithmetic over the same positions); a page of one that fails is a gap at that position,
 * bounded by the ids of its listed neighbours (the id itself is unknown).
 */
export async function* listOffsetIsolating(fetch: OffsetFetch, opts: ListOpts): AsyncGenerator<ItemRecord[]> {
  let last: ItemRecord | null = null;
  for (let page = 1; ; page++) {
    let res: { items: ItemRecord[]; hasNext: boolean };
    try {
      res = await fetch(page, opts.perPage);
    } catch (err) {
      if (!isPersistentPageError(err)) throw err;
      const r = await narrowOffset(fetch, (page - 1) * opts.perPage, opts.perPage, last, opts);
      if (r.items.length > 0) {
        yield r.items;
        last = r.items[r.items.length - 1] as ItemRecord;
      }
      if (r.end) return;
      continue;
    }
    if (res.items.length > 0) {
      yield res.items;
      last = res.items[res.items.length - 1] as ItemRecord;
    }
    if (!res.hasNext || res.items.length === 0) return;
  }
}

/** Positions [start, start + count) one size at a time; returns the good items and whether the listing ended. */
async function narrowOffset(
  fetch: OffsetFetch,
  start: number,
  count: number,
  before: ItemRecord | null,
  opts: ListOpts,
) {
  const items: ItemRecord[] = [];
  let probes = 0;
  let prev = before;
  const gaps: number[] = [];
  const walk = async (from: number, n: number, sizes: readonly number[]): Promise<boolean> => {
    const [size, ...rest] = sizes;
    if (size === undefined) return false;
    for (let pos = from; pos < from + n; pos += size) {
      if (probes++ >= MAX_PROBES) {
        gaps.push(pos);
        opts.onUnlistable?.({
          kind: opts.kind,
          id: null,
          afterId: prev?.id ?? null,
          beforeId: null,
          reason: `listing positions ${pos}-${from + n - 1} not read (probe limit)`,
        });
        return false;
      }
      let res: { items: ItemRecord[]; hasNext: boolean } | null = null;
      try {
        res = await fetch(pos / size + 1, size);
      } catch (err) {
        if (!isPersistentPageError(err)) throw err;
      }
      if (res === null) {
        if (rest.length > 0) {
          if (await walk(pos, size, rest)) return true;
          continue;
        }
        gaps.push(pos);
        continue;
      }
      if (gaps.length > 0) {
        for (const g of gaps.splice(0))
          opts.onUnlistable?.({
            kind: opts.kind,
            id: null,
            afterId: prev?.id ?? null,
            beforeId: res.items[0]?.id ?? null,
            reason: `the item at listing position ${g} breaks the listing (HTTP 500)`,
          });
      }
      items.push(...res.items);
      if (res.items.length > 0) prev = res.items[res.items.length - 1] as ItemRecord;
      if (res.items.length < size || !res.hasNext) return true;
    }
    return false;
  };
  // Sub-pages of 10 at positions that are multiples of 10, then of 1: every size divides the page.
  // A page of one has nothing smaller: it is read once more at its own size, so it is reported.
  const sizes = NARROWING.filter((s) => s < count && count % s === 0);
  const end = await walk(start, count, sizes.length > 0 ? sizes : [count]);
  for (const g of gaps)
    opts.onUnlistable?.({
      kind: opts.kind,
      id: null,
      afterId: prev?.id ?? null,
      beforeId: null,
      reason: `the item at listing position ${g} breaks the listing (HTTP 500)`,
    });
  return { items, end };
}
