/**
 * Authentication: resolves and checks the caller of a request (spec: Authentication; reference §7).
 *
 * Which credential counts, in this order (the first one present decides; an invalid one is a 401,
 * never a fall-through to the next):
 *   1. PRIVATE-TOKEN header / private_token parameter: access tokens (personal, impersonation,
 *      project, group).
 *   2. Authorization: Bearer, then the access_token parameter: OAuth access token first, then an
 *      access token (GitLab's `find_oauth_access_token || find_personal_access_token`).
 *   3. JOB-TOKEN header / job_token parameter: only on routes with `jobToken`; elsewhere a 401,
 *      even on public routes (a credential the route cannot use is an invalid credential).
 *   4. The `_service_session` cookie. An unknown session is "not signed in" (anonymous), as a stale
 *      browser cookie is in GitLab; it does not turn a public request into a 401.
 *   5. A Deploy-Token header alone: 401 (deploy tokens cannot use this API).
 *
 * Token checks run in GitLab's order (AccessTokenValidationService): expired, revoked, scope,
 * impersonation disabled. Then the owner's state (blocked -> 403, as GitLab's
 * `api_access_denied_message`), then sudo, then the route's admin requirement.
 *
 * Admin Mode (settings.admin_mode): an administrator counts as one only through a token with the
 * `admin_mode` scope; without it admin routes answer 403 {"message":"403 Forbidden"}, as GitLab
 * treats such an admin as a regular user. Sessions and job tokens never count as admin while Admin
 * Mode is on: the API cannot enter admin mode for a session (GitLab asks for re-authentication in
 * the UI), so a session is a regular user there.
 */
import type { Caller, CredentialRow, RequestContext, UserRow } from '../http/context.js';
import type { AuthRule } from '../http/router.js';
import { SandboxHttpError, forbidden, insufficientScope, invalidToken, unauthorized } from '../http/errors.js';
import type { Presented, PresentedCredentials } from './presented-credentials.js';
import { UNUSABLE, readPresentedCredentials } from './presented-credentials.js';
import {
  ACCESS_TOKEN_TYPES,
  credentialExtra,
  credentialScopes,
  expiryMs,
  findUserById,
  findUserByIdOrUsername,
  isAdminModeOn,
  statements,
} from './store.js';
import type { InstanceConfig } from '../seed-schema.js';

/** GitLab's `invalid_token` descriptions (api_guard.rb), for expired, revoked and impersonation tokens. */
export const TOKEN_EXPIRED = 'Token is expired. You can either do re-authorization or token refresh.';
export const TOKEN_REVOKED = 'Token was revoked. You have to re-authorize from the user.';
export const TOKEN_IMPERSONATION_DISABLED = 'Token is an impersonation token but impersonation was disabled.';

/** last_used_at is written at most this often per credential: a write per request would cost throughput. */
export const LAST_USED_INTERVAL_MS = 10 * 60 * 1000;

/** Per-route extras that the router's AuthRule does not express. */
export interface AuthOptions {
  /** Scopes that also allow reads on this route (GitLab's `allow_access_with_scope`, e.g. read_user). */
  readScopes?: string[];
}

interface Resolved {
  cred: CredentialRow;
  method: Caller['method'];
}

/**
 * Resolves and checks the caller for a route. Returns null for anonymous requests to public routes
 * (and always for level 'none'); throws an SandboxHttpError (401/403/404) otherwise.
 */
export function authenticate(ctx: RequestContext, rule: AuthRule, options: AuthOptions = {}): Caller | null {
  if (rule.level === 'none') return null;
  const presented = readPresentedCredentials(ctx.headers, ctx.input);
  const resolved = resolve(ctx, presented, rule);
  if (!resolved) {
    // GitLab's sudo! starts with `unauthorized! unless initial_current_user`.
    if (rule.level !== 'public' || presented.sudo !== undefined) throw unauthorized();
    return null;
  }
  const { cred, method } = resolved;
  const scopes = method === 'private_token' || method === 'oauth' ? credentialScopes(cred) : [];
  const write = rule.write ?? !(ctx.method === 'GET' || ctx.method === 'HEAD');
  validateCredential(ctx, cred, method, scopes, write ? ['api'] : ['api', 'read_api', ...(options.readScopes ?? [])]);
  const owner = cred.user_id === null ? undefined : findUserById(ctx.state.db, cred.user_id);
  if (!owner) throw unauthorized();
  if (owner.state !== 'active') throw forbidden(stateMessage(owner.state));
  const caller: Caller = { user: owner, tokenOwner: owner, credential: cred, method, scopes, sudo: false };
  if (presented.sudo !== undefined) applySudo(ctx, caller, presented.sudo);
  if (rule.level === 'admin' && !isEffectiveAdmin(ctx, caller)) throw forbidden();
  touch(ctx, cred);
  return caller;
}

/**
 * Whether the caller acts with administrator rights: an admin user, and with Admin Mode on, a token
 * carrying the `admin_mode` scope (see the module comment for sessions).
 */
export function isEffectiveAdmin(ctx: RequestContext, caller: Caller): boolean {
  return isAdminWith(ctx, caller.user, caller.method, caller.scopes);
}

function isAdminWith(ctx: RequestContext, user: UserRow, method: Caller['method'], scopes: string[]): boolean {
  if (!user.admin) return false;
  if (!isAdminModeOn(ctx.state.db)) return true;
  return (method === 'private_token' || method === 'oauth') && scopes.includes('admin_mode');
}

function resolve(ctx: RequestContext, p: PresentedCredentials, rule: AuthRule): Resolved | null {
  if (p.privateToken !== undefined) return { cred: findAccessToken(ctx, p.privateToken), method: 'private_token' };
  const bearer = p.bearer ?? p.accessToken;
  if (bearer !== undefined) return findOauthOrAccessToken(ctx, bearer);
  if (p.jobToken !== undefined) {
    if (!rule.jobToken) throw unauthorized();
    return { cred: findJobToken(ctx, p.jobToken), method: 'job_token' };
  }
  if (p.session !== undefined) {
    const cred = statements(ctx.state.db).credentialByValue.get(p.session);
    if (cred && cred.type === 'session' && !cred.revoked) return { cred, method: 'session' };
  }
  if (p.deployToken !== undefined) throw unauthorized();
  return null;
}

/**
 * A token minted under an earlier custom prefix is refused outright (spec: Limits 2), unless the
 * value also carries the current or default prefix (a current prefix may extend an old one).
 */
export function hasPreviousPrefix(config: InstanceConfig, value: string): boolean {
  if (value.startsWith('glpat-') || value.startsWith(config.personal_access_token_prefix)) return false;
  return config.previous_prefixes.some((p) => p !== '' && value.startsWith(p));
}

function findAccessToken(ctx: RequestContext, value: Presented): CredentialRow {
  if (value === UNUSABLE || hasPreviousPrefix(ctx.state.config, value)) throw unauthorized();
  const cred = statements(ctx.state.db).credentialByValue.get(value);
  if (!cred || !ACCESS_TOKEN_TYPES.includes(cred.type)) throw unauthorized();
  return cred;
}

function findOauthOrAccessToken(ctx: RequestContext, value: Presented): Resolved {
  if (value === UNUSABLE) throw unauthorized();
  const cred = statements(ctx.state.db).credentialByValue.get(value);
  if (cred && cred.type === 'oauth') return { cred, method: 'oauth' };
  return { cred: findAccessToken(ctx, value), method: 'private_token' };
}

/** A job token works only while its job runs (`extra.status`, default running). */
function findJobToken(ctx: RequestContext, value: Presented): CredentialRow {
  if (value === UNUSABLE) throw unauthorized();
  const cred = statements(ctx.state.db).credentialByValue.get(value);
  if (!cred || cred.type !== 'job' || cred.revoked) throw unauthorized();
  const status = credentialExtra(cred).status ?? 'running';
  if (status !== 'running') throw unauthorized();
  return cred;
}

function validateCredential(
  ctx: RequestContext,
  cred: CredentialRow,
  method: Caller['method'],
  scopes: string[],
  needed: string[],
): void {
  if (method !== 'private_token' && method !== 'oauth') return;
  const expires = expiryMs(cred);
  if (expires !== null && ctx.state.clock.now() >= expires) throw invalidToken(TOKEN_EXPIRED);
  if (cred.revoked) throw invalidToken(TOKEN_REVOKED);
  if (!needed.some((s) => scopes.includes(s))) throw insufficientScope(needed);
  if (cred.type === 'impersonation' && !ctx.state.config.impersonation_enabled)
    throw invalidToken(TOKEN_IMPERSONATION_DISABLED);
}

/** GitLab's rejection messages (`Gitlab::Auth::UserAccessDeniedReason`). */
function stateMessage(state: string): string {
  if (state === 'blocked' || state === 'ldap_blocked' || state === 'blocked_pending_approval')
    return 'Your account has been blocked.';
  if (state === 'deactivated')
    return 'Your account has been deactivated by your administrator. Please log back in to reactivate your account.';
  return 'Your account is not active.';
}

/** GitLab's `sudo!`: admin first, then a token (not a session), then the scope, then the target. */
function applySudo(ctx: RequestContext, caller: Caller, ref: Presented): void {
  if (!isAdminWith(ctx, caller.tokenOwner, caller.method, caller.scopes)) throw forbidden('Must be admin to use sudo');
  if (caller.method !== 'private_token' && caller.method !== 'oauth') {
    throw forbidden('Must be authenticated using an OAuth or Personal Access Token to use sudo');
  }
  if (!caller.scopes.includes('sudo')) throw insufficientScope(['sudo']);
  const shown = ref === UNUSABLE ? '' : ref;
  const target = ref === UNUSABLE ? undefined : findUserByIdOrUsername(ctx.state.db, ref);
  if (!target) throw new SandboxHttpError(404, { message: `404 User with ID or username '${shown}' Not Found` });
  caller.user = target;
  caller.sudo = true;
}

function touch(ctx: RequestContext, cred: CredentialRow): void {
  const now = ctx.state.clock.now();
  const last = cred.last_used_at === null ? Number.NaN : Date.parse(cred.last_used_at);
  if (!Number.isNaN(last) && now - last < LAST_USED_INTERVAL_MS && now >= last) return;
  const iso = new Date(now).toISOString();
  statements(ctx.state.db).touch.run(iso, cred.id);
  cred.last_used_at = iso;
}
