/**
 * Moves in flight on the plan's sources that this checkpoint did not schedule: another drain of the
 * same storages (the same plan under another `--state`, on another host), an operator's bulk move,
 * a hand-made one. Pre-flight refuses to start beside them (exit 4) unless the run is told to with
 * `--accept-foreign-moves`: two drains of one storage would fight over its items and its room.
 *
 * Ours are the moves this checkpoint knows: the move id an item row records, a row whose intent is
 * recorded but whose POST's answer is not (its move is reconciled by the drain, never posted
 * twice), a move of an item created since its last intent (a POST taken for unapplied that was
 * applied after all), and, after a bulk POST of this checkpoint, the moves on that source its job
 * created.
 */
import type { MoveRecord } from '../api/types.js';
import type { Kind } from '../plan/types.js';
import type { PreflightStore } from '../store/views.js';

/** How far the instance's clock may be behind ours when a move's `created_at` is compared with an intent. */
const CLOCK_SKEW_MS = 5 * 60_000;

/** The foreign moves of one kind. */
export interface ForeignMoves {
  kind: Kind;
  moves: MoveRecord[];
}

/** Of `busy` (moves in flight on the sources), those this checkpoint did not schedule. */
export function foreignOf(
  store: Pick<PreflightStore, 'getItem' | 'getBulk'>,
  kind: Kind,
  busy: readonly MoveRecord[],
): MoveRecord[] {
  return busy.filter((m) => {
    const row = store.getItem(kind, m.itemId);
    if (row && (row.moveId === m.id || row.state === 'scheduling')) return false;
    // A POST this checkpoint took for unapplied (an answer lost, then its attempt given back) may
    // have made a move all the same: one created since the item's last intent is taken as that one.
    const created = Date.parse(m.createdAt);
    if (row?.intentAt != null && Number.isFinite(created) && created >= row.intentAt - CLOCK_SKEW_MS) return false;
    const bulk = store.getBulk(kind, m.sourceStorage);
    return !(bulk && m.id > bulk.seenMaxMoveId);
  });
}

/** The oldest `created_at` among the moves (ISO text as the instance wrote it), or null. */
function oldest(moves: readonly MoveRecord[]): string | null {
  let best: { at: number; text: string } | null = null;
  for (const m of moves) {
    const at = Date.parse(m.createdAt);
    if (Number.isFinite(at) && (best === null || at < best.at)) best = { at, text: m.createdAt };
  }
  return best?.text ?? null;
}

/**
 * What the refusal says: how many foreign moves per kind and storage, since when (the oldest
 * created), a few of them by id, and the way on. Null when there are none.
 */
export function describeForeignMoves(found: readonly ForeignMoves[], sawAll: boolean): string | null {
  const all = found.flatMap((f) => f.moves);
  if (all.length === 0) return null;
  const parts = found
    .filter((f) => f.moves.length > 0)
    .map((f) => {
      const by = new Map<string, number>();
      for (const m of f.moves) by.set(m.sourceStorage, (by.get(m.sourceStorage) ?? 0) + 1);
      const where = [...by].map(([s, n]) => `${n} on ${s}`).join(', ');
      return `${f.moves.length} ${f.kind} move(s) (${where})`;
    });
  const since = oldest(all);
  const some = all
    .slice(0, 5)
    .map((m) => `${m.kind} ${m.itemId} (move ${m.id}, ${m.state}, to ${m.destinationStorage})`)
    .join(', ');
  return (
    `${all.length}${sawAll ? '' : ' or more'} move(s) this checkpoint did not schedule are in flight on the sources: ${parts.join('; ')}` +
    `${since ? `, the oldest created ${since}` : ''}; e.g. ${some}${all.length > 5 ? ', ...' : ''}. ` +
    'Another drain of these storages (the same plan with another --state, or on another host) or a move made by hand is going on: ' +
    'two drains of one storage would fight over its items and its room. Wait for them to end (or stop that run), ' +
    'or pass --accept-foreign-moves if they are known and this run is to go on beside them'
  );
}
