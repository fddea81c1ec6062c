/**
 * POST and DELETE /admin/token: identify any token by its prefix, describe it, revoke/reset/delete
 * it (spec: Endpoints, Supported token types, Versioning; reference §6).
 *
 * Versioning, where the spec and reference leave room:
 * - Before 17.5, and in 17.5-17.7 while `admin_agnostic_token_finder` is off, the endpoint does not
 *   exist: the answer is the router's own 404, before any authentication, exactly like an unknown
 *   path. The routes are therefore registered with auth level 'none' and authenticate themselves.
 * - DELETE came in 17.7: before that, a DELETE to the (existing) POST path is a route-like 405.
 *   In 17.7 and 17.8 it needs `api_admin_token_revoke` (off by default, answer 404
 *   `'api_admin_token_revoke' feature flag is disabled`, as older GitLab did). From 17.9 the
 *   newest GitLab code has no flag check, so the flag defaults to on; setting it off through the
 *   Features API still disables DELETE (the spec says DELETE is controlled by a feature flag).
 * - A type DELETE does not act on at this release (not yet, never for CI/CD job tokens, pipeline
 *   triggers without `token_api_expire_pipeline_triggers`): 422 "Token type not supported.".
 * - Revoking twice is not an error (GitLab's revoke services succeed on revoked tokens): 204.
 */
import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { CredentialRow, RequestContext, Reply } from '../http/context.js';
import { SandboxHttpError, invalidParam } from '../http/errors.js';
import type { Router } from '../http/router.js';
import { authenticate } from './authenticate.js';
import type { ApplicationRow } from './store.js';
import { ACCESS_TOKEN_TYPES, credentialExtra, findUserById, isFeatureEnabled, statements } from './store.js';
import {
  accessTokenRecord,
  applicationRecord,
  clusterAgentTokenRecord,
  deployTokenRecord,
  featureFlagsClientRecord,
  jobRecord,
  runnerRecord,
  triggerRecord,
  userEntity,
} from './entities.js';
import type { Identified, Release } from './token-types.js';
import { FINDER_FLAG, REVOKE_FLAG, atLeast, identifyToken, isDeletable, parseRelease } from './token-types.js';
import type { Db } from '../db.js';
import { isoTime, perDatabase } from '../db.js';
import { registerTokenUse } from './token-use.js';

/** The endpoint's path; POST describes, DELETE acts. */
export const TOKEN_PATH = '/api/v4/admin/token';

/** Adds POST/DELETE /admin/token (and the token-use routes) to the router. */
export function register(router: Router): void {
  router.post(TOKEN_PATH, { level: 'none' }, describeToken);
  router.delete(TOKEN_PATH, { level: 'none' }, revokeToken);
  // Other methods are answered here too, so a release without the endpoint does not give its
  // existence away through the router's 405.
  for (const method of ['GET', 'PUT', 'PATCH']) router.add(method, TOKEN_PATH, { level: 'none' }, wrongMethod);
  registerTokenUse(router);
}

function wrongMethod(ctx: RequestContext): Reply {
  const release = parseRelease(ctx.state.config.version);
  if (!isTokenEndpointAvailable(ctx.state.db, release)) throw routeNotFound();
  throw new SandboxHttpError(
    405,
    { error: '405 Method Not Allowed' },
    { allow: atLeast(release, [17, 7]) ? 'POST, DELETE' : 'POST' },
  );
}

/** The found record behind a token: a credential row or an OAuth application. */
type Found = { cred: CredentialRow; app?: undefined } | { app: ApplicationRow; cred?: undefined };

const routeNotFound = () => new SandboxHttpError(404, { error: '404 Not Found' });
const tokenNotFound = () => new SandboxHttpError(404, { message: { error: 'Not found' } });
const typeNotSupported = () => new SandboxHttpError(422, { message: 'Token type not supported.' });

/** Whether the endpoint exists at all at this release and flag state. */
export function isTokenEndpointAvailable(db: Db, release: Release): boolean {
  if (!atLeast(release, [17, 5])) return false;
  return atLeast(release, [17, 8]) || isFeatureEnabled(db, FINDER_FLAG, false);
}

function describeToken(ctx: RequestContext): Reply {
  const release = parseRelease(ctx.state.config.version);
  if (!isTokenEndpointAvailable(ctx.state.db, release)) throw routeNotFound();
  ctx.caller = authenticate(ctx, { level: 'admin' });
  const token = tokenParam(ctx);
  const identified = identifyToken(token, ctx.state.config, release);
  if (!identified) throw typeNotSupported();
  const found = findRecord(ctx.state.db, identified, token);
  if (!found) throw tokenNotFound();
  return { status: 200, body: present(ctx, identified, found) };
}

function revokeToken(ctx: RequestContext): Reply {
  const { db, config } = ctx.state;
  const release = parseRelease(config.version);
  if (!isTokenEndpointAvailable(db, release)) throw routeNotFound();
  if (!atLeast(release, [17, 7]))
    throw new SandboxHttpError(405, { error: '405 Method Not Allowed' }, { allow: 'POST' });
  ctx.caller = authenticate(ctx, { level: 'admin' });
  const token = tokenParam(ctx);
  if (!isFeatureEnabled(db, REVOKE_FLAG, atLeast(release, [17, 9]))) {
    throw new SandboxHttpError(404, { message: `'${REVOKE_FLAG}' feature flag is disabled` });
  }
  const identified = identifyToken(token, config, release);
  if (!identified) throw typeNotSupported();
  const found = findRecord(db, identified, token);
  if (!found) throw tokenNotFound();
  if (!isDeletable(identified.def, release, (name) => isFeatureEnabled(db, name, false))) throw typeNotSupported();
  act(ctx, identified, found);
  return { status: 204 };
}

/** Grape's `requires :token, type: String`. */
function tokenParam(ctx: RequestContext): string {
  const v = ctx.input.token;
  if (v === undefined || v === null) throw invalidParam('token is missing');
  if (typeof v !== 'string') throw invalidParam('token is invalid');
  return v;
}

function findRecord(db: Db, { def, prefix }: Identified, token: string): Found | undefined {
  const s = statements(db);
  if (def.kind === 'oauth_secret') {
    const app = s.applicationBySecret.get(token);
    return app ? { app } : undefined;
  }
  const value = def.kind === 'session' ? token.slice(prefix.length) : token;
  const cred = s.credentialByValue.get(value);
  if (!cred) return undefined;
  if (def.kind === 'access') return ACCESS_TOKEN_TYPES.includes(cred.type) ? { cred } : undefined;
  if (cred.type !== def.kind) return undefined;
  // A job token is found only while its job runs (reference §6).
  if (def.kind === 'job' && (credentialExtra(cred).status ?? 'running') !== 'running') return undefined;
  // Feed, incoming email and session tokens are described by their user: no user, no record.
  if (
    (def.kind === 'feed' || def.kind === 'incoming_email' || def.kind === 'session') &&
    (cred.user_id === null || !findUserById(db, cred.user_id))
  ) {
    return undefined;
  }
  return { cred };
}

function present(ctx: RequestContext, { def, prefix }: Identified, found: Found): unknown {
  if (found.app) return applicationRecord(found.app);
  const { cred } = found;
  const { db, clock } = ctx.state;
  switch (def.kind) {
    case 'access':
      return accessTokenRecord(cred);
    case 'deploy':
      return deployTokenRecord(cred, clock.now());
    case 'feed':
    case 'incoming_email':
    case 'session':
      return userEntity(findUserById(db, cred.user_id as number)!, ctx.origin);
    case 'cluster_agent':
      return clusterAgentTokenRecord(cred);
    case 'runner':
      return runnerRecord(cred);
    case 'pipeline_trigger':
      return triggerRecord(db, cred, ctx.origin, clock.now(), prefix);
    case 'job':
      return { job: jobRecord(db, cred, ctx.origin) };
    case 'feature_flags_client':
      return featureFlagsClientRecord(cred);
    // Found with an application, handled above.
    case 'oauth_secret':
      throw tokenNotFound();
  }
}

interface ActionStatements {
  expire: Database.Statement<[number, string, string, number]>;
  reset: Database.Statement<[string, string, number]>;
  resetSecret: Database.Statement<[string, number]>;
  remove: Database.Statement<[number]>;
}

const actionStatements = perDatabase((db): ActionStatements => ({
  expire: db.prepare('UPDATE credentials SET expires_at_ms = ?, expires_at = ?, updated_at = ? WHERE id = ?'),
  reset: db.prepare('UPDATE credentials SET value = ?, updated_at = ? WHERE id = ?'),
  resetSecret: db.prepare('UPDATE applications SET secret = ? WHERE id = ?'),
  remove: db.prepare('DELETE FROM credentials WHERE id = ?'),
}));

/** A fresh secret under the same prefix; the old value stops existing. */
function newSecret(prefix: string): string {
  return `${prefix}${randomBytes(20).toString('hex')}`;
}

function act(ctx: RequestContext, { def, prefix }: Identified, found: Found): void {
  const { db, clock, log } = ctx.state;
  const s = actionStatements(db);
  const nowMs = clock.now();
  const now = isoTime(nowMs);
  if (found.app) {
    s.resetSecret.run(newSecret(prefix), found.app.id);
  } else {
    const { cred } = found;
    switch (def.action) {
      case 'revoke':
        statements(db).revokeCredential.run(now, cred.id);
        break;
      case 'expire':
        s.expire.run(nowMs, now.slice(0, 10), now, cred.id);
        break;
      case 'reset':
        s.reset.run(newSecret(prefix), now, cred.id);
        break;
      case 'delete':
        s.remove.run(cred.id);
        break;
      case null:
        throw typeNotSupported();
    }
  }
  log.info({ kind: def.kind, action: def.action, id: found.app ? found.app.id : found.cred.id }, 'admin token action');
}
