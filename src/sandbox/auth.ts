/**
 * Authentication: resolves the caller of a request (tokens, OAuth, job tokens, session cookies, sudo).
 * TODO(#2): implementation.
 */
import type { Caller, RequestContext } from './context.js';
import type { AuthRule } from './router.js';
import { unauthorized } from './http.js';

/**
 * Resolves and checks the caller for a route. Returns null for anonymous requests to public routes;
 * throws an ApiError (401/403/404) otherwise.
 */
export function authenticate(ctx: RequestContext, rule: AuthRule): Caller | null {
  void ctx;
  if (rule.level === 'public' || rule.level === 'none') return null;
  throw unauthorized();
}
