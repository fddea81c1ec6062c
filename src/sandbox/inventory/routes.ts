/**
 * GET /projects, /projects/:id, /snippets/all, /snippets/:id, /groups, /groups/:id: listings with
 * offset and keyset pagination (reference §8) and the `repository_storage` filter (reference §9).
 *
 * Who sees what: anonymous callers see public items; authenticated users public and internal ones
 * plus their own; effective administrators everything. The `repository_storage` filter applies
 * only for administrators and is silently dropped for anyone else, as GitLab's
 * `verify_project_filters!` does (for groups it also needs premium or ultimate, being an EE feature).
 *
 * Sandbox choices where GitLab differs or the reference is silent: keyset pagination
 * (`order_by=id`) works on all three lists; only /projects has the 50,000 offset limit.
 * Lists are served from the `items_storage (kind, storage, id)` index or the primary key
 * `(kind, id)`, so keyset pages stay cheap at a million items.
 */
import type Database from 'better-sqlite3';
import type { Caller, RequestContext, Reply } from '../http/context.js';
import type { Db, ItemKind } from '../db.js';
import type { EntityRow } from './entities.js';
import { ENTITY_COLUMNS, entityRowOf, groupEntity, projectEntity, projectJson, snippetEntity, sshHostOf } from './entities.js';
import type { ItemRow } from './items.js';
import { KIND_LABEL, createAuthorLookup, findItem } from './items.js';
import { invalidParam, notFound } from '../http/errors.js';
import { isEffectiveAdmin } from '../auth/authenticate.js';
import {
  DEFAULT_OFFSET_LIMIT, countCapped, isKeyset, keysetHeaders, keysetWhere, offsetHeaders, parseKeyset, parseOffset, readOrderBy, readSort,
} from '../http/pagination.js';
import type { Router } from '../http/router.js';

const VISIBILITIES = ['public', 'internal', 'private'];

interface ListSpec {
  kind: ItemKind;
  /** GitLab class name in the offset-limit message. */
  entity: string;
  defaultOrder: string;
  defaultSort: 'asc' | 'desc';
  /** Offset limit (0: none). */
  maxOffset: number;
  /** Whether the caller's `repository_storage` filter applies. */
  storageFilter(ctx: RequestContext, admin: boolean): boolean;
  /** The page's entities, or their JSON text where a direct serializer exists (the hot /projects list). */
  render(ctx: RequestContext, rows: EntityRow[], admin: boolean): unknown[] | string;
}

/** Adds the inventory routes: project, snippet and group lists and single items. */
export function register(router: Router): void {
  router.get('/api/v4/projects', { level: 'public' }, (ctx) => list(ctx, PROJECTS));
  router.get('/api/v4/projects/:id', { level: 'public' }, (ctx) => show(ctx, 'project'));
  router.get('/api/v4/snippets/all', { level: 'user' }, (ctx) => list(ctx, SNIPPETS));
  router.get('/api/v4/snippets/:id', { level: 'user' }, (ctx) => show(ctx, 'snippet'));
  router.get('/api/v4/groups', { level: 'public' }, (ctx) => list(ctx, GROUPS));
  router.get('/api/v4/groups/:id', { level: 'public' }, (ctx) => show(ctx, 'group'));
}

/** Whether the request acts as an effective administrator. */
export function callerIsAdmin(ctx: RequestContext): boolean {
  return ctx.caller !== null && isEffectiveAdmin(ctx, ctx.caller);
}

const PROJECTS: ListSpec = {
  kind: 'project',
  entity: 'Project',
  defaultOrder: 'created_at',
  defaultSort: 'desc',
  maxOffset: DEFAULT_OFFSET_LIMIT,
  storageFilter: (_ctx, admin) => admin,
  render: (ctx, rows, admin) => {
    const simple = boolParam(ctx, 'simple');
    const statistics = admin && boolParam(ctx, 'statistics');
    const opts = { origin: ctx.origin, admin, sshHost: sshHostOf(ctx.origin) };
    const parts = rows.map((r) => {
      const json = projectJson(r, opts, simple);
      return statistics ? `${json.slice(0, -1)},"statistics":${JSON.stringify(statisticsOf(r))}}` : json;
    });
    return `[${parts.join(',')}]`;
  },
};

const SNIPPETS: ListSpec = {
  kind: 'snippet',
  entity: 'Snippet',
  defaultOrder: 'id',
  defaultSort: 'desc',
  maxOffset: 0,
  storageFilter: (_ctx, admin) => admin,
  render: (ctx, rows, admin) => {
    const authors = createAuthorLookup(ctx.state.db);
    return rows.map((r) => snippetEntity(r, { origin: ctx.origin, admin }, authors(r.owner_id)));
  },
};

const GROUPS: ListSpec = {
  kind: 'group',
  entity: 'Group',
  defaultOrder: 'name',
  defaultSort: 'asc',
  maxOffset: 0,
  storageFilter: (ctx, admin) => admin && ctx.state.config.tier !== 'free',
  render: (ctx, rows, admin) => rows.map((r) => groupEntity(r, { origin: ctx.origin, admin })),
};

function boolParam(ctx: RequestContext, name: string): boolean {
  const v = ctx.input[name];
  if (v === undefined || v === '') return false;
  if (v === true || v === 'true' || v === '1') return true;
  if (v === false || v === 'false' || v === '0') return false;
  throw invalidParam(`${name} is invalid`);
}

function statisticsOf(r: EntityRow): Record<string, number> {
  const bytes = Math.round(r.size_mb * 1024 * 1024);
  return { commit_count: r.commit_count, storage_size: bytes, repository_size: bytes, wiki_size: 0, lfs_objects_size: 0, job_artifacts_size: 0, packages_size: 0, snippets_size: 0, uploads_size: 0 };
}

/** Statements are prepared once per database and SQL text: listing is the hot path of the benchmark. */
type Statement = Database.Statement<unknown[], unknown>;
const statementCache = new WeakMap<Db, Map<string, Statement>>();
function prepared(db: Db, sql: string, raw = false): Statement {
  let cache = statementCache.get(db);
  if (!cache) statementCache.set(db, (cache = new Map()));
  const key = raw ? `raw:${sql}` : sql;
  let stmt = cache.get(key);
  if (!stmt) {
    stmt = db.prepare<unknown[], unknown>(sql);
    if (raw) stmt.raw(true);
    if (cache.size > 500) cache.clear();
    cache.set(key, stmt);
  }
  return stmt;
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
    case 'name': return 'name';
    case 'path': return 'path';
    case 'storage_size': case 'repository_size': return 'size_mb';
    // Every item's timestamps follow its id (generated in id order), so id gives the same order cheaply.
    default: return 'id';
  }
}

function list(ctx: RequestContext, spec: ListSpec): Reply {
  const admin = callerIsAdmin(ctx);
  const where: string[] = ['kind = ?'];
  const params: unknown[] = [spec.kind];
  const storage = ctx.input.repository_storage;
  // Without statistics SQLite prefers the primary key and filters storage row by row, which scans
  // the whole kind for a rare storage; the storage index answers in index order instead.
  let from = 'items';
  if (storage !== undefined && storage !== '' && spec.storageFilter(ctx, admin)) {
    if (typeof storage !== 'string') throw invalidParam('repository_storage is invalid');
    where.push('storage = ?');
    params.push(storage);
    from = 'items INDEXED BY items_storage';
  }
  const visibility = ctx.input.visibility;
  if (visibility !== undefined && visibility !== '') {
    if (typeof visibility !== 'string' || !VISIBILITIES.includes(visibility)) throw invalidParam('visibility does not have a valid value');
    where.push('visibility = ?');
    params.push(visibility);
  }
  const search = ctx.input.search;
  if (search !== undefined && search !== '') {
    if (typeof search !== 'string') throw invalidParam('search is invalid');
    const like = `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    where.push("(name LIKE ? ESCAPE '\\' OR path LIKE ? ESCAPE '\\')");
    params.push(like, like);
  }
  if (ctx.caller && boolParam(ctx, 'owned')) {
    where.push('owner_id = ?');
    params.push(ctx.caller.user.id);
  }
  const vis = visibleTo(ctx.caller, admin);
  if (vis.sql) {
    where.push(vis.sql);
    params.push(...vis.params);
  }
  const db = ctx.state.db;

  if (isKeyset(ctx)) {
    const page = parseKeyset(ctx);
    const bound = keysetWhere(page);
    const all = bound.sql ? [...where, bound.sql] : where;
    const sql = `SELECT ${ENTITY_COLUMNS} FROM ${from} WHERE ${all.join(' AND ')} ORDER BY id ${page.sort === 'asc' ? 'ASC' : 'DESC'} LIMIT ?`;
    const rows = entityRows(db, sql, [...params, ...bound.params, page.limit]);
    const pageRows = rows.slice(0, page.perPage);
    return pageReply(ctx, spec, pageRows, admin, keysetHeaders(ctx, page, pageRows.at(-1)?.id, rows.length > page.perPage));
  }

  const orderBy = readOrderBy(ctx, spec.defaultOrder);
  const dir = readSort(ctx, spec.defaultSort) === 'asc' ? 'ASC' : 'DESC';
  const page = parseOffset(ctx, spec.maxOffset > 0 ? { maxOffset: spec.maxOffset, entity: spec.entity } : undefined);
  const col = orderColumn(orderBy);
  const order = col === 'id' ? `id ${dir}` : `${col} ${dir}, id ${dir}`;
  const whereSql = where.join(' AND ');
  const rows = entityRows(db, `SELECT ${ENTITY_COLUMNS} FROM ${from} WHERE ${whereSql} ORDER BY ${order} LIMIT ? OFFSET ?`, [...params, page.limit, page.offset]);
  const total = countCapped(db, `${from} WHERE ${whereSql}`, params);
  const pageRows = rows.slice(0, page.perPage);
  return pageReply(ctx, spec, pageRows, admin, offsetHeaders(ctx, { ...page, total, hasNext: rows.length > page.perPage }));
}

/** A list page: JSON text goes out as it is (with the JSON content type), entities are serialized by the server. */
function pageReply(ctx: RequestContext, spec: ListSpec, rows: EntityRow[], admin: boolean, headers: Record<string, string>): Reply {
  const rendered = spec.render(ctx, rows, admin);
  if (typeof rendered === 'string') return { text: rendered, headers: { ...headers, 'content-type': 'application/json' } };
  return { body: rendered, headers };
}

function canSee(caller: Caller | null, admin: boolean, row: ItemRow): boolean {
  if (admin || row.visibility === 'public') return true;
  if (!caller) return false;
  return row.visibility === 'internal' || row.owner_id === caller.user.id;
}

function show(ctx: RequestContext, kind: ItemKind): Reply {
  const admin = callerIsAdmin(ctx);
  const row = findItem(ctx.state.db, kind, ctx.params.id ?? '');
  // Invisible items are indistinguishable from missing ones, as in GitLab.
  if (!row || !canSee(ctx.caller, admin, row)) throw notFound(KIND_LABEL[kind]);
  const opts = { origin: ctx.origin, admin };
  if (kind === 'project') {
    const e = projectEntity(row, opts);
    if (admin && boolParam(ctx, 'statistics')) e.statistics = statisticsOf(row);
    return { body: e };
  }
  if (kind === 'snippet') return { body: snippetEntity(row, opts, createAuthorLookup(ctx.state.db)(row.owner_id)) };
  return { body: { ...groupEntity(row, opts), projects: [], shared_projects: [] } };
}
