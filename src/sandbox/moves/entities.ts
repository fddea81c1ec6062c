/**
 * The move record JSON (reference §1.4):
 * `id, created_at, state, source_storage_name, destination_storage_name, error_message` and the
 * nested `project` (ProjectIdentity), `snippet` (BasicSnippet) or `group` (id, web_url, name).
 * `error_message` exists from 16.7 (./releases.ts), truncated as GitLab stores it; before 16.7 the
 * entity has no such field.
 */
import type { Db, ItemKind, ItemRow } from '../db.js';
import { perDatabase } from '../db.js';
import type { NestedEntityRow } from '../inventory/entities.js';
import {
  NESTED_ENTITY_COLUMNS,
  basicSnippetEntity,
  nestedEntityRowOf,
  projectIdentity,
} from '../inventory/entities.js';
import { createAuthorLookup } from '../inventory/items.js';
import type { MoveListRow } from './store.js';
import { recordsErrorMessage, truncateError } from './releases.js';

/** The nested item's columns, as an array (see nestedEntityRowOf). */
const nestedItemById = perDatabase((db) =>
  db
    .prepare<[ItemKind, number], unknown[]>(`SELECT ${NESTED_ENTITY_COLUMNS} FROM items WHERE kind = ? AND id = ?`)
    .raw(true),
);

/** The item a move record nests. A function of the module, not a closure per renderer: one is built per request. */
function nested(
  kind: ItemKind,
  item: NestedEntityRow,
  origin: string,
  authors: ReturnType<typeof createAuthorLookup>,
): Record<string, unknown> {
  if (kind === 'project') return projectIdentity(item);
  if (kind === 'snippet') return basicSnippetEntity(item, origin, authors(item.owner_id));
  return { id: item.id, web_url: `${origin}/groups/${item.path}`, name: item.name };
}

/** Builds move JSON for one request on an instance of `version` (caches authors across rows of a page). */
export function createMoveRenderer(
  db: Db,
  origin: string,
  version: string,
): (move: MoveListRow, knownItem?: ItemRow) => Record<string, unknown> {
  const byId = nestedItemById(db);
  const authors = createAuthorLookup(db);
  const withError = recordsErrorMessage(version);
  return (move, knownItem) => {
    const raw = knownItem ? undefined : byId.get(move.kind, move.item_id);
    const item = knownItem ?? (raw ? nestedEntityRowOf(raw) : undefined);
    const json: Record<string, unknown> = {
      id: move.id,
      created_at: move.created_at,
      state: move.state,
      source_storage_name: move.source,
      destination_storage_name: move.destination,
    };
    if (withError) json.error_message = move.error_message === null ? null : truncateError(move.error_message);
    // Set after the literal, not as a computed key in it: V8 builds such literals on a slow path.
    json[move.kind] = item ? nested(move.kind, item, origin, authors) : null;
    return json;
  };
}
