/**
 * Enumeration of the items on a source storage into the checkpoint, page by page: each page and the
 * cursor are one transaction, so a kill resumes after the last committed page, and memory holds one
 * page at a time however large the storage.
 */
import { event, throwIfAborted } from './drain-context.js';
import { DrainError, VERIFY_FILTER_IGNORED } from './errors.js';
import type { DrainCtx } from './drain-context.js';

export interface RoundResult {
  round: number;
  /** Items listed for the first time. */
  added: number;
  /** Items listed again although they had moved or left (sent back to pending). */
  back: number;
  /** Pending items this round no longer listed (now `left`). */
  left: number;
}

export interface EnumerateHooks {
  /** Called after each committed page (the drain schedules while the listing goes on). */
  onPage?: () => void;
  /** Checked between pages: true stops the listing early (the cursor keeps its place). */
  stop?: () => boolean;
}

/**
 * Finishes the current enumeration round if it is open (resuming from its cursor), or starts and
 * runs round `next` when `next` is given. Returns null when there was nothing to do, or when
 * `hooks.stop` ended it early.
 */
export async function enumerateRound(ctx: DrainCtx, next?: number, hooks: EnumerateHooks = {}): Promise<RoundResult | null> {
  const { store, kind, source, deps } = ctx;
  let cursor = store.getCursor(kind, source);
  if (!cursor || (cursor.done && next !== undefined && next > cursor.round)) {
    const round = next ?? 1;
    store.startRound(kind, source, round);
    cursor = { round, afterId: 0, done: false };
  }
  if (cursor.done) return null;
  const round = cursor.round;
  let added = 0;
  let back = 0;
  event(ctx, 'enumerate.started', { round, afterId: cursor.afterId });
  const pages = deps.api.listItemsOnStorage(kind, source, cursor.afterId > 0 ? { afterId: cursor.afterId } : {});
  for await (const page of pages) {
    // An item on another storage means the filter was ignored (non-admin token): scheduling from
    // such a listing would move items that are not on the source, some already on the destination.
    const foreign = page.find((it) => it.storage !== null && it.storage !== source);
    if (foreign) {
      event(ctx, 'enumerate.filter_ignored', { id: foreign.id, storage: foreign.storage });
      throw new DrainError(
        VERIFY_FILTER_IGNORED,
        `listing ${kind} on ${source} returned ${kind} ${foreign.id} on ${foreign.storage}: the instance ignored the repository_storage filter`,
      );
    }
    const res = store.recordPage(kind, source, round, page, deps.clock.now());
    added += res.added;
    back += res.back.length;
    for (const b of res.back) {
      event(ctx, 'item.still_on_source', { id: b.id, moveId: b.moveId, reason: b.lastError });
      deps.log.warn({ kind, id: b.id, source, moveId: b.moveId }, 'item still on the source after its move');
    }
    deps.onProgress?.();
    hooks.onPage?.();
    throwIfAborted(ctx);
    if (hooks.stop?.()) return null;
  }
  const { left } = store.finishRound(kind, source, round, deps.clock.now());
  event(ctx, 'enumerate.finished', { round, added, back, left });
  return { round, added, back, left };
}
