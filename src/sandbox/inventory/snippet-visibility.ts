/**
 * Who may read a snippet outside the move routes, as GitLab's SnippetsFinder decides
 * when it is not asked for `all_available` (`GET /snippets/:id`, and `/snippets/all` for anyone who
 * cannot read all resources). The finder is a union of three sets (`app/finders/snippets_finder.rb`,
 * `snippets_for_personal_and_multiple_projects`; scopes in `app/models/snippet.rb`):
 *
 * 1. personal snippets whose visibility the user's levels allow, or that the user wrote;
 * 2. snippets of projects whose visibility the user's levels allow and whose snippets feature is
 *    `enabled` (or `public`), with the same condition on the snippet itself;
 * 3. snippets of projects the user is a member of whose snippets feature is `enabled` or `private`
 *    ("only project members"), whatever the snippet's visibility.
 *
 * An administrator's levels are all three (`Gitlab::VisibilityLevel.levels_for_user` via
 * `can_read_all_resources?`), so for an administrator personal snippets are always there, and a
 * project snippet only when its project's feature is `enabled`, or `private` and the administrator
 * is a member. A project with snippets `disabled` hides them from everyone, members included. The
 * move routes look snippets up with `Snippet.find_by` and `/snippets/all` gives administrators
 * `Snippet.all`, so neither is affected. Other users' levels are internal and public.
 */
import type { Db, Statement } from '../db.js';
import { perDatabase } from '../db.js';

/** The reader: a user id and whether it reads as an administrator (Admin Mode counted). */
export interface SnippetReader {
  userId: number;
  admin: boolean;
}

/** The snippet columns the rule needs. */
export interface SnippetFacts {
  visibility: string;
  owner_id: number | null;
  project_id: number | null;
}

interface ProjectFacts {
  visibility: string;
  snippets_access_level: string;
}

interface VisibilityStatements {
  project: Statement<[number], ProjectFacts>;
  member: Statement<[number, number], { m: number }>;
}

const statements = perDatabase((db): VisibilityStatements => ({
  project: db.prepare("SELECT visibility, snippets_access_level FROM items WHERE kind = 'project' AND id = ?"),
  member: db.prepare('SELECT 1 AS m FROM project_members WHERE project_id = ? AND user_id = ?'),
}));

/** Visibility levels a logged-in user who is not an administrator may read (no external users here). */
const USER_LEVELS = ['public', 'internal'];

/** Whether `reader` finds `snippet` through GitLab's SnippetsFinder without `all_available`. */
export function canReadSnippet(db: Db, reader: SnippetReader, snippet: SnippetFacts): boolean {
  const levelOk = (visibility: string) => reader.admin || USER_LEVELS.includes(visibility);
  const ownSnippet = snippet.owner_id !== null && snippet.owner_id === reader.userId;
  if (snippet.project_id === null) return levelOk(snippet.visibility) || ownSnippet;
  const s = statements(db);
  const project = s.project.get(snippet.project_id);
  // The finder joins the project: a snippet whose project row is gone is found by nobody.
  if (!project) return false;
  const feature = project.snippets_access_level;
  if (feature === 'enabled' && levelOk(project.visibility) && (levelOk(snippet.visibility) || ownSnippet)) return true;
  return (
    (feature === 'enabled' || feature === 'private') && s.member.get(snippet.project_id, reader.userId) !== undefined
  );
}

/**
 * The same rule as SQL over `items` (the snippet rows), for listings read by someone who is not an
 * administrator; `?` parameters in order.
 */
export function readableSnippetsSql(userId: number): { sql: string; params: unknown[] } {
  const levels = USER_LEVELS.map((l) => `'${l}'`).join(', ');
  return {
    sql: `((project_id IS NULL AND (visibility IN (${levels}) OR owner_id = ?))
      OR (project_id IS NOT NULL AND EXISTS (SELECT 1 FROM items p WHERE p.kind = 'project' AND p.id = items.project_id AND (
        (p.snippets_access_level = 'enabled' AND p.visibility IN (${levels}) AND (items.visibility IN (${levels}) OR items.owner_id = ?))
        OR (p.snippets_access_level IN ('enabled', 'private')
          AND EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = p.id AND m.user_id = ?))))))`,
    params: [userId, userId, userId],
  };
}

/**
 * `GET /snippets`: the finder with `author: current_user` and no `all_available`, for every caller
 * administrators included, as SQL over `items`. The same union with the author fixed: the caller's
 * personal snippets (all of them: `snippets_for_author` keeps private ones when the author is the
 * caller), and the caller's project snippets whose project the caller's levels allow with the
 * snippets feature `enabled`, or whose project the caller is a member of with the feature `enabled`
 * or `private`. An administrator's levels are all three, so only the feature and membership remain.
 */
export function ownSnippetsSql(userId: number, admin: boolean): { sql: string; params: unknown[] } {
  const levels = USER_LEVELS.map((l) => `'${l}'`).join(', ');
  const projectVisible = admin ? '1' : `p.visibility IN (${levels})`;
  return {
    sql: `(owner_id = ? AND (project_id IS NULL
      OR EXISTS (SELECT 1 FROM items p WHERE p.kind = 'project' AND p.id = items.project_id AND (
        (p.snippets_access_level = 'enabled' AND ${projectVisible})
        OR (p.snippets_access_level IN ('enabled', 'private')
          AND EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = p.id AND m.user_id = ?))))))`,
    params: [userId, userId],
  };
}

/**
 * `GET /snippets/public`: the finder with no user and `only_personal`, so personal snippets that are
 * public, whoever asks (an administrator too).
 */
export const PUBLIC_PERSONAL_SNIPPETS_SQL = "(project_id IS NULL AND visibility = 'public')";
