/**
 * A dry run's census of the projects on a source (for `shardmove twin`): which of them GitLab hides from its
 * default listing, and why. The enumeration lists with `include_hidden` and `include_pending_delete`
 * and so sees every project, but no field of GitLab's project entity says hidden or pending
 * deletion, and `GET /projects/:id` answers 404 for both. So the source is listed once more without
 * each flag: the projects the checkpoint knows on the source that such a listing leaves out carry
 * that flag. The two listings are keyset pages by id without statistics, compared page by page
 * with the checkpoint's ids, so memory holds one page however large the source.
 *
 * The cost is one more listing per flag (a tenth of a request per project each); on the Community
 * Edition, which has no hidden projects, only the pending-delete one. Read-only, repeatable: a
 * census cut short (abort, a part of the listing that answers 500) is not marked done, and `twin`
 * then says the flags of that source are unknown rather than guessing.
 */
import type { ItemFlag } from '../../store/types.js';
import type { DrainCtx } from './context.js';
import { throwIfAborted } from './context.js';

/** Checkpoint ids read per query while comparing. */
const IDS_PER_READ = 1000;

/** Runs the census of the drain's source for a finished enumeration round (projects only; others return at once). */
export async function runCensus(ctx: DrainCtx): Promise<void> {
  const { store, kind, source, deps } = ctx;
  if (kind !== 'projects') return;
  const cursor = store.getCursor(kind, source);
  if (!cursor?.done) return;
  let enterprise: boolean | null | undefined;
  for (const flag of ['hidden', 'pending_delete'] as const) {
    const known = store.shape.censusOf(kind, source, flag);
    if (known?.round === cursor.round && known.doneAt !== null) continue;
    store.shape.startCensus(kind, source, flag, cursor.round);
    if (flag === 'hidden') {
      enterprise ??= (await deps.api.version()).enterprise;
      // Only EE filters on `hidden` (docs/gitlab-behaviour.md §1.3): a CE listing hides none.
      if (enterprise === false) {
        store.shape.finishCensus(kind, source, flag, cursor.round, 0, deps.clock.now());
        continue;
      }
    }
    const flagged = await listWithout(ctx, flag);
    if (flagged === null) continue;
    store.shape.finishCensus(kind, source, flag, cursor.round, flagged, deps.clock.now());
    deps.log.info({ kind, source, flag, flagged }, 'dry run: projects left out of a listing without the flag');
  }
}

/** Lists the source without `flag` and flags the known ids it skips; null when part of it could not be read. */
async function listWithout(ctx: DrainCtx, flag: ItemFlag): Promise<number | null> {
  const { store, kind, source, deps } = ctx;
  let gaps = 0;
  let after = 0;
  let flagged = 0;
  const flagAbsent = (upto: number | null, listed: ReadonlySet<number>) => {
    for (let from = after; ;) {
      const ids = store.shape.knownIds(kind, source, from, upto, IDS_PER_READ);
      const absent = ids.filter((id) => !listed.has(id));
      store.shape.flagItems(kind, absent, flag);
      flagged += absent.length;
      if (ids.length < IDS_PER_READ) return;
      from = ids[ids.length - 1] as number;
    }
  };
  for await (const page of deps.api.listItemsOnStorage(kind, source, { leaveOut: flag, onUnlistable: () => gaps++ })) {
    if (page.length === 0) continue;
    const listed = new Set(page.map((it) => it.id));
    const upto = Math.max(...listed);
    flagAbsent(upto, listed);
    after = upto;
    throwIfAborted(ctx);
  }
  if (gaps > 0) {
    // Items in the unread part were taken as left out: forget them; the census stays unfinished.
    store.shape.startCensus(kind, source, flag, store.getCursor(kind, source)?.round ?? 0);
    deps.log.warn(
      { kind, source, flag, gaps },
      'dry run: part of the listing without the flag cannot be read; the flag stays unknown for this source',
    );
    return null;
  }
  flagAbsent(null, new Set());
  return flagged;
}
