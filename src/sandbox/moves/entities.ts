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
import { basicSnippetEntity, projectIdentity } from '../inventory/entities.js';
import { createAuthorLookup } from '../inventory/items.js';
import type { MoveListRow } from './store.js';
import { recordsErrorMessage, truncateError } from './releases.js';

/**
 * The nested item's columns, as an array (better-sqlite3 builds row objects through slow property
 * definitions): move list pages nest a hundred items each, and reading whole rows was most of
 * their cost.
 */
const nestedItemById = perDatabase((db) =>
  db
    .prepare<[ItemKind, number], unknown[]>(
      'SELECT id, name, path, namespace, visibility, owner_id, project_id, created_at, updated_at FROM items WHERE kind = ? AND id = ?',
    )
    .raw(true),
);

function nestedItemOf(a: unknown[]): NestedEntityRow {
  return {
    id: a[0] as number,
    name: a[1] as string,
    path: a[2] as string,
    namespace: a[3] as string,
    visibility: a[4] as string,
    owner_id: a[5] as number | null,
    project_id: a[6] as number | null,
    created_at: a[7] as string,
    updated_at: a[8] as string,
  };
}

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
    const item = knownItem ?? (raw ? nestedItemOf(raw) : undefined);
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
