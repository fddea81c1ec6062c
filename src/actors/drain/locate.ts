/**
 * Where one item is, by per-item reads: what the drain asks before it concludes anything from an
 * item's absence from a listing (offset pages over a changing set skip items; hidden and
 * pending-delete projects may not be listed; a page may be unreadable).
 */
import { ApiHttpError } from '../../api/errors.js';
import type { ItemRow } from '../../store/types.js';
import type { DrainCtx } from './context.js';
import { listedOnSource } from './unreachable.js';

/** What a per-item read needs of a drain: the client, the abort signal, the kind and the storage it is looked for on. */
export type LocateCtx = Pick<DrainCtx, 'kind' | 'source'> & { deps: Pick<DrainCtx['deps'], 'api' | 'signal'> };

/** Where an item is, asked one by one. */
export type Location =
  | { at: 'source' }
  | { at: 'elsewhere'; storage: string }
  | { at: 'gone' }
  | { at: 'unknown'; why: string }
  /** Listed on the source, but every per-item route answers 404 (./unreachable.ts). */
  | { at: 'unreachable' };

/**
 * One item's storage by a per-item read. A 404 is not proof that an item is gone: `GET
 * /projects/:id` answers 404 for hidden and pending-delete projects even to admins, and `GET
 * /snippets/:id` for project snippets whose project has snippets disabled or private to members
 * (lib/api/snippets.rb looks them up without `all_available`). Their move lists find them all
 * (`Snippet.find_by(id:)` in lib/api/snippet_repository_storage_moves.rb), so a 404 item is looked
 * up there: a move list that 404s too means deleted; a newest finished move off the source means it
 * is elsewhere; otherwise no move ever took it off the source, so it is still there. A project
 * whose move list is 404 too is still counted on the source's listing before it is called deleted:
 * before 16.7 the move routes do not find hidden and pending-delete projects either (`unreachable`).
 * Groups are shown to admins whatever their state: their 404 means deleted.
 */
export async function locate(ctx: LocateCtx, id: number): Promise<Location> {
  const { deps, kind, source } = ctx;
  try {
    const item = await deps.api.getItem(kind, id);
    if (item !== null) {
      if (item.storage === source) return { at: 'source' };
      if (item.storage === null) return { at: 'unknown', why: 'no repository_storage field' };
      return { at: 'elsewhere', storage: item.storage };
    }
    if (kind === 'groups') return { at: 'gone' };
    let moves;
    try {
      moves = await deps.api.listItemMoves(kind, id);
    } catch (err) {
      if (!(err instanceof ApiHttpError && err.status === 404)) throw err;
      // Before 16.7 the project move list is 404 for hidden and pending-delete projects too.
      if (kind === 'projects' && (await listedOnSource(ctx, id)) === true) return { at: 'unreachable' };
      return { at: 'gone' };
    }
    const last = moves.find((m) => m.state === 'finished' || m.state === 'cleanup failed');
    if (last && last.destinationStorage !== source) return { at: 'elsewhere', storage: last.destinationStorage };
    return { at: 'source' };
  } catch (err) {
    if (deps.signal.aborted) throw err;
    return { at: 'unknown', why: err instanceof Error ? err.message : String(err) };
  }
}

/** How an item found on the destination got there: what its row records. */
export interface Arrival {
  moveId: number | null;
  /** null: keep what the row has; `failed`: our move failed after the switch (its source copy is left). */
  moveState: string | null;
  note: string;
}

/**
 * An item found on the destination after a move of ours: if that move failed, either another move
 * took it there since, or ours failed after the switch (a Sidekiq job killed after track_repository: the
 * project lives on the destination, the move ends `failed` with no message, and the copy on the
 * source stays). The item's move list tells them apart; the second is recorded as moved with its
 * failed move, which the summary lists as a source copy left behind.
 */
export async function arrivalOf(
  ctx: DrainCtx,
  row: Pick<ItemRow, 'id' | 'moveId' | 'destination'>,
  storage: string,
): Promise<Arrival> {
  const plain = { moveId: null, moveState: null, note: 'already on the destination' };
  if (row.moveId === null) return plain;
  const moves = await ctx.deps.api.listItemMoves(ctx.kind, row.id);
  const ours = moves.find((m) => m.id === row.moveId);
  if (ours?.state !== 'failed') return plain;
  const later = moves.find(
    (m) =>
      m.id > ours.id && m.destinationStorage === storage && (m.state === 'finished' || m.state === 'cleanup failed'),
  );
  if (later) return { moveId: later.id, moveState: later.state, note: 'moved by another move' };
  return {
    moveId: ours.id,
    moveState: 'failed',
    note: `move ${ours.id} failed after the switch: the repository is on ${storage}, its copy on ${ctx.source} is left behind`,
  };
}
