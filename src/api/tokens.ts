/**
 * The admin token endpoint (`POST` and `DELETE /admin/token`): what a token is, and revoking,
 * resetting or deleting it. The endpoint does not say which type a token is, so the type is told by
 * its prefix, in GitLab's own detection order, and the answer's shape is read per type.
 *
 * The token itself is a secret: it travels only in the JSON body, is scrubbed from every error the
 * client builds, and nothing here returns or logs it.
 */
import type { ApiClient } from './client.js';
import { ApiHttpError, ApiInvalidResponseError, isApiError } from './errors.js';

/** What DELETE does to a type (the spec's table). */
export type TokenAction = 'revoke' | 'reset' | 'delete' | 'none';

/** A release as [major, minor]. */
export type Release = readonly [number, number];

/** One token type as the spec lists it, and the releases that learned it. */
export interface TokenTypeInfo {
  /** Stable key: `personal`, `feed`, `runner` ... */
  kind: string;
  /** For people: "personal access token". */
  label: string;
  action: TokenAction;
  /** The release whose POST first identifies the type. */
  postSince: Release;
  /** The release whose DELETE first acts on it; null: never. */
  deleteSince: Release | null;
  /** A feature flag DELETE also needs (off by default). */
  deleteFlag?: string;
}

/** The endpoint exists from 17.5 behind this flag, generally available from 17.8. */
export const FINDER_FLAG = 'admin_agnostic_token_finder';
/** DELETE in 17.7 and 17.8 needs this flag; from 17.9 it is on by default. */
export const REVOKE_FLAG = 'api_admin_token_revoke';
/** DELETE of pipeline trigger tokens needs this flag (off by default). */
export const TRIGGER_FLAG = 'token_api_expire_pipeline_triggers';

/** A row of the spec's table: kind, label, postSince, deleteSince, action and the flag DELETE also needs. */
type TokenTypeRow = readonly [string, string, Release, Release | null, TokenAction, string?];

/** The four access-token types: one prefix, and the same releases and action. */
const ACCESS_TYPES: ReadonlyArray<[string, string]> = [
  ['personal', 'personal access token'],
  ['impersonation', 'impersonation token'],
  ['project_access', 'project access token'],
  ['group_access', 'group access token'],
];

const TABLE: readonly TokenTypeRow[] = [
  ...ACCESS_TYPES.map(([kind, label]): TokenTypeRow => [kind, label, [17, 5], [17, 7], 'revoke']),
  ['deploy', 'deploy token', [17, 5], [17, 7], 'revoke'],
  ['cluster_agent', 'cluster agent token', [17, 7], [17, 9], 'revoke'],
  ['pipeline_trigger', 'pipeline trigger token', [17, 7], [17, 10], 'revoke', TRIGGER_FLAG],
  ['feed', 'feed token', [17, 6], [17, 7], 'reset'],
  ['runner', 'runner authentication token', [17, 7], [17, 9], 'reset'],
  ['oauth_secret', 'OAuth application secret', [17, 7], [17, 9], 'reset'],
  ['incoming_email', 'incoming email token', [17, 9], [17, 9], 'reset'],
  ['feature_flags_client', 'feature flags client token', [17, 9], [17, 9], 'reset'],
  ['session', 'session cookie', [17, 9], [17, 11], 'delete'],
  ['job', 'CI/CD job token', [17, 9], null, 'none'],
];

/** The 14 types of the spec's table. */
export const TOKEN_TYPES: readonly TokenTypeInfo[] = TABLE.map(
  ([kind, label, postSince, deleteSince, action, flag]) => ({
    kind,
    label,
    postSince,
    deleteSince,
    action,
    ...(flag ? { deleteFlag: flag } : {}),
  }),
);

/** A session is passed as the cookie pair; GitLab's own cookie is `_gitlab_session`. */
const SESSION_PREFIXES = ['_gitlab_session=', '_service_session='];

/**
 * Prefixes by detection order (GitLab's `AgnosticTokenIdentifier`): deploy and feed come before
 * access tokens, so a custom access-token prefix never shadows them.
 */
function prefixes(accessPrefix: string | null): Array<[string, string[]]> {
  return [
    ['deploy', ['gldt-']],
    ['feed', ['glft-']],
    ['access', [...new Set(['glpat-', ...(accessPrefix ? [accessPrefix] : [])])]],
    ['oauth_secret', ['gloas-']],
    ['cluster_agent', ['glagent-']],
    ['runner', ['glrt-', 'glrtr-']],
    ['pipeline_trigger', ['glptt-']],
    ['job', ['glcbt-']],
    ['feature_flags_client', ['glffct-']],
    ['session', SESSION_PREFIXES],
    ['incoming_email', ['glimt-']],
  ];
}

/**
 * The type family a token's prefix names, or null when no known prefix matches (then it may carry a
 * previous custom prefix). `access` stands for the four access-token types until the record says which.
 */
export function tokenFamily(token: string, accessPrefix: string | null): { family: string; prefix: string } | null {
  for (const [family, ps] of prefixes(accessPrefix)) {
    const prefix = [...ps].sort((a, b) => b.length - a.length).find((p) => token.startsWith(p));
    if (prefix !== undefined) return { family, prefix };
  }
  return null;
}

export function typeInfo(kind: string): TokenTypeInfo {
  const found = TOKEN_TYPES.find((t) => t.kind === kind || (kind === 'access' && t.kind === 'personal'));
  if (!found) throw new Error(`unknown token kind ${kind}`);
  return found;
}

/** What `inspect` shows, the same fields for every type; null where the type has no such thing. */
export interface TokenInfo {
  type: string;
  kind: string;
  id: number | null;
  owner: string | null;
  scopes: string[] | null;
  expiresAt: string | null;
  lastUsedAt: string | null;
  /** `active`, `revoked`, `expired`, or the type's own status (a job's, a runner's). */
  state: string;
  /** What DELETE would do to it. */
  action: TokenAction;
  /** The record as the instance sent it (never holds the token: the endpoint leaves it out). */
  record: Record<string, unknown>;
}

type Json = Record<string, unknown>;
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const obj = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {});

/** The token endpoint's calls. */
export interface TokenApi {
  /** POST /admin/token, read as a TokenInfo. */
  inspect(token: string): Promise<TokenInfo>;
  /** DELETE /admin/token; returns the body of the answer (204: null). */
  revoke(token: string): Promise<{ status: number; body: unknown }>;
}

/** `accessPrefix`: the instance's current custom personal access token prefix, if any. */
export function createTokenApi(client: ApiClient, accessPrefix: string | null = null): TokenApi {
  async function userName(id: number | null): Promise<string | null> {
    if (id === null) return null;
    try {
      const u = obj((await client.request({ method: 'GET', path: `/users/${id}` })).body);
      return str(u.username) ?? `user ${id}`;
    } catch (err) {
      if (isApiError(err)) return `user ${id}`;
      throw err;
    }
  }

  return {
    async inspect(token) {
      const res = await client.request({
        method: 'POST',
        path: '/admin/token',
        body: { token },
        readOnlySafe: true,
        secrets: [token],
      });
      const body = obj(res.body);
      if (Object.keys(body).length === 0)
        throw new ApiInvalidResponseError({ method: 'POST', path: '/api/v4/admin/token' }, 'not a JSON object');
      const family = tokenFamily(token, accessPrefix)?.family ?? 'access';
      return describeRecord(family, body, userName);
    },
    async revoke(token) {
      const res = await client.request({ method: 'DELETE', path: '/admin/token', body: { token }, secrets: [token] });
      return { status: res.status, body: res.body };
    },
  };
}

async function describeRecord(
  family: string,
  r: Json,
  userName: (id: number | null) => Promise<string | null>,
): Promise<TokenInfo> {
  const base = (kind: string, fields: Partial<TokenInfo>): TokenInfo => {
    const info = typeInfo(kind);
    return {
      type: info.label,
      kind: info.kind,
      id: num(r.id),
      owner: null,
      scopes: null,
      expiresAt: null,
      lastUsedAt: null,
      state: 'active',
      action: info.action,
      record: r,
      ...fields,
    };
  };
  const scopes = Array.isArray(r.scopes) ? r.scopes.map(String) : null;
  switch (family) {
    case 'access': {
      const owner = await userName(num(r.user_id));
      const bot = /^(project|group)_\d+_bot/.exec(owner ?? '');
      const kind = r.impersonation === true ? 'impersonation' : bot ? `${bot[1]}_access` : 'personal';
      const expired = typeof r.expires_at === 'string' && r.expires_at < new Date().toISOString().slice(0, 10);
      return base(kind, {
        owner,
        scopes,
        expiresAt: str(r.expires_at),
        lastUsedAt: str(r.last_used_at),
        state: r.revoked === true ? 'revoked' : expired ? 'expired' : 'active',
      });
    }
    case 'deploy':
      return base('deploy', {
        owner: str(r.username),
        scopes,
        expiresAt: str(r.expires_at),
        state: r.revoked === true ? 'revoked' : r.expired === true ? 'expired' : 'active',
      });
    case 'feed':
    case 'incoming_email':
    case 'session':
      return base(family, {
        id: null,
        owner: str(r.username),
        state: str(r.state) === 'active' || r.state === undefined ? 'active' : `owner ${String(r.state)}`,
      });
    case 'oauth_secret':
      return base('oauth_secret', {
        owner: str(r.application_name) ? `application ${String(r.application_name)}` : null,
      });
    case 'cluster_agent':
      return base('cluster_agent', {
        owner:
          (await userName(num(r.created_by_user_id))) ??
          (num(r.agent_id) !== null ? `agent ${String(r.agent_id)}` : null),
        lastUsedAt: str(r.last_used_at),
        state: str(r.status) ?? 'active',
      });
    case 'runner':
      return base('runner', {
        owner: str(r.description) ? `runner ${String(r.description)}` : `runner ${String(r.id)}`,
        state: r.active === false || r.paused === true ? 'paused' : 'active',
      });
    case 'pipeline_trigger':
      return base('pipeline_trigger', {
        owner: str(obj(r.owner).username),
        expiresAt: str(r.expires_at),
        lastUsedAt: str(r.last_used),
        state: r.expired === true ? 'expired' : 'active',
      });
    case 'job': {
      const job = obj(r.job);
      return base('job', {
        id: num(job.id),
        owner: str(obj(job.user).username),
        state: `job ${str(job.status) ?? 'unknown'}`,
      });
    }
    case 'feature_flags_client':
      return base('feature_flags_client', {
        owner: num(r.project_id) !== null ? `project ${String(r.project_id)}` : null,
      });
    default:
      return base('personal', {});
  }
}

/** "17.11.0-ee" -> [17, 11]; null when unreadable. */
export function parseRelease(version: string): Release | null {
  const m = /^(\d+)\.(\d+)/.exec(version);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

export function atLeast(v: Release, since: Release): boolean {
  return v[0] !== since[0] ? v[0] > since[0] : v[1] >= since[1];
}

/** The endpoint's own 404 for "no such route" (older release, flag off), told apart from "no such token". */
export function isRouteNotFound(err: unknown): boolean {
  return err instanceof ApiHttpError && err.status === 404 && str(obj(err.body).error) === '404 Not Found';
}
