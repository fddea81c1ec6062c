// The authorization matrix: every route the sandbox's router knows, crossed
// with every class of credential, gives the documented status (spec: Authentication, Errors;
// reference §1.1, §6, §7). The route list comes from createRouter(), and a case table must cover
// every route, so a new route cannot slip past. Non-admin cells must leave the database exactly as
// it was and must not show admin-only fields.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { createRouter, startSandbox } from '../src/sandbox/index.js';
import { changeCount, markCredentialsUsed } from './support/sandbox-snapshot.js';

const ROOT = 'glpat-sandbox-root-api-sudo-0001';
const ROOT_READ = 'glpat-sandbox-root-read-api-0002';
const ROOT_ADMIN_MODE = 'glpat-sandbox-root-admin-mode-03';
const EXPIRED = 'glpat-sandbox-root-expired-00004';
const REVOKED = 'glpat-sandbox-root-revoked-00005';
const ALICE = 'glpat-sandbox-alice-api-00000006';
const JOB = 'glcbt-sandbox-job-project-1-0001';
const ROOT_OAUTH = 'sandbox-oauth-access-root-0001';
const ROOT_SESSION = 'sandbox-session-root-0001';
const ALICE_SESSION = 'sandbox-session-alice-0001';

/** Credential classes of the issue, plus an unknown token and a CI job token. */
const CLASSES = {
  none: {},
  invalid: { 'private-token': 'glpat-no-such-token-000000000' },
  expired: { 'private-token': EXPIRED },
  revoked: { 'private-token': REVOKED },
  'non-admin': { 'private-token': ALICE },
  'admin-read_api': { 'private-token': ROOT_READ },
  admin: { 'private-token': ROOT },
  'admin-sudo-admin': { 'private-token': ROOT, sudo: 'OPS-ADMIN' },
  'admin-sudo-non-admin': { 'private-token': ROOT, sudo: '2' },
  'non-admin-sudo': { 'private-token': ALICE, sudo: 'root' },
  'admin-oauth': { authorization: `Bearer ${ROOT_OAUTH}` },
  'admin-session': { cookie: `_service_session=${ROOT_SESSION}` },
  'non-admin-session': { cookie: `_service_session=${ALICE_SESSION}` },
  'admin-session-sudo': { cookie: `_service_session=${ROOT_SESSION}`, sudo: 'alice' },
  'admin-without-sudo-scope-sudo': { 'private-token': ROOT_ADMIN_MODE, sudo: 'alice' },
  'admin-mode-scope': { 'private-token': ROOT_ADMIN_MODE },
  job: { 'job-token': JOB },
} satisfies Record<string, Record<string, string>>;
type Cls = keyof typeof CLASSES;
const CLASS_NAMES = Object.keys(CLASSES) as Cls[];
/**
 * Admin Mode off: every credential of an administrator acts as one. On: only tokens with the
 * `admin_mode` scope; root's other credentials are a regular user's, who owns every item of the
 * default seed (so reads and writes of items still succeed, admin routes and sudo do not).
 */
type Mode = 'admin-mode-off' | 'admin-mode-on';
/** Classes that act with administrator rights. */
const ADMINS: Record<Mode, Cls[]> = {
  'admin-mode-off': ['admin', 'admin-sudo-admin', 'admin-oauth', 'admin-session', 'admin-mode-scope'],
  'admin-mode-on': ['admin-mode-scope'],
};
/** Classes allowed to change state: administrators, and with Admin Mode on root as the owner of every item. */
const WRITERS: Record<Mode, Cls[]> = {
  'admin-mode-off': ADMINS['admin-mode-off'],
  'admin-mode-on': ['admin-mode-scope', 'admin', 'admin-oauth', 'admin-session'],
};
/** Classes that may read what administrators read; every other class must not see admin-only fields. */
const READERS: Record<Mode, Cls[]> = {
  'admin-mode-off': [...ADMINS['admin-mode-off'], 'admin-read_api'],
  'admin-mode-on': ADMINS['admin-mode-on'],
};

const UNAUTHORIZED = { message: '401 Unauthorized' };
const FORBIDDEN = { message: '403 Forbidden' };
const EXPIRED_BODY = {
  error: 'invalid_token',
  error_description: 'Token is expired. You can either do re-authorization or token refresh.',
};
const REVOKED_BODY = {
  error: 'invalid_token',
  error_description: 'Token was revoked. You have to re-authorize from the user.',
};
const SUDO_NOT_ADMIN = { message: '403 Forbidden - Must be admin to use sudo' };
const SUDO_NEEDS_TOKEN = {
  message: '403 Forbidden - Must be authenticated using an OAuth or Personal Access Token to use sudo',
};
const SCOPE_SUDO = {
  error: 'insufficient_scope',
  error_description: 'The request requires higher privileges than provided by the access token.',
  scope: 'sudo',
};
const SCOPE_API = {
  error: 'insufficient_scope',
  error_description: 'The request requires higher privileges than provided by the access token.',
  scope: 'api',
};
/**
 * Classes whose request acts as an administrator user, whatever Admin Mode says: GET /user shows
 * them UserWithAdmin's fields, since GitLab picks that entity by `current_user.admin?`.
 */
const ADMIN_USERS: Cls[] = [
  'admin-read_api',
  'admin',
  'admin-sudo-admin',
  'admin-oauth',
  'admin-session',
  'admin-mode-scope',
];
/** Fields only an administrator may see (projects/snippets/groups, users). */
const ADMIN_ONLY_KEYS = ['repository_storage', 'is_admin', 'note', 'created_by', 'statistics'];

/** Unique names for what successful cells create. */
let counter = 0;
const next = () => ++counter;

interface Case {
  /** `METHOD pattern` of the router's route. */
  route: string;
  name?: string;
  path: () => string;
  body?: () => unknown;
  /**
   * Who the route admits: `admin`, `user` (any authenticated user), `public` (anyone; credentials
   * still checked when given) or `open` (credentials ignored; the route takes its own, or none).
   * Stated here, never read from the router, so a route registered at the wrong level fails.
   */
  level: 'admin' | 'user' | 'public' | 'open';
  /** Status for an authorized administrator. */
  ok: number;
  /** Status for an authenticated non-admin (and an admin acting as one through sudo), on user and public routes. */
  nonAdmin?: number;
  /** Status without credentials on public routes. */
  anonymous?: number;
  /** Status with a CI job token; set only on the routes that accept job tokens. */
  job?: number;
  /** The route needs `api` (not `read_api`); default: any method but GET. */
  write?: boolean;
  /** The answer is not JSON (health). */
  text?: boolean;
}

const commit = () => ({
  branch: 'main',
  commit_message: 'matrix',
  actions: [{ action: 'create', file_path: `f${next()}.txt`, content: 'x' }],
});
const moveTo = () => ({ destination_storage_name: 'cluster' });
const bulk = () => ({ source_storage_name: 'nfs-1', destination_storage_name: 'cluster' });
const geoMutation = () => ({
  query:
    'mutation { geoRegistriesBulkUpdate(input: { registryClass: PROJECT_REPOSITORY_REGISTRY, action: RESYNC_ALL }) { errors } }',
});

/** Moves made before the matrix runs, one per kind, for the "get one" routes. */
const MOVES = { project: 0, snippet: 0, group: 0 };
/** Access tokens (of bob) that DELETE /admin/token cells may revoke, one per cell. */
const spareTokens: string[] = [];

/** The cases; built once per sandbox, since scheduling cells count through fresh items. */
const buildCases = (): Case[] => [
  { route: 'GET /api/v4/user', level: 'user', path: () => '/api/v4/user', ok: 200 },
  { route: 'GET /api/v4/users', level: 'public', path: () => '/api/v4/users', ok: 200 },
  { route: 'GET /api/v4/users/:id', level: 'public', path: () => '/api/v4/users/1', ok: 200 },
  { route: 'GET /api/v4/version', level: 'user', path: () => '/api/v4/version', ok: 200 },
  { route: 'GET /api/v4/metadata', level: 'user', path: () => '/api/v4/metadata', ok: 200 },
  // Any credential but a job token: "404 Job Not Found" (GitLab's validate_current_authenticated_job).
  { route: 'GET /api/v4/job', level: 'user', path: () => '/api/v4/job', ok: 404, nonAdmin: 404, job: 200 },
  { route: 'GET /api/v4/features', level: 'admin', path: () => '/api/v4/features', ok: 200 },
  {
    route: 'POST /api/v4/features/:name',
    level: 'admin',
    path: () => '/api/v4/features/matrix_flag',
    body: () => ({ value: true }),
    ok: 201,
  },
  { route: 'DELETE /api/v4/features/:name', level: 'admin', path: () => '/api/v4/features/matrix_flag', ok: 204 },
  {
    route: 'POST /api/v4/admin/token',
    level: 'admin',
    path: () => '/api/v4/admin/token',
    body: () => ({ token: ROOT_READ }),
    ok: 200,
  },
  {
    route: 'DELETE /api/v4/admin/token',
    level: 'admin',
    path: () => '/api/v4/admin/token',
    body: () => ({ token: spareTokens.pop() }),
    ok: 204,
  },
  // Other methods on the token path answer 405 before authentication (the route's existence is public).
  ...['GET', 'PUT', 'PATCH'].map((m): Case => ({
    route: `${m} /api/v4/admin/token`,
    level: 'open',
    path: () => '/api/v4/admin/token',
    ok: 405,
  })),
  // Routes that take their own credential in the body and ignore API credentials.
  {
    route: 'POST /api/v4/runners/verify',
    level: 'open',
    path: () => '/api/v4/runners/verify',
    body: () => ({ token: 'glrt-sandbox-runner-0001' }),
    ok: 200,
  },
  {
    route: 'POST /api/v4/projects/:id/trigger/pipeline',
    level: 'open',
    path: () => '/api/v4/projects/1/trigger/pipeline',
    body: () => ({ token: 'glptt-sandbox-trigger-0001', ref: 'main' }),
    ok: 201,
  },
  {
    route: 'POST /oauth/token',
    level: 'open',
    path: () => '/oauth/token',
    body: () => ({ grant_type: 'refresh_token', refresh_token: 'x' }),
    ok: 401,
  },
  ...(['project', 'snippet', 'group'] as const).flatMap((kind): Case[] => {
    const plural = `${kind}s`;
    const collection = `/api/v4/${kind}_repository_storage_moves`;
    // A fresh item per cell (ids 3 and up; none starts on cluster): only 20 groups exist.
    let last = kind === 'project' ? 100 : 2;
    const fresh = () => ++last;
    return [
      { route: `GET ${collection}`, level: 'admin', path: () => collection, ok: 200 },
      {
        route: `GET ${collection}/:repository_storage_move_id`,
        level: 'admin',
        path: () => `${collection}/${MOVES[kind]}`,
        ok: 200,
      },
      { route: `POST ${collection}`, level: 'admin', path: () => collection, body: bulk, ok: 202 },
      {
        route: `GET /api/v4/${plural}/:id/repository_storage_moves`,
        level: 'admin',
        path: () => `/api/v4/${plural}/2/repository_storage_moves`,
        ok: 200,
      },
      {
        route: `GET /api/v4/${plural}/:id/repository_storage_moves/:repository_storage_move_id`,
        level: 'admin',
        path: () => `/api/v4/${plural}/2/repository_storage_moves/${MOVES[kind]}`,
        ok: 200,
      },
      {
        route: `POST /api/v4/${plural}/:id/repository_storage_moves`,
        level: 'admin',
        path: () => `/api/v4/${plural}/${fresh()}/repository_storage_moves`,
        body: moveTo,
        ok: 201,
      },
    ];
  }),
  // Writes: only admins and owners (root owns everything in the default seed). Others get 403 on
  // public and internal items, 404 on private ones.
  {
    route: 'POST /api/v4/projects/:id/repository/commits',
    level: 'user',
    path: () => '/api/v4/projects/1/repository/commits',
    body: commit,
    ok: 201,
    nonAdmin: 403,
  },
  {
    route: 'PUT /api/v4/snippets/:id',
    level: 'user',
    path: () => '/api/v4/snippets/1',
    body: () => ({ content: `c${next()}` }),
    ok: 200,
    nonAdmin: 403,
  },
  {
    route: 'POST /api/v4/groups/:id/wikis',
    level: 'user',
    path: () => '/api/v4/groups/1/wikis',
    body: () => ({ title: `t${next()}`, content: 'c' }),
    ok: 201,
    nonAdmin: 404,
  },
  {
    route: 'GET /api/v4/projects',
    level: 'public',
    path: () => '/api/v4/projects?repository_storage=nfs-1&statistics=true',
    ok: 200,
  },
  {
    route: 'GET /api/v4/projects/:id',
    level: 'public',
    name: 'public project',
    path: () => '/api/v4/projects/17?statistics=true',
    ok: 200,
  },
  {
    route: 'GET /api/v4/projects/:id',
    level: 'public',
    name: 'internal project',
    path: () => '/api/v4/projects/1',
    ok: 200,
    anonymous: 404,
  },
  {
    route: 'GET /api/v4/projects/:id',
    level: 'public',
    name: 'private project',
    path: () => '/api/v4/projects/3',
    ok: 200,
    nonAdmin: 404,
    anonymous: 404,
  },
  // Fork networks: a project's forks, 404 to whoever cannot see the project.
  {
    route: 'GET /api/v4/projects/:id/forks',
    level: 'public',
    name: 'public project',
    path: () => '/api/v4/projects/17/forks',
    ok: 200,
  },
  {
    route: 'GET /api/v4/projects/:id/forks',
    level: 'public',
    name: 'private project',
    path: () => '/api/v4/projects/3/forks',
    ok: 200,
    nonAdmin: 404,
    anonymous: 404,
  },
  // A project's refs (download_code): the public project to everyone, the private one only to its owner and admins.
  ...(
    [
      ['GET /api/v4/projects/:id/repository/branches', 'repository/branches'],
      ['GET /api/v4/projects/:id/repository/branches/:branch', 'repository/branches/main'],
      ['GET /api/v4/projects/:id/repository/tags', 'repository/tags'],
    ] as const
  ).flatMap(([route, rest]) => [
    { route, level: 'public' as const, name: 'public project', path: () => `/api/v4/projects/17/${rest}`, ok: 200 },
    {
      route,
      level: 'public' as const,
      name: 'private project',
      path: () => `/api/v4/projects/3/${rest}`,
      ok: 200,
      nonAdmin: 404,
      anonymous: 404,
    },
  ]),
  { route: 'GET /api/v4/snippets', level: 'user', path: () => '/api/v4/snippets', ok: 200 },
  { route: 'GET /api/v4/snippets/public', level: 'user', path: () => '/api/v4/snippets/public', ok: 200 },
  { route: 'GET /api/v4/snippets/all', level: 'user', path: () => '/api/v4/snippets/all', ok: 200 },
  // Fetch statistics: the Reporter role (root owns every seeded project); 404 to whoever cannot see it.
  {
    route: 'GET /api/v4/projects/:id/statistics',
    level: 'user',
    name: 'private project',
    path: () => '/api/v4/projects/3/statistics',
    ok: 200,
    nonAdmin: 404,
  },
  {
    route: 'GET /api/v4/snippets/:id',
    level: 'user',
    name: 'public snippet',
    path: () => '/api/v4/snippets/1',
    ok: 200,
  },
  {
    route: 'GET /api/v4/snippets/:id',
    level: 'user',
    name: 'private snippet',
    path: () => '/api/v4/snippets/3',
    ok: 200,
    nonAdmin: 404,
  },
  { route: 'GET /api/v4/groups', level: 'public', path: () => '/api/v4/groups', ok: 200 },
  { route: 'GET /api/v4/groups/:id', level: 'public', name: 'public group', path: () => '/api/v4/groups/5', ok: 200 },
  {
    route: 'GET /api/v4/groups/:id',
    level: 'public',
    name: 'private group',
    path: () => '/api/v4/groups/1',
    ok: 200,
    nonAdmin: 404,
    anonymous: 404,
  },
  // A group's namespace is read via membership (GitLab's read_namespace_via_membership): a public
  // group's non-members get 404 too. The sandbox's groups are root's (owner_id), its members' stand-in.
  {
    route: 'GET /api/v4/namespaces/:id',
    level: 'user',
    name: 'a group',
    path: () => '/api/v4/namespaces/group-5',
    ok: 200,
    nonAdmin: 404,
  },
  // `authenticated_as_admin!`, then the project: where its repository is on disk.
  { route: 'GET /api/v4/projects/:id/storage', level: 'admin', path: () => '/api/v4/projects/1/storage', ok: 200 },
  { route: 'GET /api/v4/application/settings', level: 'admin', path: () => '/api/v4/application/settings', ok: 200 },
  {
    route: 'PUT /api/v4/application/settings',
    level: 'admin',
    path: () => '/api/v4/application/settings',
    body: () => ({ repository_storages_weighted: { default: 100 } }),
    ok: 200,
  },
  { route: 'GET /-/health', level: 'open', path: () => '/-/health', ok: 200, text: true },
  { route: 'GET /-/liveness', level: 'open', path: () => '/-/liveness', ok: 200 },
  { route: 'GET /-/readiness', level: 'open', path: () => '/-/readiness?all=1', ok: 200 },
  // The exporters a real instance's Prometheus scrapes (monitoring allowlist, no credentials).
  ...(
    [
      '/-/sandbox/node-exporter/metrics',
      '/-/sandbox/gitaly/metrics',
      '/-/sandbox/sidekiq/metrics',
      '/-/sandbox/gitlab-exporter/sidekiq',
    ] as const
  ).map((path) => ({ route: `GET ${path}`, level: 'open' as const, path: () => path, ok: 200, text: true })),
  { route: 'GET /api/v4/sidekiq/queue_metrics', level: 'admin', path: () => '/api/v4/sidekiq/queue_metrics', ok: 200 },
  // Sandbox-only: the internal item state GitLab keeps out of its entities.
  { route: 'GET /-/sandbox/items/:kind/:id', level: 'admin', path: () => '/-/sandbox/items/project/1', ok: 200 },
  { route: 'GET /-/sandbox/pools', level: 'admin', path: () => '/-/sandbox/pools', ok: 200 },
  {
    route: 'GET /-/sandbox/moves/:kind/:id',
    level: 'admin',
    path: () => `/-/sandbox/moves/project/${MOVES.project}`,
    ok: 200,
  },
  { route: 'GET /api/v4/geo_sites', level: 'admin', path: () => '/api/v4/geo_sites', ok: 200 },
  { route: 'GET /api/v4/geo_sites/status', level: 'admin', path: () => '/api/v4/geo_sites/status', ok: 200 },
  { route: 'GET /api/v4/geo_sites/:id', level: 'admin', path: () => '/api/v4/geo_sites/2', ok: 200 },
  { route: 'GET /api/v4/geo_sites/:id/status', level: 'admin', path: () => '/api/v4/geo_sites/2/status', ok: 200 },
  { route: 'GET /api/v4/geo_nodes', level: 'admin', path: () => '/api/v4/geo_nodes', ok: 200 },
  { route: 'GET /api/v4/geo_nodes/status', level: 'admin', path: () => '/api/v4/geo_nodes/status', ok: 200 },
  { route: 'GET /api/v4/geo_nodes/:id', level: 'admin', path: () => '/api/v4/geo_nodes/2', ok: 200 },
  { route: 'GET /api/v4/geo_nodes/:id/status', level: 'admin', path: () => '/api/v4/geo_nodes/2/status', ok: 200 },
  // GraphQL answers 200 with `errors` to callers without the rights; the state check proves nothing was recorded.
  { route: 'POST /api/graphql', level: 'public', path: () => '/api/graphql', body: geoMutation, ok: 200 },
  {
    route: 'POST /api/v4/geo/node_proxy/:id/graphql',
    level: 'admin',
    path: () => '/api/v4/geo/node_proxy/2/graphql',
    body: geoMutation,
    ok: 200,
  },
];

interface Expected {
  status: number;
  body?: unknown;
}

/** The documented answer for a case and a credential class. */
function expected(
  c: Case,
  level: 'admin' | 'user' | 'public' | 'open',
  write: boolean,
  jobRoute: boolean,
  cls: Cls,
  mode: Mode,
): Expected {
  if (level === 'open') return { status: c.ok };
  const adminModeOn = mode === 'admin-mode-on';
  switch (cls) {
    case 'none':
      return level === 'public' ? { status: c.anonymous ?? c.ok } : { status: 401, body: UNAUTHORIZED };
    case 'invalid':
      return { status: 401, body: UNAUTHORIZED };
    case 'expired':
      return { status: 401, body: EXPIRED_BODY };
    case 'revoked':
      return { status: 401, body: REVOKED_BODY };
    // A job token works only where the route accepts one; anywhere else it is an invalid credential.
    case 'job':
      return jobRoute ? { status: c.job ?? c.ok } : { status: 401, body: UNAUTHORIZED };
    case 'non-admin-sudo':
      return { status: 403, body: SUDO_NOT_ADMIN };
    case 'admin-read_api':
      if (write) return { status: 403, body: SCOPE_API };
      return adminModeOn && level === 'admin' ? { status: 403, body: FORBIDDEN } : { status: c.ok };
    // Sudo asks for an administrator first: with Admin Mode on, root without the admin_mode scope is none.
    case 'admin-session-sudo':
      return { status: 403, body: adminModeOn ? SUDO_NOT_ADMIN : SUDO_NEEDS_TOKEN };
    case 'admin-sudo-admin':
    case 'admin-sudo-non-admin':
      if (adminModeOn) return { status: 403, body: SUDO_NOT_ADMIN };
      if (cls === 'admin-sudo-admin') return { status: c.ok };
      return level === 'admin' ? { status: 403, body: FORBIDDEN } : { status: c.nonAdmin ?? c.ok };
    case 'admin-without-sudo-scope-sudo':
      return { status: 403, body: SCOPE_SUDO };
    case 'admin-mode-scope':
      return { status: c.ok };
    case 'admin':
    case 'admin-oauth':
    case 'admin-session':
      return adminModeOn && level === 'admin' ? { status: 403, body: FORBIDDEN } : { status: c.ok };
    case 'non-admin':
    case 'non-admin-session':
      return level === 'admin' ? { status: 403, body: FORBIDDEN } : { status: c.nonAdmin ?? c.ok };
  }
}

function adminOnlyKeysIn(value: unknown, found: Set<string> = new Set()): Set<string> {
  if (Array.isArray(value)) for (const v of value) adminOnlyKeysIn(v, found);
  else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      if (ADMIN_ONLY_KEYS.includes(k)) found.add(k);
      adminOnlyKeysIn(v, found);
    }
  }
  return found;
}

function describeMatrix(mode: Mode): void {
  describe(`authorization matrix, ${mode}: every route x every credential class`, () => {
    let sb: RunningSandbox;
    const routes = createRouter().routes;
    const cases = buildCases();

    beforeAll(async () => {
      sb = await startSandbox();
      // Nothing may change the database behind the test's back: the engine only runs the moves the
      // matrix schedules, and the change count must see requests' effects alone.
      sb.state.engine.close();
      for (const kind of ['project', 'snippet', 'group'] as const) {
        const res = await fetch(`${sb.url}/api/v4/${kind}s/2/repository_storage_moves`, {
          method: 'POST',
          headers: { 'private-token': ROOT, 'content-type': 'application/json' },
          body: JSON.stringify(moveTo()),
        });
        expect(res.status).toBe(201);
        MOVES[kind] = ((await res.json()) as { id: number }).id;
      }
      const now = new Date().toISOString();
      const insert = sb.state.db
        .prepare(`INSERT INTO credentials (type, value, user_id, name, scopes, expires_at, created_at, updated_at)
        VALUES ('personal', ?, 3, 'spare', '["api"]', '2099-01-01', ?, ?)`);
      spareTokens.length = 0;
      for (let i = 0; i < CLASS_NAMES.length; i++) {
        const value = `glpat-matrix-spare-bob-${String(i).padStart(8, '0')}`;
        insert.run(value, now, now);
        spareTokens.push(value);
      }
      if (mode === 'admin-mode-on') {
        const res = await fetch(`${sb.url}/api/v4/application/settings`, {
          method: 'PUT',
          headers: { 'private-token': ROOT, 'content-type': 'application/json' },
          body: '{"admin_mode":true}',
        });
        expect(res.status).toBe(200);
      }
      markCredentialsUsed(sb.state);
    });
    afterAll(async () => {
      await sb.close();
    });

    it('has a case for every route of the router, and no case for a route that does not exist', () => {
      const known = new Set(routes.map((r) => `${r.method} ${r.pattern}`));
      const covered = new Set(cases.map((c) => c.route));
      expect([...known].filter((k) => !covered.has(k))).toEqual([]);
      expect([...covered].filter((k) => !known.has(k))).toEqual([]);
    });

    const cells = cases.flatMap((c) =>
      CLASS_NAMES.map((cls) => [`${c.route}${c.name ? ` (${c.name})` : ''} as ${cls}`, c, cls] as const),
    );

    it.each(cells)('%s', async (_label, c, cls) => {
      const [method, pattern] = c.route.split(' ') as [string, string];
      const route = routes.find((r) => r.method === method && r.pattern === pattern);
      expect(route, c.route).toBeDefined();
      const want = expected(c, c.level, c.write ?? method !== 'GET', c.job !== undefined, cls, mode);

      const before = changeCount(sb.state);
      const body = c.body?.();
      const headers: Record<string, string> = { ...CLASSES[cls] };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${sb.url}${c.path()}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      const changed = changeCount(sb.state) - before;

      expect(res.status, `${c.route} as ${cls}: ${text.slice(0, 300)}`).toBe(want.status);
      let parsed: unknown;
      if (res.status !== 204 && !c.text) {
        expect(res.headers.get('content-type'), text.slice(0, 200)).toMatch(/^application\/json/);
        parsed = JSON.parse(text);
      }
      if (want.body !== undefined) expect(parsed).toEqual(want.body);
      if (!WRITERS[mode].includes(cls)) expect(changed, `${c.route} as ${cls} changed state`).toBe(0);
      const adminSelf = c.route === 'GET /api/v4/user' && ADMIN_USERS.includes(cls) && res.status === 200;
      if (adminSelf) expect(parsed, `${c.route} as ${cls}`).toMatchObject({ is_admin: true });
      if (!READERS[mode].includes(cls) && !adminSelf) {
        expect([...adminOnlyKeysIn(parsed)], `${c.route} as ${cls} shows admin-only fields`).toEqual([]);
        // Only GET /user shows an email address: the caller's own.
        if (c.route !== 'GET /api/v4/user')
          expect(text, `${c.route} as ${cls} shows an email address`).not.toMatch(/"(commit_)?email":/);
      }
      if (!ADMINS[mode].includes(cls) && c.route === 'POST /api/graphql' && res.status === 200) {
        expect((parsed as { errors?: unknown[] }).errors).toBeDefined();
      }
    });
  });
}

describeMatrix('admin-mode-off');
describeMatrix('admin-mode-on');

describe('admin-only data through search', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox();
    sb.state.engine.close();
  });
  afterAll(async () => {
    await sb.close();
  });

  const usernames = async (search: string, headers: Record<string, string>): Promise<string[]> => {
    const res = await fetch(`${sb.url}/api/v4/users?search=${encodeURIComponent(search)}`, { headers });
    expect(res.status).toBe(200);
    return ((await res.json()) as { username: string }[]).map((u) => u.username);
  };

  // Regression: /users?search= matched part of anyone's private email, an oracle for addresses.
  it.each([
    ['none', {}],
    ['non-admin', { 'private-token': ALICE }],
    ['admin-read_api', { 'private-token': ROOT_READ }],
  ] as const)(
    'finds nobody by email address as %s unless an administrator asks, and then only by the whole address',
    async (cls, headers) => {
      const admin = cls === 'admin-read_api';
      for (const q of ['example.com', 'alice@', 'noreply', '@']) expect(await usernames(q, headers), q).toEqual([]);
      expect(await usernames('ALICE@example.com', headers)).toEqual(admin ? ['alice'] : []);
      expect(await usernames('liddell', headers)).toEqual(['alice']);
    },
  );
});
