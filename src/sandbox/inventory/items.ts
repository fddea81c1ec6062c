/**
 * The `items` table: projects, snippets and groups (a group's repository is its wiki) in one table.
 * The row type and the lookups that the inventory, move and write routes share, so that `:id`
 * means the same item on every route.
 */
import type { Db, ItemKind } from '../db.js';
import { perDatabase } from '../db.js';
import { SandboxHttpError, invalidParam, notFound } from '../http/errors.js';

/** One row of `items`. */
export interface ItemRow {
  kind: ItemKind;
  id: number;
  name: string;
  path: string;
  namespace: string;
  visibility: string;
  storage: string;
  read_only: number;
  size_mb: number;
  checksum: string;
  commit_count: number;
  owner_id: number | null;
  project_id: number | null;
  created_at: string;
  updated_at: string;
}

/** The columns of ItemRow, in the table's own order. */
export const ITEM_COLUMNS = 'kind, id, name, path, namespace, visibility, storage, read_only, size_mb, checksum, commit_count, owner_id, project_id, created_at, updated_at';

/** GitLab's not-found names per kind (`404 Project Not Found`). */
export const KIND_LABEL: Record<ItemKind, string> = { project: 'Project', snippet: 'Snippet', group: 'Group' };

/** A snippet's author: the owner's public fields. */
export interface AuthorInfo {
  id: number;
  username: string;
  name: string;
  state: string;
}

// better-sqlite3's Statement generics are awkward to spell; this narrow view is what we use.
interface Get<P extends unknown[], R> { get(...params: P): R | undefined }

export interface ItemStatements {
  byId: Get<[ItemKind, number], ItemRow>;
  /** kind, namespace, path. Case-insensitive, as GitLab's find_by_full_path. */
  byPath: Get<[ItemKind, string, string], ItemRow>;
  authorById: Get<[number], AuthorInfo>;
}

/** The item lookups of `db`, prepared on first use. */
export const itemStatements = perDatabase((db): ItemStatements => ({
  byId: db.prepare(`SELECT ${ITEM_COLUMNS} FROM items WHERE kind = ? AND id = ?`),
  // Queries name the index: without statistics SQLite prefers the primary key's `kind` prefix.
  byPath: db.prepare(`SELECT ${ITEM_COLUMNS} FROM items INDEXED BY items_path WHERE kind = ? AND namespace = ? COLLATE NOCASE AND path = ? COLLATE NOCASE LIMIT 1`),
  authorById: db.prepare('SELECT id, username, name, state FROM users WHERE id = ?'),
}) as unknown as ItemStatements);

/**
 * Finds an item by the `:id` of a route: an integer id, or for projects and groups a full path
 * (`group-1/project-1`, `group-1`; URL-encoded in the route, decoded by the router). Snippets have
 * no path. Undefined when there is no such item.
 */
export function findItem(db: Db, kind: ItemKind, ref: string): ItemRow | undefined {
  const s = itemStatements(db);
  if (/^\d+$/.test(ref)) return s.byId.get(kind, Number(ref));
  if (kind === 'snippet') return undefined;
  // A group's full path is its path (groups have no namespace here).
  if (kind === 'group') return s.byPath.get(kind, '', ref);
  const slash = ref.lastIndexOf('/');
  return slash > 0 ? s.byPath.get(kind, ref.slice(0, slash), ref.slice(slash + 1)) : undefined;
}

/**
 * 404 for group routes on the free tier: group repository moves and wikis are Premium/Ultimate.
 * Takes the instance configuration, not the request, so items.ts stays below the HTTP layer.
 */
export function requireGroupTier(config: { tier: string }): void {
  if (config.tier === 'free') throw new SandboxHttpError(404, { message: '404 Not found' });
}

/**
 * findItem for the move and write routes, which declare `:id` as Grape does: a snippet `:id`
 * that is not an integer is 400 `id is invalid`; a missing item is 404 `<Kind> Not Found`.
 */
export function requireItem(db: Db, kind: ItemKind, ref: string | undefined): ItemRow {
  const raw = ref ?? '';
  if (kind === 'snippet' && !/^\d{1,15}$/.test(raw)) throw invalidParam('id is invalid');
  const row = findItem(db, kind, raw);
  if (!row) throw notFound(KIND_LABEL[kind]);
  return row;
}

/** Looks up items' authors (owners) for one response, each user once however many rows they own. */
export function createAuthorLookup(db: Db): (ownerId: number | null) => AuthorInfo | undefined {
  const statement = itemStatements(db).authorById;
  const seen = new Map<number, AuthorInfo | undefined>();
  return (ownerId) => {
    if (ownerId === null) return undefined;
    if (!seen.has(ownerId)) seen.set(ownerId, statement.get(ownerId));
    return seen.get(ownerId);
  };
}
