/**
 * A bulk forward run's job outlives what its checkpoint records: GitLab's Sidekiq job creates one
 * move per repository on the source, and the forward run learns of each only when it polls the move
 * list and attributes it to a pending item. A forward run stopped during its bulk phase (Ctrl-C,
 * kill -9, a failure), or one whose bulk phase ended before the job's last moves appeared (the item
 * is then found "now on cluster" and recorded as left, without a move), has moves its checkpoint
 * knows nothing of: queued, running, or finished with the repository on the destination. They are
 * the forward run's all the same (its POST created them), so a revert reads the instance's move list
 * back to each bulk POST and takes every move of the job that the item's row does not record as one
 * of the forward run's: its per-item read then decides (on the destination by that move: moved back;
 * still queued or running: the revert refuses until it ends).
 */
import type { InstanceApi } from '../../api/types.js';
import type { Kind } from '../../plan/types.js';
import type { RevertItem } from '../../actors/index.js';
import type { ForwardCheckpoint } from '../../store/views.js';

const KINDS: readonly Kind[] = ['projects', 'snippets', 'groups'];
/** Moves read per page of the instance's move list. */
const PER_PAGE = 100;
/**
 * How far before the bulk POST's intent the list is read: the instance's clock may lag this host's a
 * little (NTP keeps them far closer). A move of someone else's from the same source to the same
 * destination within it cannot be told from the job's.
 */
const CLOCK_MARGIN_MS = 60_000;

/**
 * The moves of the forward run's bulk jobs (one per kind and source it posted) off `sources` onto
 * `destinations` that the forward checkpoint does not record (the item's row holds no move, or an
 * older one; or the job found an item the run never listed), as items of the forward run. Reads
 * only: one move-list page per hundred moves made since each bulk POST.
 */
export async function bulkJobItems(
  api: Pick<InstanceApi, 'listMoves'>,
  forward: ForwardCheckpoint,
  sources: readonly string[],
  destinations: readonly string[],
): Promise<RevertItem[]> {
  const out: RevertItem[] = [];
  for (const kind of KINDS) {
    for (const source of sources) {
      const bulk = forward.getBulk(kind, source);
      if (!bulk) continue;
      const since = bulk.intentAt - CLOCK_MARGIN_MS;
      for (let page: number | null = 1; page !== null;) {
        const { moves, nextPage } = await api.listMoves(kind, page, PER_PAGE);
        for (const m of moves) {
          if (m.sourceStorage !== source || !destinations.includes(m.destinationStorage)) continue;
          if (Date.parse(m.createdAt) < since) continue;
          const row = forward.getItem(kind, m.itemId);
          if (row && row.moveId !== null && row.moveId >= m.id) continue;
          out.push({
            kind,
            id: m.itemId,
            name: row?.name ?? m.itemName ?? `${kind.slice(0, -1)} ${m.itemId}`,
            sizeBytes: row?.sizeBytes ?? null,
            from: m.destinationStorage,
            to: source,
            forwardMoveId: m.id,
            // Its row is not `moved` by this move: the read decides whether it is on the destination by it.
            forwardState: row?.state === 'moved' ? 'left' : (row?.state ?? 'left'),
          });
        }
        const oldest = moves.at(-1);
        page = oldest && Date.parse(oldest.createdAt) >= since ? nextPage : null;
      }
    }
  }
  return out;
}

/** The forward run's items with the bulk jobs' unrecorded moves in place of older ones: one per item. */
export function withBulkJobItems(recorded: readonly RevertItem[], job: readonly RevertItem[]): RevertItem[] {
  const byKey = new Map(recorded.map((i) => [`${i.kind}:${i.id}`, i]));
  for (const j of job) {
    const was = byKey.get(`${j.kind}:${j.id}`);
    if (!was || was.forwardMoveId < j.forwardMoveId) byKey.set(`${j.kind}:${j.id}`, j);
  }
  return [...byKey.values()].sort(
    (a, b) => KINDS.indexOf(a.kind) - KINDS.indexOf(b.kind) || a.id - b.id || a.forwardMoveId - b.forwardMoveId,
  );
}
