/**
 * The `items` table: projects, snippets and groups (a group's repository is its wiki) in one table.
 * The lookups that the inventory, move and write routes share, so that `:id` means the same item
 * on every route (the row type, ItemRow, is the table's and lives in ../db.ts).
 */
import type { Db, ItemKind, ItemRow, Statement } from '../db.js';
import { ITEM_COLUMNS, perDatabase } from '../db.js';
import { SandboxHttpError, invalidParam, notFound } from '../http/errors.js';

/** GitLab's not-found names per kind (`404 Project Not Found`). */
export const KIND_LABEL: Record<ItemKind, string> = { project: 'Project', snippet: 'Snippet', group: 'Group' };

/** A snippet's author: the owner's public fields. */
export interface AuthorInfo {
  id: number;
  username: string;
  name: string;
  state: string;
}

export interface ItemStatements {
  byId: Statement<[ItemKind, number], ItemRow>;
  /** kind, namespace, path. Case-insensitive, as GitLab's find_by_full_path. */
  byPath: Statement<[ItemKind, string, string], ItemRow>;
  authorById: Statement<[number], AuthorInfo>;
  /** kind, id: the states that hide a project from GitLab's default lookups. */
  stateById: Statement<[ItemKind, number], ItemState>;
}

/** States GitLab keeps outside the REST entities (see `GET /-/sandbox/items/:kind/:id`). */
export interface ItemState {
  hidden: number;
  pending_delete: number;
}

/** The item lookups of `db`, prepared on first use. */
export const itemStatements = perDatabase((db): ItemStatements => ({
  byId: db.prepare(`SELECT ${ITEM_COLUMNS} FROM items WHERE kind = ? AND id = ?`),
  // Queries name the index: without statistics SQLite prefers the primary key's `kind` prefix.
  byPath: db.prepare(
    `SELECT ${ITEM_COLUMNS} FROM items INDEXED BY items_path WHERE kind = ? AND namespace = ? COLLATE NOCASE AND path = ? COLLATE NOCASE LIMIT 1`,
  ),
  authorById: db.prepare('SELECT id, username, name, state FROM users WHERE id = ?'),
  stateById: db.prepare('SELECT hidden, pending_delete FROM items WHERE kind = ? AND id = ?'),
}));

/**
 * Which items a lookup may find. `all`: every row, as GitLab's move routes see projects (they
 * override `find_project_scopes` with plain `Project`: "Allow to move projects in
 * hidden/pending_delete state"), and so does the bulk move. `default`: GitLab's default
 * `find_project_scopes`, `Project.without_deleted.not_hidden`, used by `GET /projects/:id` and the
 * write routes: hidden and pending-delete projects are not found, even by administrators. Groups
 * pending deletion stay findable, and snippets have no such states.
 */
export type FindScope = 'all' | 'default';

export interface FindOptions {
  /** Default `all`, so that the move routes and the engine find hidden and pending-delete projects. */
  scope?: FindScope;
}

/**
 * Finds an item by the `:id` of a route: an integer id, or for projects and groups a full path
 * (`group-1/project-1`, `group-1`; URL-encoded in the route, decoded by the router). Snippets have
 * no path. Undefined when there is no such item, or it lies outside `options.scope`.
 */
export function findItem(db: Db, kind: ItemKind, ref: string, options: FindOptions = {}): ItemRow | undefined {
  const row = lookup(db, kind, ref);
  if (!row || options.scope !== 'default' || kind !== 'project') return row;
  const state = itemStatements(db).stateById.get(kind, row.id);
  return state && (state.hidden === 1 || state.pending_delete === 1) ? undefined : row;
}

function lookup(db: Db, kind: ItemKind, ref: string): ItemRow | undefined {
  const s = itemStatements(db);
  if (/^\d+$/.test(ref)) return s.byId.get(kind, Number(ref));
  if (kind === 'snippet') return undefined;
  // A group's full path is its path (groups have no namespace here).
  if (kind === 'group') return s.byPath.get(kind, '', ref);
  const slash = ref.lastIndexOf('/');
  return slash > 0 ? s.byPath.get(kind, ref.slice(0, slash), ref.slice(slash + 1)) : undefined;
}

/**
 * 404 for the group wiki write routes without group wikis (EE Premium/Ultimate). On the free tier
 * GitLab's licence check answers `404 Not found`; the Community Edition has no such route at all,
 * so it answers the router's own 404 (`{"error":"404 Not Found"}`). Takes the instance
 * configuration, not the request, so items.ts stays below the HTTP layer. (Group repository
 * storage moves have no licence check: see moves/routes.ts.)
 */
export function requireGroupTier(config: { tier: string; edition?: string }): void {
  if (config.edition === 'ce') throw new SandboxHttpError(404, { error: '404 Not Found' });
  if (config.tier === 'free') throw new SandboxHttpError(404, { message: '404 Not found' });
}

/**
 * Whether groups have wiki repositories to move: every EE build. Group wikis are EE code
 * (`GroupWiki`, `GroupWikiRepository` under `ee/`); the licence decides who may use them, not
 * whether their repositories exist. An instance whose licence lapsed (EE Free) keeps them, and the
 * group move API and its bulk service (`GroupWikiRepository.for_shard`) move them with no licence
 * check. The sandbox takes every seeded EE group to have one. The Community Edition has none.
 */
export function hasGroupWikiRepositories(config: { edition?: string }): boolean {
  return config.edition !== 'ce';
}

/**
 * Whether the `group_wikis` licence feature is on (EE Premium/Ultimate): the group entity shows
 * `repository_storage` only then (`ee/lib/ee/api/entities/group.rb`), and the wiki API answers.
 */
export function licensesGroupWikis(config: { tier: string; edition?: string }): boolean {
  return config.edition !== 'ce' && config.tier !== 'free';
}

/**
 * findItem for the move and write routes, which declare `:id` as Grape does: a snippet `:id`
 * that is not an integer is 400 `id is invalid`; a missing item is 404 `<Kind> Not Found`.
 */
export function requireItem(db: Db, kind: ItemKind, ref: string | undefined, options: FindOptions = {}): ItemRow {
  const raw = ref ?? '';
  if (kind === 'snippet' && !/^\d{1,15}$/.test(raw)) throw invalidParam('id is invalid');
  const row = findItem(db, kind, raw, options);
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
