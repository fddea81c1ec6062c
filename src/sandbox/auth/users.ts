/**
 * GET /user, /users, /users/:id, /version (and /metadata), /job and the Features API (GET/POST/DELETE /features).
 *
 * Choices where the spec and reference are silent:
 * - /user and /users accept the `read_user` scope for reads (GitLab's `allow_access_with_scope`);
 *   those routes therefore authenticate in the handler, with that option.
 * - GET /job with a credential that is not a job token answers 404 "Job Not Found", as GitLab's
 *   `validate_current_authenticated_job` does.
 * - GET /user shows UserWithAdmin's fields (`is_admin` ...) to every administrator, Admin Mode or
 *   not (GitLab's `current_user.admin?`); under sudo they follow the impersonated user.
 * - `enterprise` in /version and /metadata is GitLab's `Gitlab.ee?`: true for every EE build (licensed or not), false on CE.
 * - `search` on /users matches part of a username or name; only administrators also find a user
 *   by the whole email address (GitLab searches private emails for admins only), so nobody else
 *   can probe for addresses.
 * - The Features API stores booleans only (`value` true/false or "true"/"false"); percentage gates
 *   are refused with 400, since nothing in the sandbox evaluates them.
 */
import type Database from 'better-sqlite3';
import type { RequestContext, UserRow, Reply } from '../http/context.js';
import { SandboxHttpError, invalidParam, notFound } from '../http/errors.js';
import type { Router } from '../http/router.js';
import { authenticate, isEffectiveAdmin } from './authenticate.js';
import type { RawUserRow } from './store.js';
import { findUserById, statements, toUser } from './store.js';
import { adminFields, jobRecord, userBasic, userEntity, userPublic } from './entities.js';
import { perDatabase } from '../db.js';

const READ_USER = { readScopes: ['read_user'] };

/** Adds the users, version/metadata, job and Features API routes to the router. */
export function register(router: Router): void {
  router.get('/api/v4/user', { level: 'none' }, currentUser);
  router.get('/api/v4/users', { level: 'none' }, listUsers);
  router.get('/api/v4/users/:id', { level: 'none' }, showUser);
  // /metadata is the current name (GitLab 15.2+, what @gitbeaker's Metadata calls); /version the older one.
  router.get('/api/v4/version', { level: 'user' }, version);
  router.get('/api/v4/metadata', { level: 'user' }, version);
  router.get('/api/v4/job', { level: 'user', jobToken: true }, currentJob);
  router.get('/api/v4/features', { level: 'admin' }, listFeatures);
  router.post('/api/v4/features/:name', { level: 'admin' }, setFeature);
  router.delete('/api/v4/features/:name', { level: 'admin' }, removeFeature);
}

/** `q`: a LIKE pattern for username and name; `email`: an exact address (admins only), or null. */
interface SearchParams {
  q: string;
  email: string | null;
}

interface UserStatements {
  page: Database.Statement<[SearchParams & { limit: number; offset: number }], RawUserRow>;
  count: Database.Statement<[SearchParams], { n: number }>;
  features: Database.Statement<[], { name: string; value: string }>;
  setFeature: Database.Statement<[string, string]>;
  removeFeature: Database.Statement<[string]>;
}

const userStatements = perDatabase((db): UserStatements => ({
  // `search` matches a part of the username or name, case-insensitively (SQLite LIKE is, for
  // ASCII), or, for administrators only, the whole email address (GitLab's User.search with
  // `with_private_emails`). Users have no public email here, so others never match on email.
  page: db.prepare(`SELECT * FROM users WHERE (username LIKE @q ESCAPE '\\' OR name LIKE @q ESCAPE '\\' OR lower(email) = lower(@email))
    ORDER BY id LIMIT @limit OFFSET @offset`),
  count: db.prepare(
    `SELECT count(*) n FROM users WHERE (username LIKE @q ESCAPE '\\' OR name LIKE @q ESCAPE '\\' OR lower(email) = lower(@email))`,
  ),
  features: db.prepare('SELECT name, value FROM features ORDER BY name'),
  setFeature: db.prepare(
    'INSERT INTO features (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value',
  ),
  removeFeature: db.prepare('DELETE FROM features WHERE name = ?'),
}));

function currentUser(ctx: RequestContext): Reply {
  const caller = authenticate(ctx, { level: 'user' }, READ_USER);
  ctx.caller = caller;
  if (!caller) throw new SandboxHttpError(401, { message: '401 Unauthorized' });
  // GitLab picks UserWithAdmin by `current_user.admin?`, which ignores Admin Mode: an administrator
  // whose token lacks `admin_mode` still sees `is_admin: true` here, and then 403 on admin routes.
  return { body: userPublic(caller.user, ctx.origin, caller.user.admin) };
}

/** A positive integer query parameter (Grape's Integer coercion), or the default. */
function positiveInt(ctx: RequestContext, name: string, dflt: number): number {
  const v = ctx.input[name];
  if (v === undefined || v === '') return dflt;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw invalidParam(`${name} is invalid`);
  return n;
}

function listUsers(ctx: RequestContext): Reply {
  const caller = authenticate(ctx, { level: 'public' }, READ_USER);
  ctx.caller = caller;
  const admin = caller !== null && isEffectiveAdmin(ctx, caller);
  const present = (u: UserRow) =>
    admin ? { ...userEntity(u, ctx.origin), ...adminFields(u) } : userBasic(u, ctx.origin);
  const { db } = ctx.state;
  const username = ctx.input.username;
  if (username !== undefined) {
    if (typeof username !== 'string') throw invalidParam('username is invalid');
    const row = statements(db).userByUsername.get(username);
    const list = row ? [present(toUser(row))] : [];
    return { body: list, headers: pageHeaders(1, 20, list.length) };
  }
  const search = ctx.input.search ?? '';
  if (typeof search !== 'string') throw invalidParam('search is invalid');
  const where: SearchParams = {
    q: `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`,
    email: admin && search !== '' ? search : null,
  };
  const page = positiveInt(ctx, 'page', 1);
  const perPage = Math.min(positiveInt(ctx, 'per_page', 20), 100);
  const s = userStatements(db);
  const total = s.count.get(where)?.n ?? 0;
  const rows =
    (page - 1) * perPage > total ? [] : s.page.all({ ...where, limit: perPage, offset: (page - 1) * perPage });
  return { body: rows.map((r) => present(toUser(r))), headers: pageHeaders(page, perPage, total) };
}

function pageHeaders(page: number, perPage: number, total: number): Record<string, string> {
  const pages = Math.max(1, Math.ceil(total / perPage));
  return {
    'x-page': String(page),
    'x-per-page': String(perPage),
    'x-total': String(total),
    'x-total-pages': String(pages),
    'x-next-page': page < pages ? String(page + 1) : '',
    'x-prev-page': page > 1 ? String(page - 1) : '',
  };
}

function showUser(ctx: RequestContext): Reply {
  const caller = authenticate(ctx, { level: 'public' }, READ_USER);
  ctx.caller = caller;
  const raw = ctx.params.id ?? '';
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw invalidParam('id is invalid');
  const user = findUserById(ctx.state.db, Number(raw));
  if (!user) throw notFound('User');
  const admin = caller !== null && isEffectiveAdmin(ctx, caller);
  return { body: admin ? { ...userEntity(user, ctx.origin), ...adminFields(user) } : userEntity(user, ctx.origin) };
}

/** A stable, made-up revision per version, so clients that print it get something sensible. */
function revisionOf(version: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < version.length; i++) h = Math.imul(h ^ version.charCodeAt(i), 16777619);
  const g = Math.imul(h ^ 0x5bd1e995, 2246822519);
  return (h >>> 0).toString(16).padStart(8, '0') + (g >>> 0).toString(16).padStart(8, '0').slice(0, 3);
}

function version(ctx: RequestContext): Reply {
  const { config } = ctx.state;
  return {
    body: {
      version: config.version,
      revision: revisionOf(config.version),
      kas: { enabled: false, externalUrl: null, externalK8sProxyUrl: null, version: null },
      enterprise: (config as { edition?: string }).edition !== 'ce',
    },
  };
}

function currentJob(ctx: RequestContext): Reply {
  const caller = ctx.caller;
  if (!caller || caller.method !== 'job_token' || !caller.credential) throw notFound('Job');
  return { body: jobRecord(ctx.state.db, caller.credential, ctx.origin) };
}

function featureRecord(name: string, on: boolean): Record<string, unknown> {
  return { name, state: on ? 'on' : 'off', gates: [{ key: 'boolean', value: on }], definition: null };
}

function listFeatures(ctx: RequestContext): Reply {
  const rows = userStatements(ctx.state.db).features.all();
  return {
    body: rows.map((r) => {
      let on = false;
      try {
        on = JSON.parse(r.value) === true;
      } catch {
        // A value not written as JSON counts as off.
      }
      return featureRecord(r.name, on);
    }),
  };
}

const FEATURE_NAME = /^[a-z][a-z0-9_]{0,254}$/;

function featureName(ctx: RequestContext): string {
  const name = ctx.params.name ?? '';
  if (!FEATURE_NAME.test(name)) throw invalidParam('name is invalid');
  return name;
}

function setFeature(ctx: RequestContext): Reply {
  const name = featureName(ctx);
  const v = ctx.input.value;
  if (v === undefined || v === null || v === '') throw invalidParam('value is missing');
  let on: boolean;
  if (v === true || v === 'true') on = true;
  else if (v === false || v === 'false') on = false;
  else throw invalidParam('value is invalid');
  userStatements(ctx.state.db).setFeature.run(name, JSON.stringify(on));
  ctx.state.log.info({ feature: name, on }, 'feature flag set');
  return { status: 201, body: featureRecord(name, on) };
}

function removeFeature(ctx: RequestContext): Reply {
  const name = featureName(ctx);
  userStatements(ctx.state.db).removeFeature.run(name);
  return { status: 204 };
}
