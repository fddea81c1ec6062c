/**
 * GET /projects, /projects/:id, /snippets, /snippets/public, /snippets/all, /snippets/:id, /groups,
 * /groups/:id: listings with the parameters and pagination GitLab declares for each
 * (docs/gitlab-behaviour.md §1, §2).
 *
 * Who sees what: anonymous callers see public items; authenticated users public and internal ones
 * plus their own; effective administrators everything. The `repository_storage` filter applies
 * only for administrators and is silently dropped for anyone else, as GitLab's
 * `verify_project_filters!` does.
 *
 * Per list, as GitLab:
 * - /projects: offset or keyset pagination, `order_by`/`sort`, `visibility`, `search`, `owned`.
 *   Keyset is GitLab's `Keyset::Pager`: `rel="next"` after every non-empty page, so the end is an
 *   empty page. Offset pages past 50,000 records answer 405 only before 15.2 (PROJECTS_UNCAPPED_SINCE).
 *   Hidden (EE) and pending-delete projects are left out unless an administrator
 *   passes `include_hidden` (EE) or `include_pending_delete`. A page holding an `unlistable` project
 *   answers 500, as GitLab does when one entity of a page fails to render.
 * - /snippets/all (16.3+): only `created_after`, `created_before`, `page`, `per_page` and (EE)
 *   `repository_storage`; always id descending, offset only. Anything else is ignored.
 * - /snippets (the caller's own, administrators included) and /snippets/public (public personal
 *   snippets): `created_after`, `created_before` and the pagination parameters only (no storage
 *   filter: `optional_list_params_ee` is declared on /snippets/all alone); id descending, offset.
 * - /groups: `order_by`/`sort`, `visibility`, `search`, `owned`; the storage filter is EE and
 *   16.3+ (it selects by wiki repository, and only Premium/Ultimate groups have wikis; before 16.3
 *   it is ignored: every group is listed). Groups pending
 *   deletion are listed. A logged-in caller always gets offset pages (`present_groups` paginates
 *   by offset; `pagination=keyset` is ignored). Anonymous callers may ask for keyset, here by id
 *   (GitLab's is a cursor over `name asc`: a known difference, see docs/gitlab-behaviour.md §1.4).
 *
 * Lists are served from the `items_storage (kind, storage, id)` index or the primary key
 * `(kind, id)`, so keyset pages stay cheap at a million items.
 */
import type { Caller, RequestContext, Reply } from '../http/context.js';
import { type Db, type ItemKind, type ItemRow, perDatabase } from '../db.js';
import type { EntityRow } from './entities.js';
import {
  ENTITY_COLUMNS,
  entityRowOf,
  groupEntity,
  projectEntity,
  projectJson,
  snippetEntity,
  sshHostOf,
} from './entities.js';
import { KIND_LABEL, createAuthorLookup, findItem, hasGroupWikiRepositories, licensesGroupWikis } from './items.js';
import { requireProject } from './redirects.js';
import {
  PUBLIC_PERSONAL_SNIPPETS_SQL,
  canReadSnippet,
  ownSnippetsSql,
  readableSnippetsSql,
} from './snippet-visibility.js';
import { SandboxHttpError, forbidden, invalidParam, notFound } from '../http/errors.js';
import { isEffectiveAdmin } from '../auth/authenticate.js';
import { atLeast, parseRelease } from '../auth/token-types.js';
import {
  DEFAULT_OFFSET_LIMIT,
  countCapped,
  isKeyset,
  keysetHeaders,
  keysetWhere,
  offsetHeaders,
  parseIdBounds,
  parseKeyset,
  parseOffset,
  readOrderBy,
  readSort,
} from '../http/pagination.js';
import type { Router } from '../http/router.js';
import { register as registerSandboxRoutes } from './sandbox-routes.js';
import { register as registerStorageRoute } from './storage-route.js';
import { register as registerNamespaceRoutes } from './namespaces.js';
import { prepared } from './prepared.js';
import { addForkFields, hasForks, readForkFacts, withForkFieldsJson } from './forks.js';
import { canReadCode, readCodeFacts, withoutCodeFields } from './code-access.js';

const VISIBILITIES = ['public', 'internal', 'private'];

/** The WHERE clause of a list being built, and the table (or index) it reads. */
interface ListQuery {
  where: string[];
  params: unknown[];
  from: string;
}

interface ListSpec {
  kind: ItemKind;
  /** GitLab class name in the offset-limit message. */
  entity: string;
  /**
   * The declared ordering, or null where GitLab declares none (/snippets/all: always id
   * descending, `order_by`, `sort` and `pagination=keyset` ignored).
   */
  order: { by: string; sort: 'asc' | 'desc' } | null;
  /**
   * `pagination=keyset` as GitLab offers it here: `pager` (/projects, `Keyset::Pager`: `rel="next"`
   * after every non-empty page), `anonymous` (/groups: only callers without credentials get the
   * keyset strategy; for anyone else the parameter is ignored) or `none` (ignored).
   */
  keyset: 'pager' | 'anonymous' | 'none';
  /** The largest `page * per_page` offset pagination serves on this instance (0: no limit). */
  offsetLimit(ctx: RequestContext): number;
  /** Adds the list's declared filters to the query (undeclared parameters are ignored). */
  filter(ctx: RequestContext, admin: boolean, query: ListQuery): void;
  /** Whether an administrator sees `repository_storage` on this kind in this edition and tier. */
  showsStorage(ctx: RequestContext): boolean;
  /** The page's entities, or their JSON text where a direct serializer exists (the hot /projects list). */
  render(ctx: RequestContext, rows: EntityRow[], storageShown: boolean): unknown[] | string;
  /** Runs before anything else (the /snippets/all version gate). */
  guard?(ctx: RequestContext): void;
  /** What a caller who is not an administrator may list, where the kind has its own rule (snippets). */
  visible?(caller: Caller): { sql: string; params: unknown[] };
  /**
   * What the list holds for every caller, administrators included, where the route names its own
   * set (/snippets: the caller's own; /snippets/public): it replaces `visible` and the admin's all.
   */
  scope?(caller: Caller, admin: boolean): { sql: string; params: unknown[] };
}

/** Adds the inventory routes: project, snippet and group lists and single items, and the sandbox's own routes. */
export function register(router: Router): void {
  router.get('/api/v4/projects', { level: 'public' }, (ctx) => list(ctx, PROJECTS));
  router.get('/api/v4/projects/:id', { level: 'public' }, (ctx) => show(ctx, 'project'));
  router.get('/api/v4/projects/:id/forks', { level: 'public' }, listForks);
  router.get('/api/v4/projects/:id/statistics', { level: 'user' }, dailyStatistics);
  registerStorageRoute(router);
  router.get('/api/v4/snippets', { level: 'user' }, (ctx) => list(ctx, OWN_SNIPPETS));
  // Before /snippets/:id, whose Integer `id` would refuse `public` (Grape matches routes in order).
  router.get('/api/v4/snippets/public', { level: 'user' }, (ctx) => list(ctx, PUBLIC_SNIPPETS));
  router.get('/api/v4/snippets/all', { level: 'user' }, (ctx) => list(ctx, SNIPPETS));
  router.get('/api/v4/snippets/:id', { level: 'user' }, (ctx) => show(ctx, 'snippet'));
  router.get('/api/v4/groups', { level: 'public' }, (ctx) => list(ctx, GROUPS));
  router.get('/api/v4/groups/:id', { level: 'public' }, (ctx) => show(ctx, 'group'));
  registerNamespaceRoutes(router);
  registerSandboxRoutes(router);
}

/** Whether the request acts as an effective administrator. */
export function callerIsAdmin(ctx: RequestContext): boolean {
  return ctx.caller !== null && isEffectiveAdmin(ctx, ctx.caller);
}

const isEnterprise = (ctx: RequestContext): boolean => ctx.state.config.edition !== 'ce';

/** GitLab's answer when one entity of a page raises while rendering (Grape's `rescue_from :all`). */
const UNRENDERABLE = (): SandboxHttpError => new SandboxHttpError(500, { message: '500 Internal Server Error' });

/**
 * The first release whose `offset_paginator` no longer caps `/projects`. 13.0 capped offset pages
 * of every keyset-capable type at the plan's `offset_pagination_limit` (50,000). The newest
 * source also requires `CursorBasedKeyset.enforced_for_type?`, whose ENFORCED_TYPES (Group, later
 * User, Ci::Build behind a flag) never list Project. That check arrived with optional enforcement,
 * first needed when audit events got keyset pagination in 15.2; the exact release is inferred
 * (docs/gitlab-behaviour.md §2).
 */
const PROJECTS_UNCAPPED_SINCE = [15, 2] as const;

const PROJECTS: ListSpec = {
  kind: 'project',
  entity: 'Project',
  order: { by: 'created_at', sort: 'desc' },
  keyset: 'pager',
  offsetLimit: (ctx) =>
    atLeast(parseRelease(ctx.state.config.version), PROJECTS_UNCAPPED_SINCE) ? 0 : DEFAULT_OFFSET_LIMIT,
  filter: (ctx, admin, q) => {
    if (admin) storageFilter(ctx, q);
    commonFilters(ctx, q);
    // ProjectsFinder#by_ids: plain filters, with offset pagination too (keyset applies them itself).
    if (!isKeyset(ctx)) {
      const bound = keysetWhere(parseIdBounds(ctx));
      if (bound.sql) {
        q.where.push(bound.sql);
        q.params.push(...bound.params);
      }
    }
    // Grape validates both booleans for everyone; verify_project_filters! then drops them for
    // non-administrators. include_hidden is EE's (`EE::ProjectsFinder#by_hidden`), and its API
    // helper checks the administrator only, no licence (ee/lib/ee/api/projects.rb).
    const pending = boolParam(ctx, 'include_pending_delete');
    const hidden = isEnterprise(ctx) && boolParam(ctx, 'include_hidden');
    if (isEnterprise(ctx) && !(admin && hidden)) q.where.push('hidden = 0');
    if (!(admin && pending)) q.where.push('pending_delete = 0');
  },
  showsStorage: () => true,
  render: (ctx, rows, storageShown) => {
    const unlistable = ctx.state.config.unlistable;
    if (unlistable && unlistable.length > 0 && rows.some((r) => unlistable.includes(r.id))) throw UNRENDERABLE();
    const simple = boolParam(ctx, 'simple');
    const statistics = storageShown && boolParam(ctx, 'statistics');
    const opts = { origin: ctx.origin, admin: storageShown, sshHost: sshHostOf(ctx.origin) };
    // Fork networks (inventory/forks.ts): ProjectWithAccess, for a signed-in caller without `simple`, has forked_from_project.
    const ids = rows.map((r) => r.id);
    const forks = hasForks(ctx.state.db) ? readForkFacts(ctx.state.db, ids, ctx.state.config.version) : null;
    const code = readCodeFacts(ctx.state.db, ids);
    const viewer = { userId: ctx.caller?.user.id ?? null, admin: callerIsAdmin(ctx) };
    const parts = rows.map((r) => {
      let json = projectJson(r, opts, simple);
      if (forks) json = withForkFieldsJson(json, r.id, forks, viewer, ctx.origin, ctx.caller !== null && !simple);
      // Without read_code the entity has no default_branch, readme_url or forks_count (rare: re-rendered).
      if (!canReadCode(ctx.state.db, code, r.id, viewer))
        json = JSON.stringify(withoutCodeFields(JSON.parse(json) as Record<string, unknown>));
      return statistics ? `${json.slice(0, -1)},"statistics":${JSON.stringify(statisticsOf(ctx, r))}}` : json;
    });
    return `[${parts.join(',')}]`;
  },
};

/** The release that added `GET /snippets/all` (GitLab issue 419640). */
const SNIPPETS_ALL_SINCE = [16, 3] as const;

/**
 * What every snippet list shares: `Entities::Snippet` (with EE's `repository_storage` for
 * administrators), no declared order, `pagination=keyset` ignored, no offset limit.
 */
const SNIPPET_LIST: Omit<ListSpec, 'filter' | 'guard' | 'visible' | 'scope'> = {
  kind: 'snippet',
  entity: 'Snippet',
  order: null,
  keyset: 'none',
  offsetLimit: () => 0,
  showsStorage: isEnterprise,
  render: (ctx, rows, storageShown) => {
    const authors = createAuthorLookup(ctx.state.db);
    return rows.map((r) => snippetEntity(r, { origin: ctx.origin, admin: storageShown }, authors(r.owner_id)));
  },
};

const SNIPPETS: ListSpec = {
  ...SNIPPET_LIST,
  // Before 16.3 `all` reaches `GET /snippets/:id`, whose Integer `id` fails validation.
  guard: (ctx) => {
    if (!atLeast(parseRelease(ctx.state.config.version), SNIPPETS_ALL_SINCE)) throw invalidParam('id is invalid');
  },
  filter: (ctx, admin, q) => {
    // EE only (`EE::SnippetsFinder#by_repository_storage`); CE does not declare the parameter.
    if (admin && isEnterprise(ctx)) storageFilter(ctx, q);
    createdAtFilter(ctx, q);
  },
  // Without `read_all_resources` the finder's union applies: project snippets follow their
  // project's snippets feature and membership (inventory/snippet-visibility.ts).
  visible: (caller) => readableSnippetsSql(caller.user.id),
};

/**
 * `GET /snippets`: the caller's own snippets (`SnippetsFinder` with `author: current_user`, no
 * `all_available`), so an administrator gets their own too, not every snippet. `Entities::Snippet`,
 * with EE's `repository_storage` for administrators. The route is as old as the API (8.15);
 * `created_after`/`created_before` came with issue 336380 (2021), before any release modelled here.
 */
const OWN_SNIPPETS: ListSpec = {
  ...SNIPPET_LIST,
  filter: (ctx, _admin, q) => createdAtFilter(ctx, q),
  scope: (caller, admin) => ownSnippetsSql(caller.user.id, admin),
};

/**
 * `GET /snippets/public`: public personal snippets, found with no user (`find_snippets(user: nil,
 * params: { only_personal: true })`), whoever asks; `authenticate!` still refuses anonymous
 * callers. `Entities::PersonalSnippet` is `Snippet` (EE's `repository_storage` included).
 */
const PUBLIC_SNIPPETS: ListSpec = {
  ...OWN_SNIPPETS,
  scope: () => ({ sql: PUBLIC_PERSONAL_SNIPPETS_SQL, params: [] }),
};

/**
 * The release that declared `GET /groups?repository_storage=` (docs: "Introduced in GitLab 16.3",
 * issue 419643). Before it the parameter is unknown and ignored, as GitLab ignores any.
 */
export const GROUP_STORAGE_FILTER_SINCE = [16, 3] as const;

const GROUPS: ListSpec = {
  kind: 'group',
  entity: 'Group',
  order: { by: 'name', sort: 'asc' },
  keyset: 'anonymous',
  // Anonymous offset pages of groups are capped too in the newest source (Group is enforced); not modelled.
  offsetLimit: () => 0,
  filter: (ctx, admin, q) => {
    // EE::GroupsFinder selects groups by their wiki repository's shard with no licence check, so an
    // administrator's filter applies on EE Free too (where the field is not shown). Before the
    // release that declared it, Grape drops the undeclared parameter: every group is listed.
    if (
      admin &&
      hasGroupWikiRepositories(ctx.state.config) &&
      atLeast(parseRelease(ctx.state.config.version), GROUP_STORAGE_FILTER_SINCE)
    )
      storageFilter(ctx, q);
    commonFilters(ctx, q);
  },
  showsStorage: (ctx) => licensesGroupWikis(ctx.state.config),
  render: (ctx, rows, storageShown) => rows.map((r) => groupEntity(r, { origin: ctx.origin, admin: storageShown })),
};

function boolParam(ctx: RequestContext, name: string): boolean {
  const v = ctx.input[name];
  if (v === undefined || v === '') return false;
  if (v === true || v === 'true' || v === '1') return true;
  if (v === false || v === 'false' || v === '0') return false;
  throw invalidParam(`${name} is invalid`);
}

/** A Grape DateTime parameter as the ISO text the `items` table stores; 400 `<name> is invalid` otherwise. */
function dateTimeParam(ctx: RequestContext, name: string): string | undefined {
  const v = ctx.input[name];
  if (v === undefined || v === null || v === '') return undefined;
  const ms = typeof v === 'string' ? Date.parse(v) : Number.NaN;
  if (Number.isNaN(ms)) throw invalidParam(`${name} is invalid`);
  return new Date(ms).toISOString();
}

/** `CreatedAtFilter`: created_at >= created_after, <= created_before (the snippet lists). */
function createdAtFilter(ctx: RequestContext, q: ListQuery): void {
  const after = dateTimeParam(ctx, 'created_after');
  const before = dateTimeParam(ctx, 'created_before');
  if (after !== undefined) {
    q.where.push('created_at >= ?');
    q.params.push(after);
  }
  if (before !== undefined) {
    q.where.push('created_at <= ?');
    q.params.push(before);
  }
}

function readStorage(ctx: RequestContext): string | undefined {
  const storage = ctx.input.repository_storage;
  if (storage === undefined || storage === '') return undefined;
  if (typeof storage !== 'string') throw invalidParam('repository_storage is invalid');
  return storage;
}

/**
 * `repository_storage = ?`. Without statistics SQLite prefers the primary key and filters storage
 * row by row, which scans the whole kind for a rare storage; the storage index answers in index
 * order instead.
 */
function storageFilter(ctx: RequestContext, q: ListQuery): void {
  const storage = readStorage(ctx);
  if (storage === undefined) return;
  q.where.push('storage = ?');
  q.params.push(storage);
  q.from = 'items INDEXED BY items_storage';
}

/** `visibility`, `search` and `owned`, as /projects and /groups declare them. */
function commonFilters(ctx: RequestContext, q: ListQuery): void {
  const visibility = ctx.input.visibility;
  if (visibility !== undefined && visibility !== '') {
    if (typeof visibility !== 'string' || !VISIBILITIES.includes(visibility))
      throw invalidParam('visibility does not have a valid value');
    q.where.push('visibility = ?');
    q.params.push(visibility);
  }
  const search = ctx.input.search;
  if (search !== undefined && search !== '') {
    if (typeof search !== 'string') throw invalidParam('search is invalid');
    const like = `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q.where.push("(name LIKE ? ESCAPE '\\' OR path LIKE ? ESCAPE '\\')");
    q.params.push(like, like);
  }
  if (ctx.caller && boolParam(ctx, 'owned')) {
    q.where.push('owner_id = ?');
    q.params.push(ctx.caller.user.id);
  }
}

/**
 * The release whose `ProjectStatistics` entity exposes `container_registry_size` (MR 143331, issue
 * 438865, merged early in February 2024: 16.9 inferred, UNSETTLED against 16.10;
 * docs/gitlab-behaviour.md §1.4). `pipeline_artifacts_size` came in 2021 (MR 72075), before any
 * release modelled here.
 */
export const CONTAINER_REGISTRY_SIZE_SINCE = [16, 9] as const;

/** A project's wiki size, for rows found by id or path (which do not carry it). */
const wikiOf = perDatabase((db) =>
  db.prepare<[number], { wiki_mb: number }>("SELECT wiki_mb FROM items WHERE kind = 'project' AND id = ?"),
);

/** GitLab's `ProjectStatistics` entity, its fields in GitLab's order. */
function statisticsOf(ctx: RequestContext, r: EntityRow): Record<string, number> {
  const bytes = Math.round(r.size_mb * 1024 * 1024);
  const wikiMb = r.wiki_mb ?? wikiOf(ctx.state.db).get(r.id)?.wiki_mb ?? 0;
  const wiki = Math.round(wikiMb * 1024 * 1024);
  const stats: Record<string, number> = {
    commit_count: r.commit_count,
    // GitLab's storage_size sums the repository, wiki and the other stores (all 0 here).
    storage_size: bytes + wiki,
    repository_size: bytes,
    wiki_size: wiki,
    lfs_objects_size: 0,
    job_artifacts_size: 0,
    pipeline_artifacts_size: 0,
    packages_size: 0,
    snippets_size: 0,
    uploads_size: 0,
  };
  if (atLeast(parseRelease(ctx.state.config.version), CONTAINER_REGISTRY_SIZE_SINCE)) stats.container_registry_size = 0;
  return stats;
}

/** Rows of a list query over ENTITY_COLUMNS. */
function entityRows(db: Db, sql: string, params: unknown[]): EntityRow[] {
  return (prepared(db, sql, true).all(...params) as unknown[][]).map(entityRowOf);
}

/** SQL that limits rows to what the caller may see (empty for administrators). */
function visibleTo(caller: Caller | null, admin: boolean): { sql: string; params: unknown[] } {
  if (admin) return { sql: '', params: [] };
  if (!caller) return { sql: "visibility = 'public'", params: [] };
  return { sql: "(visibility IN ('public', 'internal') OR owner_id = ?)", params: [caller.user.id] };
}

function orderColumn(orderBy: string): string {
  switch (orderBy) {
    case 'name':
      return 'name';
    case 'path':
      return 'path';
    case 'storage_size':
    case 'repository_size':
      return 'size_mb';
    // Every item's timestamps follow its id (generated in id order), so id gives the same order cheaply.
    default:
      return 'id';
  }
}

function list(ctx: RequestContext, spec: ListSpec): Reply {
  spec.guard?.(ctx);
  const admin = callerIsAdmin(ctx);
  const q: ListQuery = { where: ['kind = ?'], params: [spec.kind], from: 'items' };
  spec.filter(ctx, admin, q);
  const vis =
    spec.scope && ctx.caller
      ? spec.scope(ctx.caller, admin)
      : !admin && ctx.caller && spec.visible
        ? spec.visible(ctx.caller)
        : visibleTo(ctx.caller, admin);
  if (vis.sql) {
    q.where.push(vis.sql);
    q.params.push(...vis.params);
  }
  const { where, params, from } = q;
  const storageShown = admin && spec.showsStorage(ctx);
  const db = ctx.state.db;

  // The parameter is validated wherever it is declared, then used only where GitLab's strategy applies.
  if (spec.keyset !== 'none' && isKeyset(ctx) && (spec.keyset === 'pager' || ctx.caller === null)) {
    const page = parseKeyset(ctx);
    const bound = keysetWhere(page);
    const all = bound.sql ? [...where, bound.sql] : where;
    const sql = `SELECT ${ENTITY_COLUMNS} FROM ${from} WHERE ${all.join(' AND ')} ORDER BY id ${page.sort === 'asc' ? 'ASC' : 'DESC'} LIMIT ?`;
    const rows = entityRows(db, sql, [...params, ...bound.params, page.limit]);
    const pageRows = rows.slice(0, page.perPage);
    // The Pager never looks ahead: a page with a last record names the next one, even if it is empty.
    const announce = spec.keyset === 'pager' ? pageRows.length > 0 : rows.length > page.perPage;
    return pageReply(ctx, spec, pageRows, storageShown, keysetHeaders(ctx, page, pageRows.at(-1)?.id, announce));
  }

  const orderBy = spec.order ? readOrderBy(ctx, spec.order.by) : 'id';
  const dir = (spec.order ? readSort(ctx, spec.order.sort) : 'desc') === 'asc' ? 'ASC' : 'DESC';
  const maxOffset = spec.offsetLimit(ctx);
  const page = parseOffset(ctx, maxOffset > 0 ? { maxOffset, entity: spec.entity } : undefined);
  const col = orderColumn(orderBy);
  const order = col === 'id' ? `id ${dir}` : `${col} ${dir}, id ${dir}`;
  const whereSql = where.join(' AND ');
  const rows = entityRows(
    db,
    `SELECT ${ENTITY_COLUMNS} FROM ${from} WHERE ${whereSql} ORDER BY ${order} LIMIT ? OFFSET ?`,
    [...params, page.limit, page.offset],
  );
  const total = countCapped(db, `${from} WHERE ${whereSql}`, params);
  const pageRows = rows.slice(0, page.perPage);
  return pageReply(
    ctx,
    spec,
    pageRows,
    storageShown,
    offsetHeaders(ctx, { ...page, total, hasNext: rows.length > page.perPage }),
  );
}

/** A list page: JSON text goes out as it is (with the JSON content type), entities are serialized by the server. */
function pageReply(
  ctx: RequestContext,
  spec: ListSpec,
  rows: EntityRow[],
  storageShown: boolean,
  headers: Record<string, string>,
): Reply {
  const rendered = spec.render(ctx, rows, storageShown);
  if (typeof rendered === 'string')
    return { text: rendered, headers: { ...headers, 'content-type': 'application/json' } };
  return { body: rendered, headers };
}

/** Whether the caller may see the item at all (GitLab: read_project by visibility, ownership or admin). */
export function canSee(caller: Caller | null, admin: boolean, row: ItemRow): boolean {
  if (admin || row.visibility === 'public') return true;
  if (!caller) return false;
  return row.visibility === 'internal' || row.owner_id === caller.user.id;
}

const SPECS: Record<ItemKind, ListSpec> = { project: PROJECTS, snippet: SNIPPETS, group: GROUPS };

function show(ctx: RequestContext, kind: ItemKind): Reply {
  const admin = callerIsAdmin(ctx);
  const ref = ctx.params.id ?? '';
  // Grape declares the snippet `id` as an Integer.
  if (kind === 'snippet' && !/^\d{1,15}$/.test(ref)) throw invalidParam('id is invalid');
  // GitLab's default project scopes: hidden and pending-delete projects are 404, even for admins.
  const row = findItem(ctx.state.db, kind, ref, { scope: 'default' });
  // Invisible items are indistinguishable from missing ones, as in GitLab. A snippet is looked up
  // through the finder without `all_available`, so even an administrator misses the snippets of a
  // project whose snippets feature is disabled, or members-only without being a member.
  const visible =
    row !== undefined &&
    (kind === 'snippet' && ctx.caller
      ? canReadSnippet(ctx.state.db, { userId: ctx.caller.user.id, admin }, row)
      : canSee(ctx.caller, admin, row));
  if (!row && kind === 'project')
    requireProject(ctx, { scope: 'default' }, (moved) => canSee(ctx.caller, admin, moved));
  if (!row || !visible) throw notFound(KIND_LABEL[kind]);
  const opts = { origin: ctx.origin, admin: admin && SPECS[kind].showsStorage(ctx) };
  if (kind === 'project') {
    // The single project renders through the same entity that fails in a listing.
    if (ctx.state.config.unlistable?.includes(row.id)) throw UNRENDERABLE();
    const e = projectEntity(row, opts);
    const viewer = { userId: ctx.caller?.user.id ?? null, admin };
    // ProjectWithAccess, or ProjectDetails for an anonymous caller: both have forked_from_project.
    if (hasForks(ctx.state.db))
      addForkFields(e, row.id, readForkFacts(ctx.state.db, [row.id], ctx.state.config.version), viewer, ctx.origin);
    if (!canReadCode(ctx.state.db, readCodeFacts(ctx.state.db, [row.id]), row.id, viewer)) withoutCodeFields(e);
    if (admin && boolParam(ctx, 'statistics')) e.statistics = statisticsOf(ctx, row);
    return { body: e };
  }
  if (kind === 'snippet') return { body: snippetEntity(row, opts, createAuthorLookup(ctx.state.db)(row.owner_id)) };
  return { body: { ...groupEntity(row, opts), projects: [], shared_projects: [] } };
}

const isMember = (db: Db, projectId: number, userId: number): boolean =>
  db.prepare('SELECT 1 FROM project_members WHERE project_id = ? AND user_id = ?').get(projectId, userId) !== undefined;

/**
 * `GET /projects/:id/statistics` (lib/api/project_statistics.rb): the project's HTTP fetch counts
 * of the last 30 days, `ProjectDailyStatistics`. `authenticate!`, then `user_project` (404 for a
 * project the caller cannot see, hidden and pending-delete ones included) and `authorize!
 * :daily_statistics`, which needs the Reporter role: administrators, the owner and members here;
 * anyone else 403. The sandbox serves no clones, so there are no fetches.
 */
function dailyStatistics(ctx: RequestContext): Reply {
  const admin = callerIsAdmin(ctx);
  const row = findItem(ctx.state.db, 'project', ctx.params.id ?? '', { scope: 'default' });
  if (!row || !canSee(ctx.caller, admin, row)) throw notFound(KIND_LABEL.project);
  const userId = ctx.caller?.user.id;
  const reporter =
    admin || (userId !== undefined && (row.owner_id === userId || isMember(ctx.state.db, row.id, userId)));
  if (!reporter) throw forbidden();
  return { body: { fetches: { total: 0, days: [] } } };
}

/**
 * `GET /projects/:id/forks`: the project's direct forks (`ForkProjectsFinder`, over
 * `project.forks`) through `present_projects`, so the same filters, entities per caller and
 * pagination (offset, or keyset by id) as `GET /projects`. A project the caller cannot see is 404.
 */
function listForks(ctx: RequestContext): Reply {
  const admin = callerIsAdmin(ctx);
  const parent = findItem(ctx.state.db, 'project', ctx.params.id ?? '', { scope: 'default' });
  if (!parent || !canSee(ctx.caller, admin, parent)) throw notFound(KIND_LABEL.project);
  return list(ctx, {
    ...PROJECTS,
    filter: (c, isAdmin, q) => {
      PROJECTS.filter(c, isAdmin, q);
      q.where.push('forked_from = ?');
      q.params.push(parent.id);
    },
  });
}
