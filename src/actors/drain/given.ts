/**
 * The drain of given items (`shardmove revert`): the checkpoint already holds every row to move,
 * so nothing is listed and nothing else on the source is touched. Each pending row is moved as in
 * a throttled drain (a stale row is read before its POST: one that left the source is not moved);
 * instead of listing the source again, each moved row is read on its own, and one still on the
 * source goes back to pending (GitLab 345591), within the same bound of extra rounds.
 */
import type { DrainOutput } from '../../machine/types.js';
import type { ItemRow } from '../../store/types.js';
import { event, throwIfAborted } from './context.js';
import type { DrainCtx } from './context.js';
import { locate } from './locate.js';
import { moveItems } from './loop.js';
import { MAX_EXTRA_ROUNDS, drainResult } from './result.js';

/** Moves the given rows, rechecking the moved ones until none is still on the source; returns the counts. */
export async function drainGiven(ctx: DrainCtx): Promise<DrainOutput> {
  const { deps, kind, source } = ctx;
  for (let extra = 0; ; extra++) {
    await moveItems(ctx, { mode: 'moving' });
    if (extra >= MAX_EXTRA_ROUNDS) break;
    if ((await recheckGiven(ctx)) === 0) break;
  }
  const res = drainResult(ctx);
  event(ctx, 'drain.finished', { ...res });
  deps.log.info({ kind, source, ...res, given: true }, 'drain of given items finished');
  return res;
}

/** Rows read at once (every moved row of the drain is read in each recheck round). */
const RECHECK_PARALLEL = 8;

/** Reads every moved row of this drain; those still on the source go back to pending. Returns how many. */
async function recheckGiven(ctx: DrainCtx): Promise<number> {
  const { store, kind, source, deps } = ctx;
  const round = (store.getCursor(kind, source)?.round ?? 1) + 1;
  const moved = store.itemsInState(kind, source, 'moved', Number.MAX_SAFE_INTEGER).filter((r) => r.moveId !== null);
  const still: ItemRow[] = [];
  for (let i = 0; i < moved.length; i += RECHECK_PARALLEL) {
    throwIfAborted(ctx);
    const rows = moved.slice(i, i + RECHECK_PARALLEL);
    const seen = await Promise.all(rows.map((r) => locate(ctx, r.id)));
    rows.forEach((r, j) => (seen[j]?.at === 'source' || seen[j]?.at === 'unreachable') && still.push(r));
  }
  store.batch(() => {
    store.startRound(kind, source, round);
    if (still.length > 0) {
      const res = store.recordPage(
        kind,
        source,
        round,
        still.map((r) => ({ kind, id: r.id, storage: source, name: r.name, sizeBytes: r.sizeBytes })),
        deps.clock.now(),
      );
      for (const b of res.back) event(ctx, 'item.still_on_source', { id: b.id, moveId: b.moveId, reason: b.lastError });
    }
    store.finishRound(kind, source, round);
  });
  return still.length;
}
