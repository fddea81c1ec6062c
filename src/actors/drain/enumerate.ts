/**
 * Enumeration of the items on a source storage into the checkpoint, page by page: each page and the
 * cursor are one transaction, so a kill resumes after the last committed page, and memory holds one
 * page at a time however large the storage.
 */
import type { ItemRecord, UnlistableGap } from '../../api/types.js';
import { event, throwIfAborted } from './context.js';
import { DrainError, STORAGE_NOT_EXPOSED, VERIFY_FILTER_IGNORED } from '../errors.js';
import { noteNetworks } from './networks.js';
import type { DrainCtx } from './context.js';
import { locate } from './locate.js';
import { chooseItems, selectionOf, unlistableChosen } from '../select.js';

export interface RoundResult {
  round: number;
  /** Items listed for the first time. */
  added: number;
  /** Items listed again although they had moved or left (sent back to pending). */
  back: number;
  /** Pending items this round did not list and a per-item read showed elsewhere or deleted (now `left`). */
  left: number;
}

export interface EnumerateHooks {
  /** Called after each committed page (the drain schedules while the listing goes on). */
  onPage?: () => void;
  /** Checked between pages: true stops the listing early (the cursor keeps its place). */
  stop?: () => boolean;
}

/** Absent items confirmed one by one per round; the rest stay pending and are looked at next round. */
const MAX_CONFIRM_PER_ROUND = 1000;

/**
 * Finishes the current enumeration round if it is open (resuming from its cursor), or starts and
 * runs round `next` when `next` is given. Returns null when there was nothing to do, or when
 * `hooks.stop` ended it early.
 *
 * Projects are listed by keyset on id, which is stable while items move off the storage, so a
 * resumed round goes on after the cursor's id. Snippets and groups have only offset pages (snippets
 * newest first, whatever order is asked): a page number means nothing once the set has changed, so a
 * resumed round lists again from page 1 (recording a page is idempotent). Offset pages over a set
 * that shrinks skip items, so an item a round did not list is never taken as gone on that alone:
 * `confirmAbsent` asks the instance about it.
 */
export async function enumerateRound(
  ctx: DrainCtx,
  next?: number,
  hooks: EnumerateHooks = {},
): Promise<RoundResult | null> {
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
  const afterId = kind === 'projects' ? cursor.afterId : 0;
  event(ctx, 'enumerate.started', { round, afterId });
  const selection = selectionOf(deps.plan);
  const gaps: UnlistableGap[] = [];
  const known = new Set(store.unlistable(kind, source, round).map(gapKey));
  const flushGaps = () => {
    for (const gap of gaps.splice(0)) {
      if (known.has(gapKey(gap))) continue;
      known.add(gapKey(gap));
      const now = deps.clock.now();
      store.batch(() => {
        store.recordUnlistable(kind, source, round, gap, now);
        // A keyset listing filtered on the source named the item: it is on the source, and a POST
        // by id can move it although no listing shows it.
        if (gap.id !== null) {
          store.recordPage(
            kind,
            source,
            round,
            [{ kind, id: gap.id, storage: source, name: `(unlistable ${kind} ${gap.id})`, sizeBytes: null }],
            now,
          );
          // Its path cannot be read: a selection takes it only by its id.
          if (selection) store.setSelected(kind, gap.id, unlistableChosen(selection, kind, gap.id));
        }
      });
      const { kind: _k, ...where } = gap;
      event(ctx, 'enumerate.unlistable', { round, ...where });
      deps.log.warn({ kind, source, ...where }, 'part of the listing cannot be read (HTTP 500): skipped');
    }
  };
  const pages = deps.api.listItemsOnStorage(kind, source, {
    ...(afterId > 0 ? { afterId } : {}),
    onUnlistable: (g) => gaps.push(g),
  });
  for await (const page of pages) {
    checkStorageField(ctx, page);
    // move.select: every listed item gets a row, those not chosen as `unselected` (they stay, as planned).
    const chosen = selection ? await chooseItems(deps, selection, kind, page) : null;
    const res = store.batch(() => {
      const recorded = store.recordPage(kind, source, round, page, deps.clock.now());
      if (chosen) for (const [id, yes] of chosen) store.setSelected(kind, id, yes);
      return recorded;
    });
    await noteNetworks(ctx, page);
    added += res.added;
    back += res.back.length;
    for (const b of res.back) {
      event(ctx, 'item.still_on_source', { id: b.id, moveId: b.moveId, reason: b.lastError });
      deps.log.warn({ kind, id: b.id, source, moveId: b.moveId }, 'item still on the source after its move');
    }
    flushGaps();
    deps.onProgress?.();
    hooks.onPage?.();
    throwIfAborted(ctx);
    if (hooks.stop?.()) return null;
  }
  flushGaps();
  const left = await confirmAbsent(ctx, round);
  store.finishRound(kind, source, round);
  event(ctx, 'enumerate.finished', { round, added, back, left });
  return { round, added, back, left };
}

const gapKey = (g: UnlistableGap) => `${g.id}:${g.afterId}:${g.beforeId}`;

/**
 * Every listed item must carry the filtered storage. One on another storage means the filter was
 * ignored (non-admin token); one without the field proves nothing either (CE, or a version without
 * the filter, where the listing is every item of the instance). Scheduling from such a listing would
 * move items that are not on the source.
 */
function checkStorageField(ctx: DrainCtx, page: readonly ItemRecord[]): void {
  const { kind, source } = ctx;
  const bad = page.find((it) => it.storage !== source);
  if (!bad) return;
  event(ctx, 'enumerate.filter_ignored', { id: bad.id, storage: bad.storage });
  if (bad.storage === null) {
    throw new DrainError(
      STORAGE_NOT_EXPOSED,
      `listing ${kind} on ${source} returned ${kind} ${bad.id} without a repository_storage field: the instance does not expose ` +
        `the storage of ${kind}, so the listing cannot tell what is on ${source} (pre-flight routes such a kind to the bulk move and its move records)`,
    );
  }
  throw new DrainError(
    VERIFY_FILTER_IGNORED,
    `listing ${kind} on ${source} returned ${kind} ${bad.id} on ${bad.storage}: the instance ignored the repository_storage filter`,
  );
}

/**
 * Pending items round `round` did not list, each confirmed with a per-item read: still on the
 * source -> stays pending (counted as seen); on another storage -> left; deleted -> left; unknown
 * -> stays pending, and the POST decides. Bounded per round. Returns how many left.
 */
async function confirmAbsent(ctx: DrainCtx, round: number): Promise<number> {
  const { store, kind, source, deps } = ctx;
  let left = 0;
  for (const row of store.absentItems(kind, source, round, MAX_CONFIRM_PER_ROUND)) {
    throwIfAborted(ctx);
    const where = await locate(ctx, row.id);
    const now = deps.clock.now();
    if (where.at === 'source' || where.at === 'unreachable') {
      // Unreachable: a project the listing (with its flags) still counts on the source.
      store.markSeen(kind, row.id, round, now);
      event(ctx, 'item.absent_but_on_source', { id: row.id, round });
    } else if (where.at === 'elsewhere') {
      store.markLeft(kind, row.id, now, `now on ${where.storage}`);
      event(ctx, 'item.elsewhere', { id: row.id, storage: where.storage, cause: 'absent' });
      left++;
    } else if (where.at === 'gone') {
      store.markLeft(kind, row.id, now, 'deleted from the instance');
      event(ctx, 'item.gone', { id: row.id, cause: 'absent' });
      left++;
    } else {
      event(ctx, 'item.absent_unknown', { id: row.id, round, why: where.why });
      deps.log.warn(
        { kind, id: row.id, source, why: where.why },
        'item not listed and its storage cannot be read: kept pending',
      );
    }
  }
  return left;
}
