/**
 * What a revert moves back, taken from the forward run's checkpoint: every item the forward run made
 * a move for (its row records the move's id), from the storage that move put it on back to the
 * storage it came from. Which of them really are there because of the forward run, which are skipped
 * (moved again, deleted, being moved by someone else) and which are not the forward run's doing at
 * all is decided by per-item reads (./revert-judge.ts), made before anything is written; the rows
 * are then seeded into the revert's checkpoint in one transaction, so a kill leaves all or none.
 */
import type { Kind } from '../plan/types.js';
import type { ItemRow, ItemState, ItemStore } from '../store/types.js';
import type { RevertSeedStore } from '../store/views.js';

/** One item the forward run made a move for: where it is now (its `from`), where it goes back to (`to`). */
export interface RevertItem {
  kind: Kind;
  id: number;
  name: string;
  sizeBytes: number | null;
  /** The storage the forward run moved it to (the revert's source). */
  from: string;
  /** The storage it came from (the revert's pinned destination). */
  to: string;
  /** The forward run's move (the last one it made or adopted for the item). */
  forwardMoveId: number;
  /**
   * The forward row's state: `moved` (its move took it there), or `left`, `quarantined` or `pending`
   * with a move of the forward run on record (a move that failed after switching the repository to
   * the destination leaves it there all the same; a move stuck in the queue may still run).
   */
  forwardState: ItemState;
}

/** An item the revert leaves alone, and why. */
export interface SkippedItem extends RevertItem {
  /** Where it is now: another storage, or null when it was deleted (or is being moved). */
  storage: string | null;
  reason: string;
}

/** A move of the forward run that is still queued or running on the instance: it may land after the revert. */
export interface AliveMove {
  kind: Kind;
  id: number;
  name: string;
  moveId: number;
  state: string;
  source: string;
  destination: string;
}

/** The list a `revert --only` seeds from (the `revert.seeded` event's `list`). */
export interface RevertSeedList {
  file: string;
  digest: string;
  items: number;
  notMoved: number;
  outside: number;
}

/** The revert's items, split by what the per-item reads found. */
export interface RevertSet {
  /** To move back. */
  items: RevertItem[];
  /** Left alone and listed (moved again, deleted, already back, being moved by someone else). */
  skipped: SkippedItem[];
  /** Moves of the forward run still queued or running: the revert refuses while there are any. */
  alive: AliveMove[];
  /**
   * Items whose move list on this instance holds no record of the forward run's move: the instance
   * is not the one the forward run worked on (another one at the same URL, or one restored from a
   * backup). The revert refuses when there is any.
   */
  unrecorded: RevertItem[];
}

/** Kinds in the order a run drains them. */
const KIND_ORDER: readonly Kind[] = ['projects', 'snippets', 'groups'];
/** Rows read from the forward checkpoint per kind (the store reads them lowest id first). */
const ALL = Number.MAX_SAFE_INTEGER;
/**
 * Forward rows that may hold an item the forward run put somewhere. `scheduling` and `in_flight`
 * rows are refused before this is asked (their moves may still land); `moved` rows without a move id
 * were found already there, or moved by someone else, and are not the forward run's to undo.
 */
const CANDIDATE_STATES: readonly ItemState[] = ['moved', 'left', 'quarantined', 'pending'];

/**
 * The items the forward run made a move for, with the storage it was moving each to.
 * `destinationOf` gives that storage for a row (the forward run's destination).
 */
export function forwardMovedItems(
  store: Pick<ItemStore, 'itemsInState'>,
  destinationOf: (row: ItemRow) => string,
): RevertItem[] {
  const out: RevertItem[] = [];
  for (const kind of KIND_ORDER) {
    for (const state of CANDIDATE_STATES) {
      for (const row of store.itemsInState(kind, null, state, ALL)) {
        if (row.moveId === null) continue;
        out.push({
          kind,
          id: row.id,
          name: row.name,
          sizeBytes: row.sizeBytes,
          from: destinationOf(row),
          to: row.source,
          forwardMoveId: row.moveId,
          forwardState: state,
        });
      }
    }
  }
  return out.sort((a, b) => KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind) || a.id - b.id);
}

/** The (kind, source) drains of a revert: every storage the forward run moved items to, per kind. */
export function revertDrains(items: readonly RevertItem[]): { kinds: Kind[]; sources: string[] } {
  const kinds = KIND_ORDER.filter((k) => items.some((i) => i.kind === k));
  const sources = [...new Set(items.map((i) => i.from))].sort();
  return { kinds, sources };
}

/** True once the revert's checkpoint holds its items (seeding is one transaction: all or none). */
export function isSeeded(
  store: Pick<ItemStore, 'getCursor'>,
  drains: { kinds: readonly Kind[]; sources: readonly string[] },
): boolean {
  return drains.kinds.some((k) => drains.sources.some((s) => store.getCursor(k, s) !== null));
}

/**
 * Writes the revert's rows in one transaction: pending rows for the items to move back, `left`
 * rows for the skipped (each with a `revert.skipped` event), and every (kind, source) listing round
 * already done, so no drain ever lists a source. `listedAt` is when the reads were made.
 */
export function seedRevert(
  store: RevertSeedStore,
  given: Pick<RevertSet, 'items' | 'skipped'>,
  drains: { kinds: readonly Kind[]; sources: readonly string[] },
  opts: { forward: string; readAt: number; now: number; list?: RevertSeedList },
): void {
  store.batch(() => {
    // An item taken by an earlier seed (an earlier list) is never taken again: its row is its history.
    const fresh = (it: RevertItem) => store.getItem(it.kind, it.id) === null;
    const set = { items: given.items.filter(fresh), skipped: given.skipped.filter(fresh) };
    if (set.items.length + set.skipped.length === 0 && isSeeded(store, drains)) return;
    for (const kind of drains.kinds) for (const source of drains.sources) store.startRound(kind, source, 1);
    for (const it of [...set.items, ...set.skipped]) {
      store.recordPage(
        it.kind,
        it.from,
        1,
        [{ kind: it.kind, id: it.id, storage: it.from, name: it.name, sizeBytes: it.sizeBytes }],
        opts.readAt,
      );
      // Pinned before any intent: the drain posts it back where it came from, never elsewhere.
      store.pinDestination(it.kind, it.id, it.to);
    }
    for (const s of set.skipped) {
      store.markLeft(s.kind, s.id, opts.now, s.reason);
      store.appendEvent(
        'revert.skipped',
        { kind: s.kind, source: s.from, id: s.id, storage: s.storage, reason: s.reason },
        opts.now,
      );
    }
    for (const kind of drains.kinds) for (const source of drains.sources) store.finishRound(kind, source, 1);
    store.appendEvent(
      'revert.seeded',
      {
        forward: opts.forward,
        items: set.items.length,
        skipped: set.skipped.length,
        ...(opts.list ? { list: opts.list } : {}),
      },
      opts.now,
    );
  });
}
