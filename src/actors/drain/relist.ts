/**
 * The freshness re-list of a kind listed by offset pages (snippets, group wikis): before a POST,
 * an item must have been seen on its source recently (./schedule-batch.ts). Reading each stale
 * item on its own costs a request per item; listing the source again costs a request per hundred
 * and makes every pending item it shows fresh. So when more of the pair's pending items are stale
 * than the listing has pages, the source is listed again, once for every batch that asks while it
 * runs.
 */
import type { DrainCtx } from './context.js';
import type { DrainStore } from '../../store/views.js';

/** Items per listing page. */
const PAGE = 100;

const RUNNING = new WeakMap<DrainStore, Map<string, Promise<Set<number>>>>();

/**
 * The ids a fresh listing of (kind, source) showed, recorded as listed now; an empty set when
 * listing would cost more than reading the stale items one by one (items listed since `staleBefore`
 * are fresh). Never throws for a listing it could not finish: what it did not show is read on its
 * own by the caller.
 */
export function relistIfStale(ctx: DrainCtx, staleBefore: number): Promise<Set<number>> {
  const { store, kind, source } = ctx;
  let running = RUNNING.get(store);
  if (!running) RUNNING.set(store, (running = new Map()));
  const key = `${kind}:${source}`;
  const already = running.get(key);
  if (already) return already;
  const c = store.countStates(kind, source);
  const pages = Math.ceil((c.pending + c.scheduling + c.in_flight) / PAGE) + 1;
  if (store.countStaleListed(kind, source, staleBefore) <= pages) return Promise.resolve(new Set());
  const work = relist(ctx).finally(() => running.delete(key));
  running.set(key, work);
  return work;
}

async function relist(ctx: DrainCtx): Promise<Set<number>> {
  const { store, kind, source, deps } = ctx;
  const seen = new Set<number>();
  try {
    for await (const page of deps.api.listItemsOnStorage(kind, source)) {
      const ids = page.filter((it) => it.storage === source).map((it) => it.id);
      store.touchListed(kind, source, ids, deps.clock.now());
      for (const id of ids) seen.add(id);
    }
  } catch (err) {
    if (deps.signal.aborted) throw err;
    deps.log.warn(
      { kind, source, err: (err as Error).message },
      'the freshness re-list failed: stale items are read one by one',
    );
  }
  return seen;
}
