/**
 * Projects named by a former full path (GitLab's `redirect_routes`, kept when a project is renamed
 * or transferred). `find_project!` (lib/api/helpers.rb) finds the project through the route and,
 * when the path asked is not the project's own, answers a GET with 301 to the same request at the
 * project's id (`url_with_project_id`) and any other method with 405 "Non GET methods are not
 * allowed for moved projects". From 16.7; 16.4 to 16.6 behind the `api_redirect_moved_projects`
 * flag, off by default: the sandbox redirects there only when the seed turns the flag on
 * (`instance.feature_flags`), and otherwise answers 404 as for any unknown path. Groups and users
 * never redirect.
 */
import { atLeast, parseRelease } from '../auth/token-types.js';
import type { RequestContext } from '../http/context.js';
import { SandboxHttpError } from '../http/errors.js';
import { perDatabase } from '../db.js';
import type { Db, ItemRow } from '../db.js';
import { findItem, requireItem } from './items.js';
import type { FindOptions } from './items.js';

/** The first release that redirects moved projects by default. */
export const PROJECT_REDIRECTS_SINCE = [16, 7] as const;
/** The flag that gates the redirects before that, and the first release that has it. */
export const PROJECT_REDIRECTS_FLAG = 'api_redirect_moved_projects';
const FLAG_SINCE = [16, 4] as const;

const statements = perDatabase((db: Db) => ({
  byPath: db.prepare('SELECT project_id FROM redirect_routes WHERE path = ?'),
  flag: db.prepare<[string], { value: string }>('SELECT value FROM features WHERE name = ?'),
}));

/** Whether `version` redirects former paths, given the instance's feature flags in `db`. */
function redirects(db: Db, version: string): boolean {
  const release = parseRelease(version);
  if (atLeast(release, PROJECT_REDIRECTS_SINCE)) return true;
  if (!atLeast(release, FLAG_SINCE)) return false;
  const row = statements(db).flag.get(PROJECT_REDIRECTS_FLAG);
  return row !== undefined && row.value.trim() === 'true';
}

/**
 * The project a former full path leads to on this release, or null. Only a path (an id never
 * redirects), and only where the release redirects.
 */
export function formerPathTarget(ctx: RequestContext, ref: string): number | null {
  if (!ref.includes('/')) return null;
  if (!redirects(ctx.state.db, ctx.state.config.version)) return null;
  const row = statements(ctx.state.db).byPath.get(ref) as { project_id: number } | undefined;
  return row?.project_id ?? null;
}

/**
 * GitLab's answer to a request that named project `id` by a former path: 405 for anything but a
 * GET, else 301 to the same route and query at the project's id. Call it only once the project is
 * found and visible to the caller (GitLab checks access before it redirects).
 */
export function movedProject(ctx: RequestContext, id: number): SandboxHttpError {
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD')
    return new SandboxHttpError(405, { message: 'Non GET methods are not allowed for moved projects' });
  // The raw path: the former path is one URL-encoded segment after /api/v4/projects/.
  const raw = ctx.url.pathname;
  const head = '/api/v4/projects/';
  const start = raw.indexOf(head);
  const after = start < 0 ? '' : raw.slice(start + head.length);
  const slash = after.indexOf('/');
  const rest = slash < 0 ? '' : after.slice(slash);
  const location = `${ctx.origin}${head}${id}${rest}${ctx.url.search}`;
  return new SandboxHttpError(301, { message: '301 Moved Permanently' }, { location });
}

/**
 * The project a route's `:id` names, as `find_project!` finds it: by id or its own full path, else
 * (on a release that redirects) through a former path, which answers 301 or 405 instead. Missing:
 * 404 `Project Not Found`. `visible` is the route's access check, made before any redirect.
 */
export function requireProject(
  ctx: RequestContext,
  options: FindOptions = {},
  visible: (row: ItemRow) => boolean = () => true,
): ItemRow {
  const ref = ctx.params.id ?? '';
  const row = findItem(ctx.state.db, 'project', ref, options);
  if (row) return row;
  const target = formerPathTarget(ctx, ref);
  const moved = target === null ? undefined : findItem(ctx.state.db, 'project', String(target), options);
  if (moved && visible(moved)) throw movedProject(ctx, moved.id);
  return requireItem(ctx.state.db, 'project', ref, options);
}
