/**
 * `createInstanceApi`: the InstanceApi contract (./types.ts) over the one HTTP client, against
 * GitLab's real endpoints (reference §1, §3, §4, §5, §6, §8, §9). Every method is one logical
 * call; the client retries GETs and PUTs, never POSTs.
 */
import type { Dispatcher } from 'undici';
import type { Credentials, Kind } from '../plan/types.js';
import { createCredentialProvider } from './auth.js';
import type { OAuthTokenPair } from './auth.js';
import { createClient, createPool, USER_AGENT } from './client.js';
import { checksApplicationRateLimits, createRatePacer } from './rate-pacer.js';
import { systemClock } from '../shared/clock.js';
import type { RequestEvent, RetryPolicy } from './client.js';
import type { OutageGate } from './outage.js';
import { ApiHttpError, ApiInvalidResponseError } from './errors.js';
import { listKeysetIsolating, listOffsetIsolating } from './listing.js';
import { nextPageNumber, paginateOffset, parseLinkNext } from './pagination.js';
import { parseItem, parseMove, singular } from './records.js';
import { readFingerprint } from './fingerprint.js';
import type {
  CurrentUser,
  GeoResyncResult,
  GeoSite,
  InstanceApi,
  InstanceVersion,
  ItemRecord,
  KindAccess,
  MovePage,
  MoveRecord,
  NamespaceRecord,
  QueueMetrics,
  Readiness,
  ScheduleResult,
  StorageHealth,
  TokenInfo,
} from './types.js';

/** Options of `createInstanceApi`; the plan's `instance` section plus runtime hooks. */
export interface InstanceApiOptions {
  /** Base URL without /api/v4. */
  baseUrl: string;
  credentials: Credentials;
  sudo?: string | null;
  timeoutMs: number;
  /**
   * Dry run: every mutating request fails with SHARDMOVE_DRY_RUN_BLOCKED before it is sent
   * (POST /admin/token only reads and is allowed). An OAuth refresh still happens when the token
   * expires: it changes no repository, and without it the rehearsal could not read at all.
   */
  readOnly?: boolean;
  retry?: Partial<RetryPolicy>;
  /** Moves in flight; sizes the keep-alive pool. */
  concurrency?: number;
  onRequest?: (e: RequestEvent) => void;
  onResponse?: (e: RequestEvent) => void;
  /**
   * OAuth only: the new pair after each refresh, to be written back (refresh tokens are single use).
   * Awaited before the new token is used; if it throws, the request that triggered the refresh fails
   * with that error (the pair in memory is already the new one, so later requests keep working).
   */
  onRefresh?: (pair: OAuthTokenPair) => void | Promise<void>;
  /** OAuth only: refresh this long before expiry (default 60 s). */
  oauthMarginMs?: number;
  /** Aborts in-flight requests and backoff waits (SIGINT/SIGTERM); rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Tests: a MockAgent. */
  dispatcher?: Dispatcher;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
  random?: () => number;
  /** Instance outages hold requests instead of failing them (./outage.ts). */
  outage?: OutageGate;
}

type Json = Record<string, unknown>;

/** A storage name no instance has: a filter on it that lists anything is being ignored. */
const NO_SUCH_STORAGE = 'shardmove-probe-no-such-storage';

const GEO_RESYNC_MUTATION =
  'mutation($registryClass: GeoRegistryClass!) { geoRegistriesBulkUpdate(input: {registryClass: $registryClass, action: RESYNC_ALL}) { registryClass errors } }';

/** The InstanceApi over HTTP. `close()` closes the connection pool. */
export function createInstanceApi(opts: InstanceApiOptions): InstanceApi {
  const now = opts.now ?? Date.now;
  // One pool for the API and the OAuth refresh; an injected dispatcher (tests) is not ours to close.
  const dispatcher = opts.dispatcher ?? createPool(opts.timeoutMs, opts.concurrency ?? 10);
  const credentials = createCredentialProvider(opts.credentials, {
    baseUrl: opts.baseUrl,
    dispatcher,
    timeoutMs: opts.timeoutMs,
    userAgent: USER_AGENT,
    now,
    marginMs: opts.oauthMarginMs,
    onRefresh: opts.onRefresh,
  });
  // GitLab's application rate limits: read from the settings, checked by the release from 18.1.
  let checksRateLimits = false;
  const pacer = createRatePacer({
    now,
    sleep: opts.sleep ?? systemClock.sleep,
    // /metadata is under no application limit: its answer's Date re-reads the server's clock.
    probe: async (signal) => void (await c.request({ method: 'GET', path: '/metadata', signal })),
  });
  const c = createClient({
    baseUrl: opts.baseUrl,
    credentials,
    sudo: opts.sudo,
    timeoutMs: opts.timeoutMs,
    readOnly: opts.readOnly,
    retry: opts.retry,
    dispatcher,
    onRequest: opts.onRequest,
    onResponse: opts.onResponse,
    signal: opts.signal,
    sleep: opts.sleep,
    now,
    random: opts.random,
    pacer,
    ...(opts.outage ? { outage: opts.outage } : {}),
  });

  const moveListPath = (kind: Kind) => `/${singular(kind)}_repository_storage_moves`;

  async function getOrNull(path: string, query?: Json): Promise<unknown> {
    try {
      return (await c.request({ method: 'GET', path, query: query as Record<string, string> })).body;
    } catch (err) {
      if (err instanceof ApiHttpError && err.status === 404) return null;
      throw err;
    }
  }

  /** Pages of a group search read at most before a digit path counts as unknown. */
  const DIGIT_SEARCH_PAGES = 20;

  /**
   * A top-level namespace whose path is all digits: a group by `GET /groups?search=` (matching name
   * or path; the one whose full path is exactly it), else a user by `GET /users?username=`.
   */
  async function digitNamespace(fullPath: string): Promise<NamespaceRecord | null> {
    const want = fullPath.toLowerCase();
    let pages = 0;
    for await (const page of paginateOffset(c, '/groups', { search: fullPath }, { perPage: 100 })) {
      for (const g of page as Json[]) {
        if (typeof g === 'object' && g !== null && typeof g['id'] === 'number' && typeof g['full_path'] === 'string')
          if (g['full_path'].toLowerCase() === want) return { id: g['id'], kind: 'group', fullPath: g['full_path'] };
      }
      if (++pages >= DIGIT_SEARCH_PAGES) break;
    }
    const users = (await getOrNull('/users', { username: fullPath })) as Json[] | null;
    const user = Array.isArray(users) ? users.find((u) => typeof u === 'object' && u !== null) : undefined;
    if (user && typeof user['id'] === 'number' && typeof user['username'] === 'string')
      return { id: user['id'], kind: 'user', fullPath: user['username'] };
    return null;
  }

  return {
    async version(): Promise<InstanceVersion> {
      // /metadata (15.2+) always says `enterprise`; /version only on some versions.
      const body = ((await getOrNull('/metadata')) ??
        (await c.request({ method: 'GET', path: '/version' })).body) as Json | null;
      const version = body?.['version'];
      if (typeof version !== 'string')
        throw new ApiInvalidResponseError({ method: 'GET', path: '/api/v4/version' }, 'no version');
      const enterprise = body?.['enterprise'];
      checksRateLimits = checksApplicationRateLimits(version);
      return { version, enterprise: typeof enterprise === 'boolean' ? enterprise : null };
    },

    async currentUser(): Promise<CurrentUser> {
      const { body } = await c.request({ method: 'GET', path: '/user' });
      const u = (body ?? {}) as Json;
      if (typeof u['id'] !== 'number')
        throw new ApiInvalidResponseError({ method: 'GET', path: '/api/v4/user' }, 'no user id');
      return { id: u['id'], username: String(u['username'] ?? ''), isAdmin: u['is_admin'] === true };
    },

    async inspectToken(token): Promise<TokenInfo | null> {
      try {
        const { body } = await c.request({
          method: 'POST',
          path: '/admin/token',
          body: { token },
          readOnlySafe: true,
          secrets: [token],
        });
        const t = (body ?? {}) as Json;
        return {
          id: typeof t['id'] === 'number' ? t['id'] : 0,
          userId: typeof t['user_id'] === 'number' ? t['user_id'] : null,
          name: typeof t['name'] === 'string' ? t['name'] : null,
          scopes: Array.isArray(t['scopes']) ? t['scopes'].filter((s): s is string => typeof s === 'string') : [],
          revoked: t['revoked'] === true,
          expiresAt: typeof t['expires_at'] === 'string' ? t['expires_at'].slice(0, 10) : null,
        };
      } catch (err) {
        // Older instances: no route (404/405); unknown token type (422): the endpoint cannot tell us.
        if (err instanceof ApiHttpError && [404, 405, 422].includes(err.status)) return null;
        throw err;
      }
    },

    async readiness(): Promise<Readiness> {
      // 503 still carries the per-check body; health probes need no token (IP allowlist).
      const { body } = await c.request({
        method: 'GET',
        path: '/-/readiness',
        root: true,
        anonymous: true,
        query: { all: 1 },
        acceptStatus: [503],
      });
      return parseReadiness(body);
    },

    async getWeights() {
      const { body } = await c.request({ method: 'GET', path: '/application/settings' });
      pacer.configure(body, checksRateLimits);
      return parseWeights(body);
    },

    rateHold: () => pacer.hold(),
    rateLimits: () => pacer.limits(),

    async setWeights(weights) {
      const { body } = await c.request({
        method: 'PUT',
        path: '/application/settings',
        body: { repository_storages_weighted: weights },
      });
      return parseWeights(body);
    },

    listItemsOnStorage(kind, storage, o = {}): AsyncIterable<ItemRecord[]> {
      const path = kind === 'projects' ? '/projects' : kind === 'snippets' ? '/snippets/all' : '/groups';
      const ref = { method: 'GET', path: `/api/v4${path}` };
      const perPage = o.perPage ?? 100;
      const base: Record<string, string | number | boolean> = { repository_storage: storage };
      if (kind === 'projects') {
        // Admin-only flags; include_hidden is EE. Elsewhere GitLab ignores them (docs/gitlab-behaviour.md §1.3).
        Object.assign(base, {
          statistics: true,
          include_hidden: true,
          include_pending_delete: true,
          pagination: 'keyset',
          order_by: 'id',
          sort: 'asc',
        });
        if (o.leaveOut) {
          delete base[o.leaveOut === 'hidden' ? 'include_hidden' : 'include_pending_delete'];
          delete base['statistics'];
        }
        return listKeysetIsolating(
          async (q) => {
            const query = {
              ...base,
              id_after: q.idAfter,
              per_page: q.perPage,
              ...(q.idBefore !== undefined ? { id_before: q.idBefore } : {}),
            };
            const res = await c.request({ method: 'GET', path, query });
            const items = asItems(kind, res.body, ref);
            return { items, hasNext: parseLinkNext(res.headers['link']) !== null };
          },
          { kind, perPage, afterId: o.afterId ?? 0, onUnlistable: o.onUnlistable },
        );
      }
      // Groups honour order_by=id (stable order); /snippets/all declares no order and is newest first.
      if (kind === 'groups') Object.assign(base, { order_by: 'id', sort: 'asc' });
      return listOffsetIsolating(
        async (page, size) => {
          const res = await c.request({ method: 'GET', path, query: { ...base, page, per_page: size } });
          const items = asItems(kind, res.body, ref);
          const next = nextPageNumber(res.headers);
          return { items, hasNext: next !== null && next > page };
        },
        { kind, perPage, onUnlistable: o.onUnlistable },
      );
    },

    async countItemsOnStorage(storage, o): Promise<number | null> {
      // An offset page of one project: its x-total is the count, sent when it is at most 10,000
      // (docs/gitlab-behaviour.md, offset headers); id_after/id_before filter offset pages too.
      const query: Record<string, string | number | boolean> = {
        repository_storage: storage,
        include_hidden: true,
        include_pending_delete: true,
        order_by: 'id',
        sort: 'asc',
        simple: true,
        id_after: o.afterId,
        page: 1,
        per_page: 1,
        ...(o.beforeId !== undefined ? { id_before: o.beforeId } : {}),
      };
      if (o.leaveOut) delete query[o.leaveOut === 'hidden' ? 'include_hidden' : 'include_pending_delete'];
      const res = await c.request({ method: 'GET', path: '/projects', query });
      const total = res.headers['x-total'];
      const n = Number(Array.isArray(total) ? total[0] : total);
      return total === undefined || total === '' || !Number.isSafeInteger(n) || n < 0 ? null : n;
    },

    async kindAccess(kind, enterprise): Promise<KindAccess> {
      if (kind === 'projects') return { mode: 'listing', reason: null };
      const movesPath = moveListPath(kind);
      if ((await getOrNull(movesPath, { per_page: 1 })) === null) {
        const why = kind === 'groups' ? ' (the Community Edition has no group wikis)' : '';
        return {
          mode: 'unsupported',
          reason: `the instance has no ${singular(kind)} repository storage moves: GET /api/v4${movesPath} answered 404${why}`,
        };
      }
      const path = kind === 'snippets' ? '/snippets/all' : '/groups';
      let sample: unknown[];
      try {
        const res = await c.request({ method: 'GET', path, query: { per_page: 1 } });
        sample = Array.isArray(res.body) ? res.body : [];
      } catch (err) {
        // Before 16.3 `/snippets/all` is taken as snippet id "all" (400 "id is invalid").
        if (err instanceof ApiHttpError && (err.status === 400 || err.status === 404)) {
          return {
            mode: 'records',
            reason: `GET /api/v4${path} is not available (HTTP ${err.status}; /snippets/all exists from GitLab 16.3), so ${kind} cannot be listed by storage`,
          };
        }
        throw err;
      }
      const first = sample[0];
      if (first === undefined) {
        if (enterprise === false)
          return {
            mode: 'records',
            reason: `the instance is the Community Edition, which does not expose the repository storage of ${kind}`,
          };
        return { mode: 'listing', reason: null };
      }
      // The field's presence decides (a group without a wiki repository shows it as null).
      const shown = typeof first === 'object' && first !== null && 'repository_storage' in first;
      // EE shows a group's storage only with the group_wikis licence feature (ee/lib/ee/api/entities/group.rb).
      // Without it (Free) group wikis may still exist (a lapsed licence keeps them), and the move API
      // and its bulk service move them with no licence check: never assume there are none.
      if (kind === 'groups' && !shown && enterprise === true) {
        return {
          mode: 'records',
          reason:
            'EE without the group_wikis licence (Free): GET /api/v4/groups shows no repository_storage, but group wikis a lapsed licence left are still there and the group move API moves them',
        };
      }
      if (!shown) {
        return {
          mode: 'records',
          reason: `GET /api/v4${path} shows no repository_storage field for ${kind} (Community Edition, or a tier that does not expose it)`,
        };
      }
      // A filter on a storage that cannot exist must list nothing; anything listed means it is ignored.
      const probe = await c.request({
        method: 'GET',
        path,
        query: { repository_storage: NO_SUCH_STORAGE, per_page: 1 },
      });
      if (Array.isArray(probe.body) && probe.body.length > 0) {
        return {
          mode: 'records',
          reason: `GET /api/v4${path} ignores the repository_storage filter on this instance${kind === 'groups' ? ' (GitLab declares the group filter from 16.3 and ignores it before, listing every group)' : ''}, so a listing cannot tell what is on a storage`,
        };
      }
      return { mode: 'listing', reason: null };
    },

    async getItem(kind, id, opts) {
      const query = kind === 'projects' && opts?.statistics ? { statistics: true } : undefined;
      const body = await getOrNull(`/${kind}/${id}`, query);
      return body === null ? null : parseItem(kind, body, { method: 'GET', path: `/api/v4/${kind}/${id}` });
    },

    async findProject(ref) {
      // A full path goes in one path segment, URL-encoded (`acme%2Ftools`), as GitLab's routes take it.
      const id = encodeURIComponent(String(ref));
      const body = await getOrNull(`/projects/${id}`);
      if (body !== null) return parseItem('projects', body, { method: 'GET', path: `/api/v4/projects/${id}` });
      // Hidden and pending-delete projects are 404 above, even to admins; the move API finds them.
      const moves = await getOrNull(`/projects/${id}/repository_storage_moves`, { per_page: 1 });
      return moves === null ? null : 'hidden';
    },

    repositoryFingerprint: (id) => readFingerprint(c, id),

    async getNamespace(fullPath): Promise<NamespaceRecord | null> {
      // GitLab reads an all-digit :id as an id (`find_namespace`, `find_group`), so a top-level
      // group or user whose path is all digits ("2024") is found by name instead.
      if (/^\d+$/.test(fullPath)) return digitNamespace(fullPath);
      const path = `/namespaces/${encodeURIComponent(fullPath)}`;
      const body = (await getOrNull(path)) as Json | null;
      if (body === null) return null;
      const ref = { method: 'GET', path: `/api/v4${path}` };
      if (typeof body !== 'object' || typeof body['id'] !== 'number' || typeof body['full_path'] !== 'string')
        throw new ApiInvalidResponseError(ref, 'a namespace without an id or full_path');
      return { id: body['id'], kind: String(body['kind'] ?? ''), fullPath: body['full_path'] };
    },

    async scheduleMove(kind, itemId, destination): Promise<ScheduleResult> {
      const path = `/${kind}/${itemId}/repository_storage_moves`;
      try {
        const { body } = await c.request({ method: 'POST', path, body: { destination_storage_name: destination } });
        return { outcome: 'scheduled', move: parseMove(kind, body, { method: 'POST', path: `/api/v4${path}` }) };
      } catch (err) {
        // {"message":{"project":["is read-only"]}} (older: "is read only"): a move is already running.
        if (err instanceof ApiHttpError && err.status === 400 && /read[- ]only/i.test(err.gitlabMessage ?? ''))
          return { outcome: 'read-only' };
        throw err;
      }
    },

    async scheduleBulk(kind, source, destination) {
      await c.request({
        method: 'POST',
        path: moveListPath(kind),
        body: { source_storage_name: source, destination_storage_name: destination },
      });
    },

    async listItemMoves(kind, itemId): Promise<MoveRecord[]> {
      const path = `/${kind}/${itemId}/repository_storage_moves`;
      const out: MoveRecord[] = [];
      for await (const page of paginateOffset(c, path, {}))
        out.push(...page.map((m) => parseMove(kind, m, { method: 'GET', path: `/api/v4${path}` })));
      return out;
    },

    async listMoves(kind, page, perPage): Promise<MovePage> {
      const path = moveListPath(kind);
      const res = await c.request({ method: 'GET', path, query: { page, per_page: perPage } });
      if (!Array.isArray(res.body))
        throw new ApiInvalidResponseError({ method: 'GET', path: `/api/v4${path}` }, 'expected a JSON array');
      const moves = res.body.map((m) => parseMove(kind, m, { method: 'GET', path: `/api/v4${path}` }));
      const next = nextPageNumber(res.headers);
      return { moves, nextPage: next !== null && next > page && moves.length > 0 ? next : null };
    },

    async getMove(kind, moveId) {
      const path = `${moveListPath(kind)}/${moveId}`;
      const body = await getOrNull(path);
      return body === null ? null : parseMove(kind, body, { method: 'GET', path: `/api/v4${path}` });
    },

    async queueMetrics(): Promise<QueueMetrics> {
      const ref = { method: 'GET', path: '/api/v4/sidekiq/queue_metrics' };
      const res = await c.request({ method: 'GET', path: '/sidekiq/queue_metrics' });
      const raw = (res.body as { queues?: unknown } | null)?.queues;
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
        throw new ApiInvalidResponseError(ref, 'expected {queues: {<name>: {backlog, latency}}}');
      const queues: QueueMetrics['queues'] = {};
      for (const [name, q] of Object.entries(raw as Record<string, unknown>)) {
        const { backlog, latency } = (q ?? {}) as { backlog?: unknown; latency?: unknown };
        if (typeof backlog !== 'number' || typeof latency !== 'number' || backlog < 0 || !Number.isFinite(latency))
          throw new ApiInvalidResponseError(ref, `queue ${JSON.stringify(name)} without a numeric backlog and latency`);
        queues[name] = { backlog, latency };
      }
      return { queues };
    },

    async geoSites(): Promise<GeoSite[] | null> {
      // `/geo_sites` came in 16.0; before it `/geo_nodes` (over the same GeoNode rows) is the only
      // Geo REST API, so its 404 alone does not mean "no Geo".
      for (const resource of ['geo_sites', 'geo_nodes'] as const) {
        const out: GeoSite[] = [];
        try {
          for await (const page of paginateOffset(c, `/${resource}`, {}))
            for (const raw of page) out.push(parseGeoSite(raw, resource));
        } catch (err) {
          if (err instanceof ApiHttpError && err.status === 404) continue;
          throw err;
        }
        return out;
      }
      return null;
    },

    async geoResync(siteId, registryClasses) {
      const out: GeoResyncResult[] = [];
      const path = `/geo/node_proxy/${siteId}/graphql`;
      for (const registryClass of registryClasses) {
        const { body } = await c.request({
          method: 'POST',
          path,
          body: { query: GEO_RESYNC_MUTATION, variables: { registryClass } },
        });
        out.push({ registryClass, ...graphqlOutcome(body) });
      }
      return out;
    },

    stats: () => c.stats(),
    async close() {
      if (!opts.dispatcher) await dispatcher.close();
    },
  };
}

function asItems(kind: Kind, body: unknown, ref: { method: string; path: string }): ItemRecord[] {
  if (!Array.isArray(body)) throw new ApiInvalidResponseError(ref, 'expected a JSON array');
  return body.map((r) => parseItem(kind, r, ref));
}

/** Readiness body -> one entry per `gitaly_check` element with a shard label. */
export function parseReadiness(body: unknown): Readiness {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Json;
  const checks = Array.isArray(b['gitaly_check']) ? (b['gitaly_check'] as unknown[]) : [];
  const gitaly: StorageHealth[] = [];
  for (const raw of checks) {
    const e = (raw ?? {}) as Json;
    const shard = ((e['labels'] ?? {}) as Json)['shard'];
    if (typeof shard !== 'string') continue;
    gitaly.push({
      storage: shard,
      ok: e['status'] === 'ok',
      message: typeof e['message'] === 'string' ? e['message'] : null,
    });
  }
  return { status: typeof b['status'] === 'string' ? b['status'] : 'unknown', gitaly };
}

function parseGeoSite(raw: unknown, resource: 'geo_sites' | 'geo_nodes'): GeoSite {
  const s = (raw ?? {}) as Json;
  if (typeof s['id'] !== 'number')
    throw new ApiInvalidResponseError({ method: 'GET', path: `/api/v4/${resource}` }, 'a site without an id');
  return {
    listedBy: resource,
    id: s['id'],
    name: typeof s['name'] === 'string' ? s['name'] : `site ${s['id']}`,
    url: typeof s['url'] === 'string' ? s['url'] : '',
    primary: s['primary'] === true,
    // GitLab always sends `enabled`; a missing field is taken as enabled rather than skip a site.
    enabled: s['enabled'] !== false,
  };
}

function parseWeights(body: unknown): Record<string, number> {
  const w = ((body ?? {}) as Json)['repository_storages_weighted'];
  if (typeof w !== 'object' || w === null)
    throw new ApiInvalidResponseError(
      { method: 'GET', path: '/api/v4/application/settings' },
      'no repository_storages_weighted',
    );
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(w as Json)) out[k] = Number(v);
  return out;
}

/**
 * Top-level GraphQL errors plus the mutation's own `errors` list. An answer with neither a `data`
 * nor an `errors` member is the node proxy's `200 {}`: the secondary was not reached, nothing resynced.
 */
function graphqlOutcome(body: unknown): { errors: string[]; forwarded: boolean; unsupported?: true } {
  const b = (body ?? {}) as Json;
  const errors: string[] = [];
  if (Array.isArray(b['errors']))
    for (const e of b['errors'] as unknown[]) errors.push(String(((e ?? {}) as Json)['message'] ?? e));
  const data = ((b['data'] ?? {}) as Json)['geoRegistriesBulkUpdate'] as Json | null | undefined;
  if (Array.isArray(data?.['errors'])) for (const e of data['errors'] as unknown[]) errors.push(String(e));
  const forwarded = 'data' in b || errors.length > 0;
  if (!forwarded) errors.push('no answer through the node proxy (200 {}): the primary could not reach this secondary');
  // graphql-ruby's static validation when the schema has no such field: a release before the
  // mutation (or the Community Edition). Nothing was enqueued.
  const unsupported =
    Array.isArray(b['errors']) &&
    (b['errors'] as unknown[]).some((e) => {
      const ext = (((e ?? {}) as Json)['extensions'] ?? {}) as Json;
      return ext['code'] === 'undefinedField' && ext['fieldName'] === 'geoRegistriesBulkUpdate';
    });
  return unsupported ? { errors, forwarded, unsupported } : { errors, forwarded };
}
