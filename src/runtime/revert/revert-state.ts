/**
 * The revert's own checkpoint as a new process finds it, before it writes anything: whether its items
 * are seeded, whether it finished, what is left to move, what it skipped, and the plan it ran under.
 */
import { existsSync } from 'node:fs';
import type { Kind } from '../../plan/types.js';
import type { ItemState, SavedRun } from '../../store/types.js';
import { ITEM_STATES } from '../../store/types.js';
import { modeRefusal } from '../mode.js';
import type { RevertItem, SkippedItem } from '../../actors/index.js';
import type { RuntimeServices } from '../types.js';
import type { ForwardCheckpoint } from '../../store/views.js';

/** Items to move back, per kind and pair of storages. */
export interface RevertGroup {
  kind: string;
  from: string;
  to: string;
  n: number;
}

/** The revert's checkpoint as it stands before this process: items seeded, run finished. */
export interface RevertState {
  seeded: boolean;
  finished: boolean;
  remaining: RevertGroup[];
  skipped: SkippedItem[];
  /** The revert's saved run (its plan hash and the plan's fields), null before its first snapshot. */
  saved: SavedRun | null;
  /** Every item the revert took so far (`kind:id`): never read or taken again. */
  known: Set<string>;
  /** Its rows still to move back, or quarantined: what a run (or `--retry-quarantined`) may move. */
  open: { kind: Kind; id: number; state: ItemState }[];
  /** The list (`revert --only`) that took items last, null when none did or a plain revert did. */
  lastList: string | null;
}

const ALL = Number.MAX_SAFE_INTEGER;
const OPEN_STATES: readonly ItemState[] = ['pending', 'scheduling', 'in_flight'];

export function readRevertState(
  file: string,
  services: Pick<RuntimeServices, 'openCheckpoint' | 'clock'>,
): RevertState {
  const none: RevertState = {
    seeded: false,
    finished: false,
    remaining: [],
    skipped: [],
    saved: null,
    known: new Set(),
    open: [],
    lastList: null,
  };
  if (!existsSync(file)) return none;
  const store = services.openCheckpoint(file, { readOnly: true });
  try {
    const held = store.mode();
    if (held !== null && held !== 'revert') throw modeRefusal(file, held, 'revert');
    const saved = store.loadRun();
    const counts = store.summary(services.clock.now()).counts;
    if (counts.length === 0) return { ...none, saved };
    const rows = rowsOf(store);
    const snap = saved?.snapshot as { status?: string; value?: unknown } | null | undefined;
    const remaining = counts
      .filter((c) => OPEN_STATES.includes(c.state as ItemState) && c.n > 0)
      .map((c) => ({ kind: c.kind, from: c.source, to: '', n: c.n }));
    return {
      seeded: true,
      finished: snap?.status === 'done' && snap.value === 'done',
      remaining,
      skipped: skippedIn(store),
      saved,
      known: new Set(rows.map((r) => `${r.kind}:${r.id}`)),
      open: rows.filter((r) => r.state !== 'moved' && r.state !== 'left' && r.state !== 'unselected'),
      lastList: store.lastEventOf(['revert.seeded'], ALL)?.data.list?.file ?? null,
    };
  } finally {
    store.close();
  }
}

/** Every row of the revert's checkpoint: kind, id and state. */
function rowsOf(store: ForwardCheckpoint): { kind: Kind; id: number; state: ItemState }[] {
  const out: { kind: Kind; id: number; state: ItemState }[] = [];
  for (const kind of ['projects', 'snippets', 'groups'] as const)
    for (const state of ITEM_STATES)
      for (const row of store.itemsInState(kind, null, state, ALL)) out.push({ kind, id: row.id, state });
  return out;
}

export function readSkipped(file: string, services: Pick<RuntimeServices, 'openCheckpoint'>): SkippedItem[] {
  const store = services.openCheckpoint(file, { readOnly: true });
  try {
    return skippedIn(store);
  } finally {
    store.close();
  }
}

/** Items the revert left alone: seeded as skipped, or found elsewhere by the drain before their POST. */
function skippedIn(store: ForwardCheckpoint): SkippedItem[] {
  const out: SkippedItem[] = [];
  const skipped = (
    row: ReturnType<ForwardCheckpoint['itemsInState']>[number],
    kind: RevertItem['kind'],
    fallback: string,
  ): SkippedItem => ({
    kind,
    id: row.id,
    name: row.name,
    sizeBytes: row.sizeBytes,
    from: row.source,
    to: row.destination ?? '',
    forwardMoveId: 0,
    forwardState: 'moved',
    storage: null,
    reason: row.lastError ?? fallback,
  });
  for (const kind of ['projects', 'snippets', 'groups'] as const) {
    for (const row of store.itemsInState(kind, null, 'left', ALL)) out.push(skipped(row, kind, 'left the storage'));
    for (const row of store.itemsInState(kind, null, 'moved', ALL))
      if (row.moveId === null) out.push(skipped(row, kind, 'already back'));
  }
  return out;
}

export function groupItems(items: readonly RevertItem[]): RevertGroup[] {
  const by = new Map<string, RevertGroup>();
  for (const it of items) {
    const key = `${it.kind}\u0000${it.from}\u0000${it.to}`;
    const g = by.get(key) ?? { kind: it.kind, from: it.from, to: it.to, n: 0 };
    g.n++;
    by.set(key, g);
  }
  return [...by.values()];
}
