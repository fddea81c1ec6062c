/**
 * What a revert moves back, taken from the forward run's checkpoint: every item the forward run
 * moved itself (state `moved` with a move id of ours), from the storage it put it on back to the
 * storage it came from. Items already elsewhere (moved again, deleted) are skipped and listed. The
 * per-item reads are made before anything is written; the rows are then seeded into the revert's
 * checkpoint in one transaction, so a kill leaves either all of them or none.
 */
import { locate } from '../actors/index.js';
import type { Location } from '../actors/index.js';
import type { InstanceApi } from '../api/types.js';
import type { Kind } from '../plan/types.js';
import type { ActorStore, ItemRow, ItemStore } from '../store/types.js';

/** One item the forward run moved: where it is now (its `from`), where it goes back to (`to`). */
export interface RevertItem {
  kind: Kind;
  id: number;
  name: string;
  sizeBytes: number | null;
  /** The storage the forward run moved it to (the revert's source). */
  from: string;
  /** The storage it came from (the revert's pinned destination). */
  to: string;
  /** The forward run's move. */
  forwardMoveId: number;
}

/** An item the revert leaves alone, and why. */
export interface SkippedItem extends RevertItem {
  /** Where it is now: another storage, or null when it was deleted. */
  storage: string | null;
  reason: string;
}

/** The revert's items, split by where they are now. */
export interface RevertSet {
  items: RevertItem[];
  skipped: SkippedItem[];
}

/** Kinds in the order a run drains them. */
const KIND_ORDER: readonly Kind[] = ['projects', 'snippets', 'groups'];
/** Rows read from the forward checkpoint per kind (the store reads them lowest id first). */
const ALL = Number.MAX_SAFE_INTEGER;

/**
 * The items the forward run moved itself, with the storage it put each on. `destinationOf` gives
 * that storage for a row (the forward run's destination). Items marked moved without a move of ours
 * (found already on the destination, or moved by someone else) are not the run's to undo.
 */
export function forwardMovedItems(
  store: Pick<ItemStore, 'itemsInState'>,
  destinationOf: (row: ItemRow) => string,
): RevertItem[] {
  const out: RevertItem[] = [];
  for (const kind of KIND_ORDER) {
    for (const row of store.itemsInState(kind, null, 'moved', ALL)) {
      if (row.moveId === null) continue;
      out.push({
        kind,
        id: row.id,
        name: row.name,
        sizeBytes: row.sizeBytes,
        from: destinationOf(row),
        to: row.source,
        forwardMoveId: row.moveId,
      });
    }
  }
  return out;
}

/** What a per-item read says of one item: still where the forward run put it (or unknown), or skipped. */
export function classify(item: RevertItem, where: Location): SkippedItem | null {
  if (where.at === 'source' || where.at === 'unknown') return null;
  if (where.at === 'gone') return { ...item, storage: null, reason: 'deleted since the forward run' };
  if (where.storage === item.to)
    return { ...item, storage: where.storage, reason: `already back on ${item.to} (moved by someone else)` };
  return { ...item, storage: where.storage, reason: `moved again since the forward run, now on ${where.storage}` };
}

/**
 * Reads every item on its own (at most `parallel` at once) and splits them: those still on the
 * storage the forward run put them on (or whose storage cannot be read: the drain reads it again
 * before its POST) are moved back; the rest are skipped. Reads only.
 */
export async function locateRevertItems(
  api: InstanceApi,
  items: readonly RevertItem[],
  signal: AbortSignal,
  parallel = 8,
): Promise<RevertSet> {
  const verdicts: (SkippedItem | null)[] = new Array<SkippedItem | null>(items.length).fill(null);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      const item = items[i];
      if (item === undefined) return;
      signal.throwIfAborted();
      const where = await locate({ deps: { api, signal }, kind: item.kind, source: item.from }, item.id);
      verdicts[i] = classify(item, where);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(parallel, items.length)) }, worker));
  const set: RevertSet = { items: [], skipped: [] };
  items.forEach((item, i) => {
    const v = verdicts[i];
    if (v) set.skipped.push(v);
    else set.items.push(item);
  });
  return set;
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
  store: ActorStore,
  set: RevertSet,
  drains: { kinds: readonly Kind[]; sources: readonly string[] },
  opts: { forward: string; readAt: number; now: number },
): void {
  store.batch(() => {
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
      { forward: opts.forward, items: set.items.length, skipped: set.skipped.length },
      opts.now,
    );
  });
}
