/**
 * The per-item reads behind a revert, made before anything is written: where each item the forward
 * run made a move for is now (its storage), and what its move list says (the forward run's own move,
 * moves made since, a move still queued or running). From both, one verdict per item (`judge`, pure):
 *
 * - moved back: it is where the forward run's move put it, and no move has taken it anywhere since;
 * - skipped and listed: moved again, already back, deleted, or being moved by someone else right now
 *   (a move in progress that the forward run did not make: the revert would race it, and once that
 *   move ends its POST would silently undo it);
 * - alive: the forward run's own move is still queued or running (it may land after the revert);
 * - unrecorded: the item exists but this instance has no record of the forward run's move (it is not
 *   the instance the forward run worked on);
 * - not the forward run's doing: a row whose forward move failed and left it where it was.
 */
import { locate } from '../../actors/index.js';
import type { Location } from '../../actors/index.js';
import { ApiHttpError } from '../../api/errors.js';
import type { InstanceApi, MoveRecord } from '../../api/types.js';
import { TERMINAL_MOVE_STATES } from '../../api/types.js';
import type { AliveMove, RevertItem, RevertSet, SkippedItem } from '../../actors/index.js';

/** What the reads found of one item: its storage, and its move list (`gone`: the item no longer exists). */
export interface ItemReads {
  where: Location;
  moves: readonly MoveRecord[] | 'gone';
}

export type Verdict =
  | { verdict: 'move' }
  | { verdict: 'skip'; storage: string | null; reason: string }
  | { verdict: 'alive'; move: MoveRecord }
  | { verdict: 'unrecorded' }
  | { verdict: 'not-ours' };

const isTerminal = (m: MoveRecord) => (TERMINAL_MOVE_STATES as readonly string[]).includes(m.state);
/** A move that left the item on its destination. */
const isEffective = (m: MoveRecord) => m.state === 'finished' || m.state === 'cleanup failed';

function describeMove(m: MoveRecord): string {
  return `move ${m.id}, ${m.state}, ${m.sourceStorage} -> ${m.destinationStorage}`;
}

/**
 * The item's storage now: as read, or, when the instance does not show it (no storage field), as
 * its newest move that took it somewhere says; null when neither tells.
 */
function storageNow(item: RevertItem, where: Location, moves: readonly MoveRecord[]): string | null {
  if (where.at === 'source') return item.from;
  if (where.at === 'elsewhere') return where.storage;
  const last = moves.filter(isEffective).sort((a, b) => b.id - a.id)[0];
  return last ? last.destinationStorage : null;
}

/** One item's verdict from its reads (pure). */
export function judge(item: RevertItem, reads: ItemReads): Verdict {
  const moved = item.forwardState === 'moved';
  if (reads.moves === 'gone' || reads.where.at === 'gone')
    return moved
      ? { verdict: 'skip', storage: null, reason: 'deleted since the forward run' }
      : { verdict: 'not-ours' };
  const moves = reads.moves;
  const fwd = moves.find((m) => m.id === item.forwardMoveId);
  if (!fwd) return { verdict: 'unrecorded' };
  if (!isTerminal(fwd)) return { verdict: 'alive', move: fwd };
  const now = storageNow(item, reads.where, moves);
  // A row whose forward move did not end on the destination is the forward run's only if the item
  // is there all the same, by that move (one that failed after switching the repository).
  if (!moved && !(now === item.from && fwd.destinationStorage === item.from)) return { verdict: 'not-ours' };
  const running = moves.find((m) => !isTerminal(m));
  if (running)
    return {
      verdict: 'skip',
      storage: now,
      reason: `being moved by someone else (${describeMove(running)}): left to that move`,
    };
  const since = moves.filter((m) => m.id > fwd.id && isEffective(m)).sort((a, b) => b.id - a.id)[0];
  if (now === null) return moved && !since ? { verdict: 'move' } : { verdict: 'not-ours' };
  if (now === item.to)
    return { verdict: 'skip', storage: now, reason: `already back on ${item.to} (moved by someone else)` };
  if (now !== item.from)
    return { verdict: 'skip', storage: now, reason: `moved again since the forward run, now on ${now}` };
  if (since)
    return {
      verdict: 'skip',
      storage: now,
      reason: `moved since the forward run (${describeMove(since)}), now on ${now} again: left as it is`,
    };
  return { verdict: 'move' };
}

/** The item's move list, or `gone` when the instance answers 404 for it (the item was deleted). */
async function movesOf(api: InstanceApi, item: RevertItem): Promise<readonly MoveRecord[] | 'gone'> {
  try {
    return await api.listItemMoves(item.kind, item.id);
  } catch (err) {
    if (err instanceof ApiHttpError && err.status === 404) return 'gone';
    throw err;
  }
}

/**
 * Reads every item (its storage and its move list, at most `parallel` items at once) and splits them
 * by verdict. Reads only. A move list that cannot be read fails the revert before any write: without
 * it no item can be told to be the forward run's, or free of someone else's move.
 */
export async function locateRevertItems(
  api: InstanceApi,
  items: readonly RevertItem[],
  signal: AbortSignal,
  parallel = 8,
): Promise<RevertSet> {
  const verdicts: Verdict[] = new Array<Verdict>(items.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      const item = items[i];
      if (item === undefined) return;
      signal.throwIfAborted();
      const [where, moves] = await Promise.all([
        locate({ deps: { api, signal }, kind: item.kind, source: item.from }, item.id),
        movesOf(api, item),
      ]);
      verdicts[i] = judge(item, { where, moves });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(parallel, items.length)) }, worker));
  const set: RevertSet = { items: [], skipped: [], alive: [], unrecorded: [] };
  items.forEach((item, i) => {
    const v = verdicts[i] as Verdict;
    if (v.verdict === 'move') set.items.push(item);
    else if (v.verdict === 'skip') set.skipped.push({ ...item, storage: v.storage, reason: v.reason } as SkippedItem);
    else if (v.verdict === 'alive') set.alive.push(aliveOf(item, v.move));
    else if (v.verdict === 'unrecorded') set.unrecorded.push(item);
  });
  return set;
}

function aliveOf(item: RevertItem, m: MoveRecord): AliveMove {
  return {
    kind: item.kind,
    id: item.id,
    name: item.name,
    moveId: m.id,
    state: m.state,
    source: m.sourceStorage,
    destination: m.destinationStorage,
  };
}
