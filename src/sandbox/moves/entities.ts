/**
 * The move record JSON (reference §1.4):
 * `id, created_at, state, source_storage_name, destination_storage_name, error_message` and the
 * nested `project` (ProjectIdentity), `snippet` (BasicSnippet) or `group` (id, web_url, name).
 */
import type { Db, ItemRow, MoveRow } from '../db.js';
import { basicSnippetEntity, projectIdentity } from '../inventory/entities.js';
import { createAuthorLookup } from '../inventory/items.js';
import { moveStatements } from './store.js';

/** The item a move record nests. A function of the module, not a closure per renderer: one is built per request. */
function nested(item: ItemRow, origin: string, authors: ReturnType<typeof createAuthorLookup>): Record<string, unknown> {
  if (item.kind === 'project') return projectIdentity(item);
  if (item.kind === 'snippet') return basicSnippetEntity(item, origin, authors(item.owner_id));
  return { id: item.id, web_url: `${origin}/groups/${item.path}`, name: item.name };
}

/** Builds move JSON for one request (caches authors across rows of a page). */
export function createMoveRenderer(db: Db, origin: string): (move: MoveRow, knownItem?: ItemRow) => Record<string, unknown> {
  const s = moveStatements(db);
  const authors = createAuthorLookup(db);
  return (move, knownItem) => {
    const item = knownItem ?? s.itemById.get(move.kind, move.item_id);
    return {
      id: move.id,
      created_at: move.created_at,
      state: move.state,
      source_storage_name: move.source,
      destination_storage_name: move.destination,
      error_message: move.error_message,
      [move.kind]: item ? nested(item, origin, authors) : null,
    };
  };
}
