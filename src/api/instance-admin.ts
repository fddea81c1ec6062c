/**
 * The InstanceApi's calls about the instance itself: who the token is, what a token is, whether
 * the instance is ready, and its Geo sites and their resync.
 */
import type { ApiClient } from './client.js';
import { ApiHttpError, ApiInvalidResponseError } from './errors.js';
import { paginateOffset } from './pagination.js';
import type {
  CurrentUser,
  GeoResyncResult,
  GeoSite,
  InstanceApi,
  Readiness,
  StorageHealth,
  TokenInfo,
} from './types.js';

type Json = Record<string, unknown>;

const GEO_RESYNC_MUTATION =
  'mutation($registryClass: GeoRegistryClass!) { geoRegistriesBulkUpdate(input: {registryClass: $registryClass, action: RESYNC_ALL}) { registryClass errors } }';

/** The calls about the instance itself, over the client. */
export function adminCalls(
  c: ApiClient,
): Pick<InstanceApi, 'currentUser' | 'inspectToken' | 'readiness' | 'geoSites' | 'geoResync'> {
  return {
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
  };
}

/** Readiness body -> one entry per `gitaly_check` element with a shard label. */
function parseReadiness(body: unknown): Readiness {
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
