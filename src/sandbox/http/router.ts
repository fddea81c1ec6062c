/**
 * A small path router: `/api/v4/projects/:id/repository_storage_moves`. Params are decoded; a
 * path that matches with another method yields 405, none at all 404. A route marked `ee` is GitLab
 * code under `ee/`: the server treats it as absent on the Community Edition; a route with `since`
 * is absent on releases older than that one.
 */
import type { RequestContext, Reply } from './context.js';

/** Who may call a route. `write` defaults to true for every method but GET/HEAD. */
export interface AuthRule {
  /** public: no credentials needed (but optional ones are resolved); user: any authenticated user; admin: administrators. */
  level: 'public' | 'user' | 'admin' | 'none';
  /** Needs the `api` scope rather than `read_api`. */
  write?: boolean;
  /** Job tokens are accepted here (and only on such routes). */
  jobToken?: boolean;
}

export type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;

export interface RouteOptions {
  /** The route is defined under GitLab's `ee/` tree, so the Community Edition does not have it. */
  ee?: boolean;
  /** The first GitLab release (major, minor) that mounts the route; before it there is no such route. */
  since?: readonly [number, number];
}

export interface Route {
  method: string;
  pattern: string;
  auth: AuthRule;
  handler: Handler;
  segments: string[];
  ee: boolean;
  since: readonly [number, number] | null;
}

export type Match =
  | { kind: 'found'; route: Route; params: Record<string, string> }
  | { kind: 'method-not-allowed'; allowed: string[] }
  | { kind: 'not-found' };

export class Router {
  readonly routes: Route[] = [];
  /** The routes by number of segments, in the order they were added: only those can match a path. */
  private readonly byLength = new Map<number, Route[]>();

  add(method: string, pattern: string, auth: AuthRule, handler: Handler, options: RouteOptions = {}): this {
    const route: Route = {
      method,
      pattern,
      auth,
      handler,
      segments: pattern.split('/').filter(Boolean),
      ee: options.ee === true,
      since: options.since ?? null,
    };
    this.routes.push(route);
    const same = this.byLength.get(route.segments.length);
    if (same) same.push(route);
    else this.byLength.set(route.segments.length, [route]);
    return this;
  }

  get(pattern: string, auth: AuthRule, handler: Handler, options?: RouteOptions): this {
    return this.add('GET', pattern, auth, handler, options);
  }
  post(pattern: string, auth: AuthRule, handler: Handler, options?: RouteOptions): this {
    return this.add('POST', pattern, auth, handler, options);
  }
  put(pattern: string, auth: AuthRule, handler: Handler, options?: RouteOptions): this {
    return this.add('PUT', pattern, auth, handler, options);
  }
  delete(pattern: string, auth: AuthRule, handler: Handler, options?: RouteOptions): this {
    return this.add('DELETE', pattern, auth, handler, options);
  }

  /**
   * The route for `method` and `path` among those `present` keeps (every route by default): a
   * route the instance does not have counts neither for a match nor for a 405's `allowed`.
   */
  match(method: string, path: string, present: (route: Route) => boolean = () => true): Match {
    let parts: string[];
    try {
      parts = path
        .split('/')
        .filter(Boolean)
        .map((p) => decodeURIComponent(p));
    } catch {
      return { kind: 'not-found' };
    }
    const allowed: string[] = [];
    for (const route of this.byLength.get(parts.length) ?? []) {
      if (!present(route)) continue;
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      const wanted = method === 'HEAD' ? 'GET' : method;
      if (route.method === wanted) return { kind: 'found', route, params };
      allowed.push(route.method);
    }
    return allowed.length > 0 ? { kind: 'method-not-allowed', allowed } : { kind: 'not-found' };
  }
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | null {
  if (pattern.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i] as string;
    const v = parts[i] as string;
    if (p.startsWith(':')) params[p.slice(1)] = v;
    else if (p !== v) return null;
  }
  return params;
}
