/**
 * `GET /namespaces/:id`: one namespace by id or full path, as GitLab's `find_namespace!` finds it
 * (lib/api/namespaces.rb, lib/api/helpers.rb): an integer is an id, anything else a full path,
 * matched without regard to case (`find_by_full_path`), URL-encoded in the route (`acme%2Fteam`).
 * A namespace the caller may not read answers `404 Namespace Not Found`, as one that does not exist:
 * GitLab's `check_namespace_access` asks `read_namespace_via_membership`, which a user namespace
 * gives its owner and a group its members (a public group's non-members included get 404), and
 * administrators everything. The sandbox keeps no group memberships: a group's owner (its creator,
 * `owner_id`) stands for its members, and a namespace known only from its projects is read by
 * administrators only.
 *
 * The sandbox keeps no namespace table: a namespace is a group row (whose path is its full path), a
 * user's own namespace (the username), or one the projects live in (`group-3`, `acme/team`, and
 * every ancestor of it, as GitLab's parent groups). Ids: a group row's id; a user's namespace
 * USER_NAMESPACE_BASE + the user's id; a namespace known only from its projects `group-N` -> N,
 * else 0, the id the project entity's `namespace` shows for it (entities.ts).
 */
import type { Db } from '../db.js';
import { perDatabase } from '../db.js';
import type { RequestContext, Reply } from '../http/context.js';
import { notFound } from '../http/errors.js';
import type { Router } from '../http/router.js';
import { isEffectiveAdmin } from '../auth/authenticate.js';
import { namespaceId } from './entities.js';
import { findItem } from './items.js';

/** User namespaces are numbered from here, apart from group ids. */
export const USER_NAMESPACE_BASE = 1_000_000;

interface Found {
  id: number;
  name: string;
  path: string;
  kind: 'group' | 'user';
  fullPath: string;
  /** Who may read it besides administrators: a user namespace's owner, a group's owner (its members' stand-in). */
  ownerId: number | null;
}

const statements = perDatabase((db: Db) => ({
  userByName: db.prepare<[string], { id: number; username: string; name: string }>(
    'SELECT id, username, name FROM users WHERE username = ?',
  ),
  userById: db.prepare<[number], { id: number; username: string; name: string }>(
    'SELECT id, username, name FROM users WHERE id = ?',
  ),
  // A namespace the projects live in, or an ancestor of one; the stored spelling comes back.
  projectNamespace: db.prepare<[string, string, string], { namespace: string }>(
    `SELECT namespace FROM items WHERE kind = 'project' AND (namespace = ? COLLATE NOCASE
       OR substr(namespace, 1, length(?) + 1) = ? || '/' COLLATE NOCASE) LIMIT 1`,
  ),
  groupAncestor: db.prepare<[string, string], { path: string }>(
    `SELECT path FROM items WHERE kind = 'group' AND substr(path, 1, length(?) + 1) = ? || '/' COLLATE NOCASE LIMIT 1`,
  ),
}));

/** Adds `GET /api/v4/namespaces/:id`. */
export function register(router: Router): void {
  router.get('/api/v4/namespaces/:id', { level: 'user' }, showNamespace);
}

function showNamespace(ctx: RequestContext): Reply {
  const found = findNamespace(ctx.state.db, ctx.params.id ?? '');
  const caller = ctx.caller;
  const readable =
    found !== undefined && caller !== null && (isEffectiveAdmin(ctx, caller) || found.ownerId === caller.user.id);
  if (!found || !readable) throw notFound('Namespace');
  const parent = found.fullPath.includes('/') ? found.fullPath.slice(0, found.fullPath.lastIndexOf('/')) : null;
  return {
    body: {
      id: found.id,
      name: found.name,
      path: found.path,
      kind: found.kind,
      full_path: found.fullPath,
      parent_id: parent === null ? null : (findNamespace(ctx.state.db, parent)?.id ?? null),
      avatar_url: null,
      web_url: found.kind === 'user' ? `${ctx.origin}/${found.fullPath}` : `${ctx.origin}/groups/${found.fullPath}`,
    },
  };
}

/** The namespace `ref` names (an id, or a full path in any case), or undefined. */
export function findNamespace(db: Db, ref: string): Found | undefined {
  const s = statements(db);
  if (/^\d+$/.test(ref)) {
    const n = Number(ref);
    if (n > USER_NAMESPACE_BASE) {
      const u = s.userById.get(n - USER_NAMESPACE_BASE);
      return u ? userNamespace(u) : undefined;
    }
    const g = findItem(db, 'group', ref);
    return g ? groupNamespace(g.id, g.name, g.path, g.owner_id) : undefined;
  }
  const g = findItem(db, 'group', ref);
  if (g) return groupNamespace(g.id, g.name, g.path, g.owner_id);
  const u = s.userByName.get(ref);
  if (u) return userNamespace(u);
  const fromProjects = s.projectNamespace.get(ref, ref, ref)?.namespace ?? s.groupAncestor.get(ref, ref)?.path;
  if (fromProjects === undefined) return undefined;
  const fullPath = fromProjects.slice(0, ref.length);
  return groupNamespace(namespaceId(fullPath), lastPart(fullPath), fullPath, null);
}

function lastPart(fullPath: string): string {
  return fullPath.slice(fullPath.lastIndexOf('/') + 1);
}

function groupNamespace(id: number, name: string, fullPath: string, ownerId: number | null): Found {
  return { id, name: lastPart(name), path: lastPart(fullPath), kind: 'group', fullPath, ownerId };
}

function userNamespace(u: { id: number; username: string; name: string }): Found {
  return {
    id: USER_NAMESPACE_BASE + u.id,
    name: u.name,
    path: u.username,
    kind: 'user',
    fullPath: u.username,
    ownerId: u.id,
  };
}
