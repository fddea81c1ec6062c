/**
 * Authentication: resolves the caller of a request (tokens, OAuth, job tokens, session cookies, sudo).
 * TODO(#2): this minimal version knows only personal access tokens in PRIVATE-TOKEN / private_token /
 * Bearer and the admin check; the full matrix (OAuth, job tokens, sessions, sudo, scopes, expiry,
 * revocation, impersonation, admin mode) replaces it.
 */
import type { Caller, CredentialRow, RequestContext, UserRow } from './context.js';
import type { AuthRule } from './router.js';
import { forbidden, unauthorized } from './http.js';

function header(ctx: RequestContext, name: string): string | undefined {
  const v = ctx.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Resolves and checks the caller for a route. Returns null for anonymous requests to public routes;
 * throws an ApiError (401/403/404) otherwise.
 */
export function authenticate(ctx: RequestContext, rule: AuthRule): Caller | null {
  if (rule.level === 'none') return null;
  const bearer = header(ctx, 'authorization')?.replace(/^Bearer\s+/i, '');
  const token = header(ctx, 'private-token') ?? (typeof ctx.input.private_token === 'string' ? ctx.input.private_token : undefined) ?? bearer;
  if (!token) {
    if (rule.level === 'public') return null;
    throw unauthorized();
  }
  const db = ctx.state.db;
  const cred = db.prepare("SELECT * FROM credentials WHERE value = ? AND type IN ('personal','impersonation','project_access','group_access')").get(token) as CredentialRow | undefined;
  if (!cred || cred.revoked || cred.user_id === null) throw unauthorized();
  const row = db.prepare('SELECT * FROM users WHERE id = ?').get(cred.user_id) as (Omit<UserRow, 'admin' | 'bot'> & { admin: number; bot: number }) | undefined;
  if (!row) throw unauthorized();
  const user: UserRow = { ...row, admin: row.admin === 1, bot: row.bot === 1 };
  if (rule.level === 'admin' && !user.admin) throw forbidden();
  return { user, tokenOwner: user, credential: cred, method: 'private_token', scopes: JSON.parse(cred.scopes) as string[], sudo: false };
}
