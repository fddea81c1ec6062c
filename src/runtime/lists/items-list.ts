/**
 * Items out of a checkpoint: the list a finished dry run would move (`run --dry-run --items FILE`),
 * and every item with its state for `status --json --items` and `report --json --items`.
 */
import type { RunContext } from '../../machine/types.js';
import type { Kind } from '../../plan/types.js';
import { KINDS } from '../../plan/values.js';
import { ITEM_STATES } from '../../store/types.js';
import { writeFileAtomic } from '../../files/atomic.js';
import type { ItemsFormat, ListedItem } from './items-format.js';
import { renderItems } from './items-format.js';
import { openExistingCheckpoint } from '../status.js';
import type { ListStore } from '../../store/views.js';

const ALL = Number.MAX_SAFE_INTEGER;

/** What writing a dry run's list did. */
export interface ListWritten {
  items: number;
  /** Drains whose items cannot be listed (moved by one bulk move per storage): not in the list. */
  unlisted: { kind: Kind; source: string }[];
}

/**
 * The items a dry run would move, from its checkpoint: the pending rows of every drain it listed
 * (on a source whose `move.until` bound is reached, only those placed), with the destination each
 * would go to. Ordered by kind as the run drains them, then source, then id.
 */
export function wouldMove(store: ListStore, c: RunContext): ListWritten & { list: ListedItem[] } {
  const list: ListedItem[] = [];
  const unlisted: ListWritten['unlisted'] = [];
  for (const kind of c.kinds) {
    for (const source of c.sources) {
      const drain = c.drains[`${source}/${kind}`];
      if (drain?.byRecords) {
        unlisted.push({ kind, source });
        continue;
      }
      const bounded = store.getBound(source) !== null;
      for (const row of store.itemsInState(kind, source, 'pending', ALL)) {
        if (bounded && !row.destination) continue;
        list.push({
          kind,
          id: row.id,
          path: row.name,
          sizeBytes: row.sizeBytes,
          source,
          destination: row.destination ?? c.destination,
          line: 0,
        });
      }
    }
  }
  return { list, items: list.length, unlisted };
}

/**
 * Writes the list of the dry run in `checkpointFile` to `out` (atomically: a reader never sees half
 * a list). Throws when the checkpoint holds no finished dry run, and OUTPUT_EXISTS when a file is at
 * `out` and `replace` is not set (one may have appeared while the dry run ran: it stays).
 */
export function writeDryRunItems(
  checkpointFile: string,
  out: string,
  format: ItemsFormat,
  now: number,
  opts: { replace?: boolean } = {},
): ListWritten {
  const store = openExistingCheckpoint(checkpointFile, { readOnly: true });
  try {
    const saved = store.loadRun();
    const c = (saved?.snapshot as { context?: RunContext } | null)?.context;
    if (!saved || !c) throw new Error(`${checkpointFile} holds no dry run`);
    const found = wouldMove(store, c);
    writeFileAtomic(
      out,
      renderItems(
        format,
        { planName: saved.planName, planHash: saved.planHash, createdAt: new Date(now).toISOString() },
        found.list,
      ),
      { mode: 0o644, replace: opts.replace ?? false },
    );
    return { items: found.items, unlisted: found.unlisted };
  } finally {
    store.close();
  }
}

/** One item as `status --json --items` and `report --json --items` show it. */
export interface ItemView {
  kind: Kind;
  id: number;
  path: string;
  sizeBytes: number | null;
  source: string;
  destination: string | null;
  state: string;
  attempts: number;
  moveId: number | null;
  moveState: string | null;
  lastError: string | null;
}

/** Every item of a checkpoint, by kind, state and id. */
export function itemViews(store: ListStore): ItemView[] {
  const out: ItemView[] = [];
  for (const kind of KINDS)
    for (const state of ITEM_STATES)
      for (const r of store.itemsInState(kind, null, state, ALL))
        out.push({
          kind,
          id: r.id,
          path: r.name,
          sizeBytes: r.sizeBytes,
          source: r.source,
          destination: r.destination ?? null,
          state: r.state,
          attempts: r.attempts,
          moveId: r.moveId,
          moveState: r.moveState,
          lastError: r.lastError,
        });
  return out;
}

/** Every item of the checkpoint in `file` (read-only), for `--json --items`. */
export function readItems(file: string): ItemView[] {
  const store = openExistingCheckpoint(file, { readOnly: true });
  try {
    return itemViews(store);
  } finally {
    store.close();
  }
}
