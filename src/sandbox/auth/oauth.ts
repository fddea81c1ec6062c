/**
 * POST /oauth/token with the refresh grant (reference §7 OAuth): a new access/refresh pair, the
 * old pair revoked at once. Errors are OAuth 2.0 JSON (RFC 6749 §5.2), as Doorkeeper answers them.
 *
 * Choices where the reference is silent:
 * - Parameters come from a JSON or form body, or the query; client credentials may also come as
 *   HTTP Basic (`client_id:client_secret`), as Doorkeeper accepts.
 * - `redirect_uri`, when sent, must equal the application's; when omitted it is not required
 *   (Doorkeeper's refresh grant does not ask for it).
 * - A public (non-confidential) application may omit `client_secret`; a sent secret must match.
 * - `scope` may narrow the original scopes, never widen them (invalid_scope).
 * - The old pair is revoked immediately rather than at the new token's first use: the spec says
 *   renewal "invalidates the old one", and the simpler rule is the stricter one.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { RequestContext, Reply } from '../http/context.js';
import { SandboxHttpError } from '../http/errors.js';
import type { Router } from '../http/router.js';
import type { ApplicationRow } from './store.js';
import { credentialScopes, statements } from './store.js';
import { isoTime, perDatabase } from '../db.js';

/** Doorkeeper's token path, outside /api/v4. */
export const OAUTH_TOKEN_PATH = '/oauth/token';

/** Adds POST /oauth/token to the router. */
export function register(router: Router): void {
  router.post(OAUTH_TOKEN_PATH, { level: 'none' }, refreshGrant);
}

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

function oauthError(status: number, error: string, description: string): SandboxHttpError {
  const headers: Record<string, string> = { ...NO_STORE };
  if (status === 401)
    headers['www-authenticate'] = `Basic realm="Doorkeeper", error="${error}", error_description="${description}"`;
  return new SandboxHttpError(status, { error, error_description: description }, headers);
}

const invalidClient = () =>
  oauthError(
    401,
    'invalid_client',
    'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
  );
const invalidGrant = () =>
  oauthError(
    400,
    'invalid_grant',
    'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
  );
const missing = (name: string) => oauthError(400, 'invalid_request', `Missing required parameter: ${name}.`);

/** A string parameter; anything else sent under that name is a malformed request. */
function str(ctx: RequestContext, name: string): string | undefined {
  const v = ctx.input[name];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw oauthError(400, 'invalid_request', `The parameter ${name} is malformed.`);
  return v;
}

function basicCredentials(ctx: RequestContext): { id: string; secret: string } | undefined {
  const auth = ctx.headers.authorization;
  const m = typeof auth === 'string' ? /^Basic\s+(\S+)$/i.exec(auth) : null;
  if (!m) return undefined;
  const decoded = Buffer.from(m[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  return { id: decode(decoded.slice(0, colon)), secret: decode(decoded.slice(colon + 1)) };
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function authenticateClient(ctx: RequestContext): ApplicationRow {
  const basic = basicCredentials(ctx);
  const id = str(ctx, 'client_id') ?? basic?.id;
  const secret = str(ctx, 'client_secret') ?? basic?.secret;
  if (!id) throw invalidClient();
  const app = statements(ctx.state.db).applicationByUid.get(id);
  if (!app) throw invalidClient();
  if (secret === undefined ? app.confidential === 1 : !sameSecret(secret, app.secret)) throw invalidClient();
  return app;
}

/** The refreshed pair: access_token, refresh_token, user_id, application_id, name, scopes, expires_at_ms, created_at, updated_at, previous_id. */
const insertStatement = perDatabase(
  (
    db,
  ): Database.Statement<
    [string, string, number | null, number, string | null, string, number, string, string, number]
  > =>
    db.prepare(`INSERT INTO credentials (type, value, refresh_token, user_id, application_id, name, scopes, expires_at_ms, created_at,
    updated_at, previous_id) VALUES ('oauth', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
);

function refreshGrant(ctx: RequestContext): Reply {
  const grant = str(ctx, 'grant_type');
  if (!grant) throw missing('grant_type');
  if (grant !== 'refresh_token')
    throw oauthError(
      400,
      'unsupported_grant_type',
      'The authorization grant type is not supported by the authorization server.',
    );
  const app = authenticateClient(ctx);
  const refresh = str(ctx, 'refresh_token');
  if (!refresh) throw missing('refresh_token');
  const { db, clock, config } = ctx.state;
  const old = statements(db).credentialByRefresh.get(refresh);
  if (!old || old.revoked || old.application_id !== app.id) throw invalidGrant();
  const redirect = str(ctx, 'redirect_uri');
  if (redirect !== undefined && redirect !== app.redirect_uri) throw invalidGrant();
  const original = credentialScopes(old);
  const requested = str(ctx, 'scope')?.split(/\s+/).filter(Boolean);
  if (requested && requested.some((s) => !original.includes(s))) {
    throw oauthError(400, 'invalid_scope', 'The requested scope is invalid, unknown, or malformed.');
  }
  const scopes = requested && requested.length > 0 ? requested : original;
  const nowMs = clock.now();
  const now = isoTime(nowMs);
  const ttl = config.oauth_ttl_seconds;
  const accessToken = randomBytes(32).toString('hex');
  const refreshToken = randomBytes(32).toString('hex');
  db.transaction(() => {
    statements(db).revokeCredential.run(now, old.id);
    insertStatement(db).run(
      accessToken,
      refreshToken,
      old.user_id,
      app.id,
      old.name,
      JSON.stringify(scopes),
      nowMs + ttl * 1000,
      now,
      now,
      old.id,
    );
  })();
  ctx.state.log.info({ application: app.id, previous: old.id }, 'oauth token refreshed');
  return {
    status: 200,
    headers: NO_STORE,
    body: {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: ttl,
      refresh_token: refreshToken,
      created_at: Math.floor(nowMs / 1000),
      scope: scopes.join(' '),
    },
  };
}
