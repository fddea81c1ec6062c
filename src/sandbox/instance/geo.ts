/**
 * Geo, reference §5: the Geo sites REST API (admin, offset-paginated lists), the older Geo nodes
 * API beside it, and the
 * `geoRegistriesBulkUpdate` GraphQL mutation at POST /api/graphql and through the primary's proxy,
 * POST /api/v4/geo/node_proxy/:id/graphql.
 *
 * Editions: all of it is `ee/` code. On the Community Edition the REST routes are absent (Grape's
 * catch-all 404) and the mutation is not in the GraphQL schema. On EE it needs no licence: the
 * REST routes only call `authenticated_as_admin!` (`ee/lib/api/geo_sites.rb`,
 * `ee/lib/ee/api/geo.rb`), and the mutation checks `read_all_geo`, which EE's GlobalPolicy grants
 * every admin (`ee/app/policies/ee/global_policy.rb`). So EE Free answers as Premium does; an
 * instance without Geo simply has no sites. A site `:id` is a Grape Integer (400 `id is invalid`
 * otherwise) looked up with `GeoNode.find`, so an unknown one is ActiveRecord's
 * 404 `{"message":"404 Not found"}`, not the `404 GeoSite Not Found` the route's `desc` lists.
 *
 * Releases: `/geo_nodes` is the older API, mounted on every release modelled here and still in the
 * newest source (deprecated in 16.0, to be removed with API v5: `ee/lib/api/geo_nodes.rb`).
 * `/geo_sites` came in 16.0 (issue 369140): before it there is no such route. The bulk mutation
 * is in the schema from 16.4 (GEO_BULK_UPDATE_SINCE); before, it is graphql-ruby's undefined-field
 * error, as on the Community Edition. Both REST APIs read the same
 * `GeoNode` rows with the same guard; the node entity adds `clone_protocol: "http"` (kept for
 * backwards compatibility) and both entities link to their own API's paths, the node status's
 * `_links` naming `node` where the site status's name `site`.
 *
 * Sites (the seed's `geo_sites`): one process plays the primary and every secondary. A request is
 * at the site whose URL host matches its `Host` header, and at the primary otherwise (the
 * sandbox's own address). The proxy sends the body on to site `:id`; a site seeded
 * `reachable: false` gives the proxy no answer, and the proxy says so as GitLab's release does
 * (`200 {}` before GEO_PROXY_ERROR_SINCE, 500 from it). Only the proxy is affected: a request
 * sent to that site's own host is still answered (the primary is what cannot reach it).
 *
 * Registries live in the secondaries' tracking databases, so only a secondary can resync or
 * reverify them. A bulk update that reaches the primary answers exactly what GitLab's does
 * (success, `errors: []`: the mutation only enqueues a job) and marks nothing. One that reaches a
 * secondary is recorded in `geo_actions` with that `site_id` and the number of registries of the
 * class it marked (the sandbox's inventory backs the repository registries; the other classes hold
 * none). In the site's status, RESYNC_ALL makes the class's registries pending (not counted as
 * synced) for GEO_RESYNC_MS of sandbox time, REVERIFY_ALL likewise for verification, as GitLab
 * marks them pending until the sync workers catch up. The status also lists the site's own bulk
 * actions under `registry_bulk_actions` (a sandbox extension). Nothing is replicated otherwise:
 * every registry counts as synced and verified.
 *
 * GraphQL follows GraphQL's convention: problems are HTTP 200 with an `errors` array. Only this
 * one mutation is implemented; the query is read with a small parser (field, `input:` object
 * literal or variable, enum values), not a full GraphQL implementation.
 */
import type { RequestContext, Reply } from '../http/context.js';
import type { ItemKind } from '../db.js';
import { isoTime } from '../db.js';
import { notFound } from '../http/errors.js';
import { intParam } from '../http/coerce.js';
import { isEffectiveAdmin } from '../auth/authenticate.js';
import type { Router } from '../http/router.js';
import { countCapped, offsetHeaders, parseOffset } from '../http/pagination.js';
import { siteHost } from '../seed-schema.js';
import { atLeast, parseRelease } from '../auth/token-types.js';

/** Registry classes of GitLab's GeoRegistryClass enum. */
export const REGISTRY_CLASSES = [
  'PROJECT_REPOSITORY_REGISTRY',
  'PROJECT_WIKI_REPOSITORY_REGISTRY',
  'SNIPPET_REPOSITORY_REGISTRY',
  'GROUP_WIKI_REPOSITORY_REGISTRY',
  'DESIGN_MANAGEMENT_REPOSITORY_REGISTRY',
  'LFS_OBJECT_REGISTRY',
  'UPLOAD_REGISTRY',
  'PACKAGE_FILE_REGISTRY',
  'JOB_ARTIFACT_REGISTRY',
  'PIPELINE_ARTIFACT_REGISTRY',
  'MERGE_REQUEST_DIFF_REGISTRY',
  'TERRAFORM_STATE_VERSION_REGISTRY',
  'CI_SECURE_FILE_REGISTRY',
  'CONTAINER_REPOSITORY_REGISTRY',
  'DEPENDENCY_PROXY_BLOB_REGISTRY',
  'DEPENDENCY_PROXY_MANIFEST_REGISTRY',
  'PAGES_DEPLOYMENT_REGISTRY',
] as const;
export const BULK_ACTIONS = ['RESYNC_ALL', 'REVERIFY_ALL'] as const;

/** Registries backed by the sandbox's inventory: the status prefix and the item kind. */
const REPOSITORY_REGISTRIES: { cls: string; prefix: string; kind: ItemKind }[] = [
  { cls: 'PROJECT_REPOSITORY_REGISTRY', prefix: 'project_repositories', kind: 'project' },
  { cls: 'PROJECT_WIKI_REPOSITORY_REGISTRY', prefix: 'project_wiki_repositories', kind: 'project' },
  { cls: 'SNIPPET_REPOSITORY_REGISTRY', prefix: 'snippet_repositories', kind: 'snippet' },
  { cls: 'GROUP_WIKI_REPOSITORY_REGISTRY', prefix: 'group_wiki_repositories', kind: 'group' },
];

/** How long (sandbox clock) a class's registries stay pending on a site after a bulk resync or reverify. */
export const GEO_RESYNC_MS = 1000;

const NO_PERMISSION =
  "The resource that you are attempting to access does not exist or you don't have permission to perform this action";

/** Adds the Geo sites API, its status and the GraphQL bulk mutation (and its proxy). */
export function register(router: Router): void {
  const ADMIN = { level: 'admin' } as const;
  const EE = { ee: true };
  for (const api of [SITES_API, NODES_API]) {
    const base = `/api/v4/${api.resource}`;
    const options = api.since ? { ...EE, since: api.since } : EE;
    router.get(base, ADMIN, (ctx) => pagedSites(ctx, (s) => siteEntity(ctx, s, api)), options);
    // Before `:id`, whose Integer `id` would refuse `status`.
    router.get(`${base}/status`, ADMIN, (ctx) => pagedSites(ctx, (s) => siteStatus(ctx, s, api)), options);
    router.get(`${base}/:id`, ADMIN, (ctx) => ({ body: siteEntity(ctx, oneSite(ctx), api) }), options);
    router.get(`${base}/:id/status`, ADMIN, (ctx) => ({ body: siteStatus(ctx, oneSite(ctx), api) }), options);
  }
  router.post('/api/graphql', { level: 'public' }, (ctx) => graphql(ctx, currentSite(ctx)));
  router.post('/api/v4/geo/node_proxy/:id/graphql', ADMIN, (ctx) => nodeProxy(ctx, oneSite(ctx)), EE);
}

/** One of the two REST APIs over Geo sites: its path, the release that mounted it, its entities' differences. */
interface GeoApi {
  resource: 'geo_sites' | 'geo_nodes';
  since: readonly [number, number] | null;
  /** The name of the status entity's link to its site (`site`, or `node` in the Geo nodes API). */
  statusLink: 'site' | 'node';
  /** The node entity's `clone_protocol` ("Retained for backwards compatibility. Remove in API v5"). */
  cloneProtocol: boolean;
}

/**
 * The release whose GraphQL schema has `geoRegistriesBulkUpdate`: `ee/app/graphql/ee/types/mutation_type.rb`
 * mounts it with `alpha: { milestone: '16.4' }` (MR 123758), beside `geoRegistriesUpdate` (one
 * registry, `milestone: '16.1'`, MR 114673). Before 16.1 no Geo registry mutation exists at all,
 * and no REST route resyncs repository registries (`ee/lib/api/geo_nodes.rb` has none).
 */
export const GEO_BULK_UPDATE_SINCE = [16, 4] as const;

/** The release that added `/geo_sites` (issue 369140; its docs: "Introduced in GitLab 16.0"). */
export const GEO_SITES_API_SINCE = [16, 0] as const;

const SITES_API: GeoApi = {
  resource: 'geo_sites',
  since: GEO_SITES_API_SINCE,
  statusLink: 'site',
  cloneProtocol: false,
};
const NODES_API: GeoApi = { resource: 'geo_nodes', since: null, statusLink: 'node', cloneProtocol: true };

/**
 * The first release whose node proxy answers 500 when the forward fails. `Geo::RequestService`
 * returns false when the request to the site fails (no answer, a non-2xx, a socket or TLS error);
 * 16.7's `ee/lib/ee/api/geo.rb` then answers `status 200` with `execute(body) || {}`, and its spec
 * says so ("returns empty output if remote fails"). Newer source answers
 * `error!({ error: 'An error occurred while processing the GraphQL request to the Geo node' }, 500)`;
 * the oldest stored copy of it comes from a fork whose changelog reaches 17.6, so the change is
 * taken as 17.7 (inferred, UNSETTLED between 16.8 and 17.7; docs/gitlab-behaviour.md §7).
 */
export const GEO_PROXY_ERROR_SINCE = [17, 7] as const;

/** The primary's proxy to site `site`: forwards the mutation, or answers as GitLab does when the site cannot be reached. */
function nodeProxy(ctx: RequestContext, site: SiteRow): Reply {
  if (site.reachable === 1) return graphql(ctx, site);
  ctx.state.log.info({ site: site.id }, 'geo node proxy: the site cannot be reached');
  if (atLeast(parseRelease(ctx.state.config.version), GEO_PROXY_ERROR_SINCE)) {
    return { status: 500, body: { error: 'An error occurred while processing the GraphQL request to the Geo node' } };
  }
  return { status: 200, body: {} };
}

/** One row of `geo_sites`. */
export interface SiteRow {
  id: number;
  name: string;
  url: string;
  is_primary: number;
  enabled: number;
  /** 0: the primary's node proxy gets no answer from this site (seed `reachable: false`). */
  reachable: number;
}

const SITE_COLUMNS = 'id, name, url, is_primary, enabled, reachable';

function pagedSites(ctx: RequestContext, render: (s: SiteRow) => Record<string, unknown>): Reply {
  const page = parseOffset(ctx);
  const rows = ctx.state.db
    .prepare(`SELECT ${SITE_COLUMNS} FROM geo_sites ORDER BY id LIMIT ? OFFSET ?`)
    .all(page.limit, page.offset) as SiteRow[];
  const total = countCapped(ctx.state.db, 'geo_sites');
  return {
    body: rows.slice(0, page.perPage).map(render),
    headers: offsetHeaders(ctx, { page: page.page, perPage: page.perPage, total, hasNext: rows.length > page.perPage }),
  };
}

/**
 * The site a request reached: the one whose URL host is the request's `Host`, else the primary
 * (undefined when the instance has no Geo site at all).
 */
export function currentSite(ctx: Pick<RequestContext, 'headers' | 'state'>): SiteRow | undefined {
  const all = ctx.state.db.prepare(`SELECT ${SITE_COLUMNS} FROM geo_sites ORDER BY id`).all() as SiteRow[];
  const host = typeof ctx.headers.host === 'string' ? ctx.headers.host.toLowerCase() : '';
  return all.find((s) => host !== '' && siteHost(s.url) === host) ?? all.find((s) => s.is_primary === 1);
}

/** The site of the route's `:id` (`GeoNode.find`: 404 `Not found` when there is none). */
function oneSite(ctx: RequestContext): SiteRow {
  const id = intParam(ctx.params.id, 'id');
  const site = ctx.state.db.prepare(`SELECT ${SITE_COLUMNS} FROM geo_sites WHERE id = ?`).get(id) as
    SiteRow | undefined;
  if (!site) throw notFound();
  return site;
}

/**
 * GitLab's GeoSite entity (or GeoNode, for the older API). `current` is the site the request
 * reached; `sync_object_storage` and `web_geo_replication_details_url` are exposed for secondaries
 * only.
 */
function siteEntity(ctx: RequestContext, s: SiteRow, geoApi: GeoApi): Record<string, unknown> {
  const api = `${ctx.origin}/api/v4/${geoApi.resource}/${s.id}`;
  const secondary = s.is_primary !== 1;
  return {
    id: s.id,
    name: s.name,
    url: s.url,
    internal_url: s.url,
    primary: !secondary,
    enabled: s.enabled === 1,
    current: currentSite(ctx)?.id === s.id,
    files_max_capacity: 10,
    repos_max_capacity: 25,
    verification_max_capacity: 100,
    container_repositories_max_capacity: 10,
    selective_sync_type: null,
    selective_sync_shards: [],
    selective_sync_namespace_ids: [],
    minimum_reverification_interval: 7,
    ...(secondary ? { sync_object_storage: false } : {}),
    ...(geoApi.cloneProtocol ? { clone_protocol: 'http' } : {}),
    web_edit_url: `${ctx.origin}/admin/geo/sites/${s.id}/edit`,
    ...(secondary
      ? {
          web_geo_replication_details_url: `${s.url.replace(/\/$/, '')}/admin/geo/sites/${s.id}/replication/project_repositories`,
        }
      : {}),
    _links: { self: api, status: `${api}/status`, repair: `${api}/repair` },
  };
}

interface ActionRow {
  id: number;
  registry_class: string;
  action: string;
  created_at: string;
  registries: number;
}

function siteStatus(ctx: RequestContext, s: SiteRow, geoApi: GeoApi): Record<string, unknown> {
  const { db } = ctx.state;
  const counts = new Map<string, number>();
  for (const r of db.prepare('SELECT kind, count(*) AS n FROM items GROUP BY kind').all() as {
    kind: string;
    n: number;
  }[])
    counts.set(r.kind, r.n);
  const out: Record<string, unknown> = {
    geo_node_id: s.id,
    healthy: true,
    health: 'Healthy',
    health_status: 'Healthy',
    missing_oauth_application: false,
    db_replication_lag_seconds: s.is_primary === 1 ? null : 0,
    projects_count: counts.get('project') ?? 0,
  };
  // Only this site's own bulk actions: the primary never records any (it has no registries).
  const actions = db
    .prepare('SELECT id, registry_class, action, created_at, registries FROM geo_actions WHERE site_id = ? ORDER BY id')
    .all(s.id) as ActionRow[];
  const now = ctx.state.clock.now();
  const pending = (cls: string, action: string) =>
    actions.some(
      (a) => a.registry_class === cls && a.action === action && now - Date.parse(a.created_at) < GEO_RESYNC_MS,
    );
  const percent = (part: number, n: number) => `${n > 0 ? ((100 * part) / n).toFixed(2) : '0.00'}%`;
  for (const r of REPOSITORY_REGISTRIES) {
    const n = counts.get(r.kind) ?? 0;
    const synced = pending(r.cls, 'RESYNC_ALL') ? 0 : n;
    const verified = pending(r.cls, 'REVERIFY_ALL') || synced === 0 ? 0 : n;
    Object.assign(out, {
      [`${r.prefix}_count`]: n,
      [`${r.prefix}_checksum_total_count`]: n,
      [`${r.prefix}_checksummed_count`]: n,
      [`${r.prefix}_checksum_failed_count`]: 0,
      [`${r.prefix}_synced_count`]: synced,
      [`${r.prefix}_failed_count`]: 0,
      [`${r.prefix}_registry_count`]: n,
      [`${r.prefix}_verification_total_count`]: n,
      [`${r.prefix}_verified_count`]: verified,
      [`${r.prefix}_verification_failed_count`]: 0,
      [`${r.prefix}_synced_in_percentage`]: n > 0 ? percent(synced, n) : '0.00%',
      [`${r.prefix}_verified_in_percentage`]: n > 0 ? percent(verified, n) : '0.00%',
    });
  }
  out.registry_bulk_actions = actions.map((a) => ({
    id: a.id,
    registry_class: a.registry_class,
    action: a.action,
    created_at: a.created_at,
    registries: a.registries,
  }));
  out.last_event_id = actions.at(-1)?.id ?? null;
  out.last_successful_status_check_at = isoTime(ctx.state.clock.now());
  out.updated_at = isoTime(ctx.state.clock.now());
  out.version = ctx.state.config.version;
  out.revision = 'sandbox';
  out.storage_shards_match = true;
  const api = `${ctx.origin}/api/v4/${geoApi.resource}/${s.id}`;
  out._links = { self: `${api}/status`, [geoApi.statusLink]: api };
  return out;
}

type GqlError = {
  message: string;
  locations?: { line: number; column: number }[];
  path?: string[];
  extensions?: Record<string, unknown>;
};
const gqlErrors = (...errors: GqlError[]): Reply => ({ body: { errors } });

/** Reads `registryClass` and `action` of the mutation, or explains why it cannot. */
export function parseBulkUpdate(
  query: string,
  variables: Record<string, unknown>,
): { registryClass: unknown; action: unknown; clientMutationId?: unknown } | GqlError {
  const at = query.indexOf('geoRegistriesBulkUpdate');
  if (!/^\s*mutation\b/.test(query.replace(/^\s*#.*$/gm, '')) || at < 0) {
    return { message: 'The sandbox implements only the geoRegistriesBulkUpdate mutation' };
  }
  const open = query.indexOf('(', at);
  const args = open < 0 ? '' : balanced(query, open, '(', ')');
  const inputVar = /\binput\s*:\s*\$(\w+)/.exec(args);
  if (inputVar) {
    const input = variables[inputVar[1] as string];
    if (typeof input !== 'object' || input === null)
      return { message: `Variable $${inputVar[1]} of type GeoRegistriesBulkUpdateInput! was provided invalid value` };
    const o = input as Record<string, unknown>;
    return {
      registryClass: o.registryClass,
      action: o.action,
      ...(o.clientMutationId !== undefined ? { clientMutationId: o.clientMutationId } : {}),
    };
  }
  const value = (name: string): unknown => {
    const m = new RegExp(`\\b${name}\\s*:\\s*(\\$\\w+|"[^"]*"|[A-Za-z_]\\w*)`).exec(args);
    if (!m) return undefined;
    const v = m[1] as string;
    if (v.startsWith('$')) return variables[v.slice(1)];
    if (v.startsWith('"')) return { quoted: v };
    return v;
  };
  return { registryClass: value('registryClass'), action: value('action') };
}

function balanced(text: string, start: number, open: string, close: string): string {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    if (text[i] === open) depth++;
    else if (text[i] === close && --depth === 0) return text.slice(start + 1, i);
  }
  return text.slice(start + 1);
}

function enumError(arg: string, type: string, value: unknown, allowed: readonly string[]): GqlError | null {
  if (typeof value === 'string' && allowed.includes(value)) return null;
  const shown =
    typeof value === 'object' && value !== null && 'quoted' in value
      ? String((value as { quoted: string }).quoted)
      : JSON.stringify(value ?? null);
  return {
    message: `Argument '${arg}' on InputObject 'GeoRegistriesBulkUpdateInput' has an invalid value (${shown}). Expected type '${type}!'.`,
    extensions: { code: 'argumentLiteralsIncompatible', typeName: 'InputObject', argumentName: arg },
  };
}

/** Registries of `registryClass` on a secondary: the inventory backs the repository classes, the others hold none. */
function registryCount(ctx: RequestContext, registryClass: string): number {
  const reg = REPOSITORY_REGISTRIES.find((r) => r.cls === registryClass);
  if (!reg) return 0;
  return (ctx.state.db.prepare('SELECT count(*) AS n FROM items WHERE kind = ?').get(reg.kind) as { n: number }).n;
}

/** The mutation, answered by `site` (the one the request reached, or the proxy's target). */
function graphql(ctx: RequestContext, site: SiteRow | undefined): Reply {
  const query = ctx.input.query;
  if (typeof query !== 'string' || query.trim() === '') return gqlErrors({ message: 'No query string was present' });
  let variables: unknown = ctx.input.variables ?? {};
  if (typeof variables === 'string') {
    try {
      variables = variables.trim() === '' ? {} : (JSON.parse(variables) as unknown);
    } catch {
      return gqlErrors({ message: 'Variables are invalid JSON' });
    }
  }
  if (typeof variables !== 'object' || variables === null || Array.isArray(variables))
    return gqlErrors({ message: 'Variables must be an object' });
  const parsed = parseBulkUpdate(query, variables as Record<string, unknown>);
  if ('message' in parsed) return gqlErrors(parsed);
  // The Community Edition's schema has no Geo mutations, nor has EE's before the mutation was
  // mounted: graphql-ruby's static validation error.
  if (ctx.state.config.edition === 'ce' || !atLeast(parseRelease(ctx.state.config.version), GEO_BULK_UPDATE_SINCE)) {
    return gqlErrors({
      message: "Field 'geoRegistriesBulkUpdate' doesn't exist on type 'Mutation'",
      extensions: { code: 'undefinedField', typeName: 'Mutation', fieldName: 'geoRegistriesBulkUpdate' },
    });
  }
  const problems = [
    enumError('registryClass', 'GeoRegistryClass', parsed.registryClass, REGISTRY_CLASSES),
    enumError('action', 'GeoRegistriesBulkAction', parsed.action, BULK_ACTIONS),
  ].filter((e): e is GqlError => e !== null);
  if (problems.length > 0) return gqlErrors(...problems);
  // `read_all_geo` (every effective admin, no licence check); GraphQL answers 200 with a null field otherwise.
  if (!ctx.caller || !isEffectiveAdmin(ctx, ctx.caller)) {
    return {
      body: {
        data: { geoRegistriesBulkUpdate: null },
        errors: [{ message: NO_PERMISSION, path: ['geoRegistriesBulkUpdate'] }],
      },
    };
  }
  const registryClass = parsed.registryClass as string;
  if (site === undefined || site.is_primary === 1) {
    // GitLab's service only enqueues the job and answers success; on the primary it finds no registry.
    ctx.state.log.info(
      { registryClass, action: parsed.action, site: site?.id ?? null },
      'geo registries bulk update on the primary: no registry to update',
    );
  } else {
    const registries = registryCount(ctx, registryClass);
    ctx.state.db
      .prepare(
        'INSERT INTO geo_actions (site_id, registry_class, action, created_at, registries) VALUES (?, ?, ?, ?, ?)',
      )
      .run(site.id, registryClass, parsed.action as string, isoTime(ctx.state.clock.now()), registries);
    ctx.state.log.info(
      { registryClass, action: parsed.action, site: site.id, registries },
      'geo registries bulk update',
    );
  }
  const result: Record<string, unknown> = { registryClass, errors: [] };
  if (parsed.clientMutationId !== undefined) result.clientMutationId = parsed.clientMutationId;
  return { body: { data: { geoRegistriesBulkUpdate: result } } };
}
