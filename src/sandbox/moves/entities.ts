/**
 * The move record JSON (reference §1.4):
 * `id, created_at, state, source_storage_name, destination_storage_name, error_message` and the
 * nested `project` (ProjectIdentity), `snippet` (BasicSnippet) or `group` (id, web_url, name).
 */
import type { RequestContext } from '../http/context.js';
import type { Db } from '../db.js';
import { ApiError, invalidParam } from '../http/errors.js';
import type { ItemRow } from '../inventory/items.js';
import type { MoveRow } from './store.js';
import { moveStatements } from './store.js';

/** 404 for group routes on the free tier: group repository moves and wikis are Premium/Ultimate. */
export function requireGroupTier(ctx: RequestContext): void {
  if (ctx.state.config.tier === 'free') throw new ApiError(404, { message: '404 Not found' });
}

/** An integer path parameter (`repository_storage_move_id`); 400 `<name> is invalid` otherwise. */
export function intParam(value: string | undefined, name: string): number {
  if (value === undefined || !/^\d{1,15}$/.test(value)) throw invalidParam(`${name} is invalid`);
  return Number(value);
}

interface Author {
  id: number;
  username: string;
  name: string;
  state: string;
}

/** Builds move JSON for one request (caches authors across rows of a page). */
export function createMoveRenderer(db: Db, origin: string): (move: MoveRow, knownItem?: ItemRow) => Record<string, unknown> {
  const s = moveStatements(db);
  const authors = new Map<number, Author | null>();
  const author = (id: number | null): Record<string, unknown> | null => {
    if (id === null) return null;
    let a = authors.get(id);
    if (a === undefined) {
      a = (db.prepare('SELECT id, username, name, state FROM users WHERE id = ?').get(id) as Author | undefined) ?? null;
      authors.set(id, a);
    }
    return a && { id: a.id, username: a.username, name: a.name, state: a.state, locked: false, avatar_url: null, web_url: `${origin}/${a.username}` };
  };
  const nested = (item: ItemRow): Record<string, unknown> => {
    if (item.kind === 'project') {
      const fullPath = item.namespace ? `${item.namespace}/${item.path}` : item.path;
      return {
        id: item.id, description: null, name: item.name, name_with_namespace: item.namespace ? `${item.namespace} / ${item.name}` : item.name,
        path: item.path, path_with_namespace: fullPath, created_at: item.created_at,
      };
    }
    if (item.kind === 'snippet') {
      const webUrl = `${origin}/-/snippets/${item.id}`;
      return {
        id: item.id, title: item.name, description: null, visibility: item.visibility, author: author(item.owner_id),
        created_at: item.created_at, updated_at: item.updated_at, project_id: item.project_id, web_url: webUrl, raw_url: `${webUrl}/raw`,
      };
    }
    return { id: item.id, web_url: `${origin}/groups/${item.path}`, name: item.name };
  };
  return (move, knownItem) => {
    const item = knownItem ?? s.itemById.get(move.kind, move.item_id);
    return {
      id: move.id,
      created_at: move.created_at,
      state: move.state,
      source_storage_name: move.source,
      destination_storage_name: move.destination,
      error_message: move.error_message,
      [move.kind]: item ? nested(item) : null,
    };
  };
}
