/**
 * A partial drain (`move.until`) seen from the drain loop: which pending items are due,
 * and when the next one is. Without a bound they are the checkpoint's own answers. With one, new
 * items are taken largest first while the source's budget lasts (the item that crosses the bound is
 * the last); once the budget is spent the bound is recorded as reached, and from then on only
 * retries of items already placed are due: what was scheduled still moves, the rest stays.
 */
import type { ItemRow } from '../../store/types.js';
import { event } from './context.js';
import type { DrainCtx } from './context.js';
import { compareKeys, mergeOrdered, orderKey, rankClass } from './order.js';
import type { OrderKey } from './order.js';
import { bytesOf, placementOf } from './placement.js';

/** Whether the source's bound is reached (recorded in the checkpoint, so it holds across resumes). */
export function boundReached(ctx: DrainCtx): boolean {
  return ctx.deps.plan.move.until !== undefined && ctx.store.getBound(ctx.source) !== null;
}

/** Records the bound as reached, once. */
function reach(ctx: DrainCtx): void {
  const until = ctx.deps.plan.move.until!;
  const placed = placementOf(ctx.deps);
  const limitBytes = 'movedBytes' in until ? until.movedBytes : until.freeBytes;
  const bound = 'movedBytes' in until ? ('moved' as const) : ('free' as const);
  const placedBytes = placed.placedFrom(ctx.source);
  ctx.store.batch(() => {
    ctx.store.setBound(ctx.source, ctx.deps.clock.now(), `move.until ${bound}: ${limitBytes} bytes`);
    event(ctx, 'drain.until_reached', { bound, limitBytes, placedBytes });
  });
  ctx.deps.log.info(
    { source: ctx.source, bound, limitBytes, placedBytes },
    'move.until reached: nothing more is scheduled from this source',
  );
}

/**
 * Up to `limit` pending items due by `now`, within the source's budget: retries of placed items
 * always, new ones largest first while the budget lasts. The bound is recorded as reached only when
 * a call finds the budget already spent (by intents committed before it) with unplaced items still
 * pending, so a kill can never leave the bound recorded ahead of the intents that spent it. An
 * unknown budget (a `free` bound whose free space could not be read) schedules nothing new and
 * records nothing: the drain then ends with those items unplaced, and verification says so.
 */
export function dueItems(ctx: DrainCtx, now: number, limit: number): ItemRow[] {
  const { store, kind, source } = ctx;
  if (!ctx.deps.plan.move.until) return store.dueItems(kind, source, now, limit);
  if (boundReached(ctx)) return store.duePlacedItems(kind, source, now, limit);
  let budget = placementOf(ctx.deps).budget(source);
  if (budget === null) return store.duePlacedItems(kind, source, now, limit);
  if (budget <= 0) {
    if (store.countUnplaced(kind, source) > 0) reach(ctx);
    return store.duePlacedItems(kind, source, now, limit);
  }
  const rows = store.dueItems(kind, source, now, limit);
  const out: ItemRow[] = [];
  for (const row of rows) {
    if (row.destination) {
      out.push(row);
      continue;
    }
    if (budget <= 0) continue;
    out.push(row);
    budget -= bytesOf(kind, row.sizeBytes);
  }
  return out;
}

/** A due row of the one schedule, with the index of its pair. */
export interface DueRow {
  pair: number;
  row: ItemRow;
}

/**
 * The one schedule's `dueItems` (`move.order: together`): up to `limit` due items of `pairs` (each
 * with its index in the run's order), merged into one largest-first order (./order.ts). A partial
 * drain's budget is the source's, shared by its kinds and spent in that order: retries of placed
 * items always, new ones while their source's budget lasts. As for one pair, a bound is recorded as
 * reached only when a call finds its source's budget already spent with unplaced items pending.
 */
export function dueTogether(
  pairs: readonly { ctx: DrainCtx; pair: number }[],
  now: number,
  limit: number,
  /** Gets the pairs that have nothing more due now (their own query came up short). */
  short?: Set<number>,
): DueRow[] {
  const lists: DueRow[][] = [];
  const budgets = new Map<string, number | null>();
  for (const { ctx, pair } of pairs) {
    const { store, kind, source } = ctx;
    let rows: ItemRow[];
    if (!ctx.deps.plan.move.until) rows = store.dueItems(kind, source, now, limit);
    else {
      if (!budgets.has(source)) budgets.set(source, boundReached(ctx) ? 0 : placementOf(ctx.deps).budget(source));
      const budget = budgets.get(source) ?? null;
      if (budget !== null && budget <= 0 && !boundReached(ctx) && store.countUnplaced(kind, source) > 0) reach(ctx);
      rows =
        budget === null || boundReached(ctx)
          ? store.duePlacedItems(kind, source, now, limit)
          : store.dueItems(kind, source, now, limit);
    }
    if (rows.length < limit) short?.add(pair);
    const list = rows.map((row) => ({ pair, row }));
    // Placed retries come in the order their backoffs end: the merge wants each list in its own order.
    if (ctx.deps.plan.move.until) list.sort((a, b) => compareKeys(keyOf(pairs, a), keyOf(pairs, b)));
    lists.push(list);
  }
  const merged = mergeOrdered(lists, (d) => keyOf(pairs, d), ctxLimit(pairs, limit));
  if (!pairs[0]?.ctx.deps.plan.move.until) return merged.slice(0, limit);
  const out: DueRow[] = [];
  for (const d of merged) {
    if (out.length >= limit) break;
    if (d.row.destination) {
      out.push(d);
      continue;
    }
    const ctx = ctxOf(pairs, d.pair);
    const budget = budgets.get(ctx.source) ?? null;
    if (budget === null || budget <= 0) continue;
    out.push(d);
    budgets.set(ctx.source, budget - bytesOf(ctx.kind, d.row.sizeBytes));
  }
  return out;
}

/** A partial drain reads every candidate (some are skipped for their source's budget); otherwise `limit` is all. */
function ctxLimit(pairs: readonly { ctx: DrainCtx }[], limit: number): number {
  return pairs[0]?.ctx.deps.plan.move.until ? Infinity : limit;
}

function ctxOf(pairs: readonly { ctx: DrainCtx; pair: number }[], pair: number): DrainCtx {
  const p = pairs.find((x) => x.pair === pair);
  if (!p) throw new Error(`no pair ${pair} in the schedule`);
  return p.ctx;
}

function keyOf(pairs: readonly { ctx: DrainCtx; pair: number }[], d: DueRow): OrderKey {
  return orderKey(ctxOf(pairs, d.pair).kind, d.row, d.pair);
}

/** When the next pending item is due (absolute ms), or null when none will be. */
export function nextDueAt(ctx: DrainCtx): number | null {
  if (!ctx.deps.plan.move.until) return ctx.store.nextDueAt(ctx.kind, ctx.source);
  if (boundReached(ctx)) return ctx.store.nextPlacedDueAt(ctx.kind, ctx.source);
  // Unknown budget: only placed items are to come. A spent one still counts the unplaced items as
  // due, so that the next dueItems call records the bound.
  if (placementOf(ctx.deps).budget(ctx.source) === null) return ctx.store.nextPlacedDueAt(ctx.kind, ctx.source);
  return ctx.store.nextDueAt(ctx.kind, ctx.source);
}

/** Rows placed per transaction by a dry run's placement. */
const PLAN_CHUNK = 5_000;

/**
 * A dry run's placement: every pending item not placed yet gets the destination the run would give
 * it, largest first, until the source's `move.until` budget is spent (then the bound is recorded as
 * reached). With one destination and no bound there is nothing to decide, and nothing is written.
 * The order is read once (ids only), then placed a chunk per transaction.
 */
export function planPlacement(ctx: DrainCtx): void {
  const { deps, store, kind, source } = ctx;
  if (deps.plan.move.to.length === 1 && !deps.plan.move.until) return;
  if (boundReached(ctx)) return;
  const placement = placementOf(deps);
  const order = store.unplacedPendingIds(kind, source);
  for (let i = 0; i < order.length; i += PLAN_CHUNK) {
    const rows = store.itemsByIds(kind, order.slice(i, i + PLAN_CHUNK));
    let stop = false;
    store.batch(() => {
      for (const row of rows) {
        const budget = placement.budget(source);
        if (budget === null) {
          stop = true;
          break;
        }
        if (budget <= 0) {
          reach(ctx);
          stop = true;
          break;
        }
        const d = placement.choose(kind, row);
        store.pinDestination(kind, row.id, d);
        placement.note(kind, row, d);
      }
    });
    if (stop) return;
  }
}

/**
 * The one schedule's dry-run placement (`move.order: together`): as `planPlacement`, over every pair
 * at once in the one order (./order.ts), each source's budget spent by its own items as they come.
 * The order is read once per pair (ids and keys only), then placed a chunk per transaction.
 */
export function planPlacementTogether(ctxs: readonly DrainCtx[]): void {
  const deps = ctxs[0]?.deps;
  if (!deps || (deps.plan.move.to.length === 1 && !deps.plan.move.until)) return;
  const placement = placementOf(deps);
  const lists = ctxs.map((ctx, pair) => {
    if (boundReached(ctx)) return [];
    const k = ctx.store.unplacedPendingKeys(ctx.kind, ctx.source);
    // The index ranks unsized kinds last; the one order ranks them by their allowance.
    const own = ctx.kind === 'projects' ? null : rankClass(ctx.kind, null);
    return k.ids.map((id, i): OrderKey => ({
      cls: own ?? (k.classes[i] as number),
      group: k.groups[i] as number,
      id,
      pair,
    }));
  });
  const order = mergeOrdered(lists, (k) => k, Infinity);
  const stopped = new Set<string>();
  for (let i = 0; i < order.length; i += PLAN_CHUNK) {
    const chunk = order.slice(i, i + PLAN_CHUNK);
    const rows = new Map<string, ItemRow>();
    ctxs.forEach((ctx, pair) => {
      const ids = chunk.filter((k) => k.pair === pair).map((k) => k.id);
      if (ids.length > 0) for (const row of ctx.store.itemsByIds(ctx.kind, ids)) rows.set(`${pair}:${row.id}`, row);
    });
    deps.store.batch(() => {
      for (const k of chunk) {
        const ctx = ctxs[k.pair] as DrainCtx;
        const row = rows.get(`${k.pair}:${k.id}`);
        if (!row || stopped.has(ctx.source)) continue;
        const budget = placement.budget(ctx.source);
        if (budget === null || budget <= 0) {
          if (budget !== null) reach(ctx);
          stopped.add(ctx.source);
          continue;
        }
        const d = placement.choose(ctx.kind, row);
        ctx.store.pinDestination(ctx.kind, row.id, d);
        placement.note(ctx.kind, row, d);
      }
    });
    if (ctxs.every((ctx) => stopped.has(ctx.source))) return;
  }
}
