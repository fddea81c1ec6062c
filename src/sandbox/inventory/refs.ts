/**
 * A project's refs as the Branches and Tags APIs show them, enough for a client to fingerprint a
 * repository before and after a move (shardmove's `verify.content`):
 *
 * - `GET /projects/:id/repository/branches`: offset pages sorted by name. GitLab pages the first page
 *   through Gitaly (`Gitlab::Pagination::GitalyKeysetPager`) and sets `X-Total` to the repository's
 *   `branch_count`, read from Gitaly at request time, so it counts the refs on the storage the project
 *   lives on now.
 * - `GET /projects/:id/repository/branches/:branch`: one branch with its `commit`; 404 `Branch Not Found`.
 * - `GET /projects/:id/repository/tags`: offset pages of the tags (`Kaminari.paginate_array`), newest
 *   first by default, `X-Total` their count.
 *
 * What the sandbox keeps: `branch_count` and `tag_count` per project (seeded `branches:`/`tags:`, else
 * derived from the id), the default branch `main` (none in an empty repository), and its HEAD: the last
 * commit written through the API (the `commits` table), else a sha derived from the project and its
 * commit count, so a move that copies the repository keeps it and a lost commit changes it.
 *
 * The seeded fault `content_drift: true` on a project: its next move that switches the project to the
 * destination loses the newest commit and the newest tag there, although GitLab's checksum said the
 * copy was good. It is what a content check after the move exists to catch.
 *
 * Access as `authorize! :download_code`: a project the caller cannot see is 404, one whose code they
 * may not read 403. Hidden and pending-delete projects are not found (GitLab's default scope).
 */
import type { ItemRow } from '../db.js';
import type { RequestContext, Reply } from '../http/context.js';
import { forbidden, notFound } from '../http/errors.js';
import { offsetHeaders, parseOffset } from '../http/pagination.js';
import type { Router } from '../http/router.js';
import { canReadCode, readCodeFacts } from './code-access.js';
import { KIND_LABEL } from './items.js';
import { requireProject } from './redirects.js';
import { callerIsAdmin, canSee } from './routes.js';
import type { Refs } from './refs-store.js';
import { derivedSha, refsOf } from './refs-store.js';

export function register(router: Router): void {
  router.get('/api/v4/projects/:id/repository/branches', { level: 'public' }, listBranches);
  router.get('/api/v4/projects/:id/repository/branches/:branch', { level: 'public' }, showBranch);
  router.get('/api/v4/projects/:id/repository/tags', { level: 'public' }, listTags);
}

/** The project `:id` names, checked as `authorize! :download_code` checks it. */
function readableProject(ctx: RequestContext): ItemRow {
  const admin = callerIsAdmin(ctx);
  const visible = (r: ItemRow) => canSee(ctx.caller, admin, r);
  const row = requireProject(ctx, { scope: 'default' }, visible);
  if (!visible(row)) throw notFound(KIND_LABEL.project);
  const db = ctx.state.db;
  const reader = { userId: ctx.caller?.user.id ?? null, admin };
  if (!canReadCode(db, readCodeFacts(db, [row.id]), row.id, reader)) throw forbidden();
  return row;
}

function branchNames(refs: Refs): string[] {
  if (refs.defaultBranch === null) return [];
  const others = Array.from({ length: refs.branches - 1 }, (_, i) => `feature-${i + 1}`);
  return [refs.defaultBranch, ...others].sort();
}

function commitOf(ctx: RequestContext, project: ItemRow, sha: string): Record<string, unknown> {
  const full = project.namespace ? `${project.namespace}/${project.path}` : project.path;
  return {
    id: sha,
    short_id: sha.slice(0, 8),
    created_at: project.updated_at,
    parent_ids: [],
    title: 'Update README.md',
    message: 'Update README.md',
    author_name: 'Administrator',
    author_email: 'admin@example.com',
    authored_date: project.updated_at,
    committer_name: 'Administrator',
    committer_email: 'admin@example.com',
    committed_date: project.updated_at,
    trailers: {},
    extended_trailers: {},
    web_url: `${ctx.origin}/${full}/-/commit/${sha}`,
  };
}

function branchEntity(ctx: RequestContext, project: ItemRow, refs: Refs, name: string): Record<string, unknown> {
  const isDefault = name === refs.defaultBranch;
  const sha = isDefault ? (refs.head as string) : derivedSha(`project:${project.id}:branch:${name}`);
  const full = project.namespace ? `${project.namespace}/${project.path}` : project.path;
  return {
    name,
    commit: commitOf(ctx, project, sha),
    merged: false,
    protected: isDefault,
    developers_can_push: false,
    developers_can_merge: false,
    can_push: true,
    default: isDefault,
    web_url: `${ctx.origin}/${full}/-/tree/${name}`,
  };
}

function page<T>(ctx: RequestContext, all: T[], render: (t: T) => Record<string, unknown>): Reply {
  const p = parseOffset(ctx);
  const rows = all.slice(p.offset, p.offset + p.perPage);
  return {
    body: rows.map(render),
    headers: offsetHeaders(ctx, {
      page: p.page,
      perPage: p.perPage,
      total: all.length,
      hasNext: p.offset + p.perPage < all.length,
    }),
  };
}

function listBranches(ctx: RequestContext): Reply {
  const project = readableProject(ctx);
  const refs = refsOf(ctx.state.db, project.id);
  return page(ctx, branchNames(refs), (name) => branchEntity(ctx, project, refs, name));
}

function showBranch(ctx: RequestContext): Reply {
  const project = readableProject(ctx);
  const refs = refsOf(ctx.state.db, project.id);
  const name = ctx.params.branch ?? '';
  if (!branchNames(refs).includes(name)) throw notFound('Branch');
  return { body: branchEntity(ctx, project, refs, name) };
}

function listTags(ctx: RequestContext): Reply {
  const project = readableProject(ctx);
  const refs = refsOf(ctx.state.db, project.id);
  // Newest first (GitLab's default `updated_desc`): v<n>.0.0 down to v1.0.0.
  const names = Array.from({ length: refs.tags }, (_, i) => `v${refs.tags - i}.0.0`);
  return page(ctx, names, (name) => {
    const sha = derivedSha(`project:${project.id}:tag:${name}`);
    return {
      name,
      message: '',
      target: sha,
      commit: commitOf(ctx, project, sha),
      release: null,
      protected: false,
      created_at: null,
    };
  });
}
