// The authentication matrix over real HTTP (spec: Authentication; reference §7): every way to pass
// a credential, crossed with valid / invalid / expired / revoked / scope / admin / admin mode /
// sudo / impersonation, plus OAuth refresh and expiry under an injected clock.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Gitlab } from '@gitbeaker/rest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { getMeta, setMeta } from '../src/sandbox/db.js';
import { realTimersAt } from './support/fake-clock.js';

const ROOT = 'glpat-sandbox-root-api-sudo-0001';
const ROOT_READ = 'glpat-sandbox-root-read-api-0002';
const ROOT_ADMIN_MODE = 'glpat-sandbox-root-admin-mode-03';
const EXPIRED = 'glpat-sandbox-root-expired-00004';
const REVOKED = 'glpat-sandbox-root-revoked-00005';
const ALICE = 'glpat-sandbox-alice-api-00000006';
const OLD_PREFIX = 'acme-sandbox-root-old-prefix-007';
const IMPERSONATION = 'glpat-sandbox-impersonate-alice8';
const PROJECT_BOT = 'glpat-sandbox-project-1-bot-0009';
const GROUP_BOT = 'glpat-sandbox-group-1-bot-000010';
const OAUTH = 'sandbox-oauth-access-root-0001';
const OAUTH_REFRESH = 'sandbox-oauth-refresh-root-0001';
const SESSION_ALICE = 'sandbox-session-alice-0001';
const SESSION_ROOT = 'sandbox-session-root-0001';
const JOB = 'glcbt-sandbox-job-project-1-0001';
const DEPLOY = 'gldt-sandbox-deploy-0001';
const APP = {
  client_id: 'sandbox-app-uid',
  client_secret: 'gloas-sandbox-application-secret-0001',
  redirect_uri: 'http://localhost/cb',
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
const IMPERSONATION_BODY = {
  error: 'invalid_token',
  error_description: 'Token is an impersonation token but impersonation was disabled.',
};
const scopeBody = (scope: string) => ({
  error: 'insufficient_scope',
  error_description: 'The request requires higher privileges than provided by the access token.',
  scope,
});

/** The default seed without inventory: these tests need users and credentials only. */
function seed(change: (s: Seed) => void = () => {}): Seed {
  const s = structuredClone(loadSeed());
  s.inventory = {};
  change(s);
  return s;
}

type Via =
  'header' | 'param' | 'bearer' | 'access_token' | 'job-header' | 'job-param' | 'cookie' | 'deploy-header' | 'none';

interface Call {
  method?: string;
  path: string;
  via?: Via;
  token?: string;
  headers?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
}

async function call(sb: RunningSandbox, c: Call): Promise<{ status: number; body: unknown; headers: Headers }> {
  const url = new URL(c.path, sb.url);
  const headers: Record<string, string> = { ...(c.headers ?? {}) };
  const t = c.token ?? '';
  switch (c.via ?? 'none') {
    case 'header':
      headers['private-token'] = t;
      break;
    case 'param':
      url.searchParams.set('private_token', t);
      break;
    case 'bearer':
      headers.authorization = `Bearer ${t}`;
      break;
    case 'access_token':
      url.searchParams.set('access_token', t);
      break;
    case 'job-header':
      headers['job-token'] = t;
      break;
    case 'job-param':
      url.searchParams.set('job_token', t);
      break;
    case 'cookie':
      headers.cookie = `theme=dark; _service_session=${t}; other=1`;
      break;
    case 'deploy-header':
      headers['deploy-token'] = t;
      break;
    case 'none':
      break;
  }
  for (const [k, v] of Object.entries(c.query ?? {})) url.searchParams.set(k, v);
  let body: string | undefined;
  if (c.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = typeof c.body === 'string' ? c.body : JSON.stringify(c.body);
  }
  const res = await fetch(url, { method: c.method ?? 'GET', headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // plain text stays text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

interface Row {
  name: string;
  call: Call;
  status: number;
  /** Exact body, or for 200 the username acting (`as`). */
  body?: unknown;
  as?: string;
}

const USER = '/api/v4/user';
const PUBLIC = '/api/v4/users/1';
const ADMIN_READ = '/api/v4/features';
const ADMIN_WRITE = '/api/v4/features/sandbox_test_flag';
const JOB_ROUTE = '/api/v4/job';

async function check(sb: RunningSandbox, row: Row): Promise<void> {
  const res = await call(sb, row.call);
  expect({ status: res.status, body: row.body === undefined ? undefined : res.body }, row.name).toEqual({
    status: row.status,
    body: row.body,
  });
  if (row.as !== undefined) expect((res.body as { username?: string }).username, row.name).toBe(row.as);
}

const ACCESS_VIAS: Via[] = ['header', 'param', 'bearer', 'access_token'];

const MATRIX: Row[] = [
  { name: 'no credentials on a user route', call: { path: USER }, status: 401, body: UNAUTHORIZED },
  { name: 'no credentials on a public route', call: { path: PUBLIC }, status: 200, as: 'root' },
  { name: 'no credentials on an admin route', call: { path: ADMIN_READ }, status: 401, body: UNAUTHORIZED },
  ...ACCESS_VIAS.flatMap((via): Row[] => [
    { name: `personal token via ${via}`, call: { path: USER, via, token: ROOT }, status: 200, as: 'root' },
    {
      name: `impersonation token via ${via}`,
      call: { path: USER, via, token: IMPERSONATION },
      status: 200,
      as: 'alice',
    },
    {
      name: `project token via ${via}`,
      call: { path: USER, via, token: PROJECT_BOT },
      status: 200,
      as: 'project_1_bot',
    },
    { name: `group token via ${via}`, call: { path: USER, via, token: GROUP_BOT }, status: 200, as: 'group_1_bot' },
    {
      name: `invalid token via ${via}`,
      call: { path: USER, via, token: 'glpat-nope' },
      status: 401,
      body: UNAUTHORIZED,
    },
    {
      name: `invalid token via ${via} on a public route`,
      call: { path: PUBLIC, via, token: 'glpat-nope' },
      status: 401,
      body: UNAUTHORIZED,
    },
    { name: `expired token via ${via}`, call: { path: USER, via, token: EXPIRED }, status: 401, body: EXPIRED_BODY },
    { name: `revoked token via ${via}`, call: { path: USER, via, token: REVOKED }, status: 401, body: REVOKED_BODY },
    {
      name: `previous-prefix token via ${via}`,
      call: { path: USER, via, token: OLD_PREFIX },
      status: 401,
      body: UNAUTHORIZED,
    },
    { name: `deploy token via ${via}`, call: { path: USER, via, token: DEPLOY }, status: 401, body: UNAUTHORIZED },
    { name: `job token via ${via}`, call: { path: JOB_ROUTE, via, token: JOB }, status: 401, body: UNAUTHORIZED },
    { name: `read_api token reads via ${via}`, call: { path: USER, via, token: ROOT_READ }, status: 200, as: 'root' },
    {
      name: `read_api token writes via ${via}`,
      call: { method: 'POST', path: ADMIN_WRITE, via, token: ROOT_READ, body: { value: true } },
      status: 403,
      body: scopeBody('api'),
    },
    {
      name: `non-admin on an admin route via ${via}`,
      call: { path: ADMIN_READ, via, token: ALICE },
      status: 403,
      body: FORBIDDEN,
    },
    { name: `admin on an admin route via ${via}`, call: { path: ADMIN_READ, via, token: ROOT }, status: 200 },
  ]),
  { name: 'OAuth token via Bearer', call: { path: USER, via: 'bearer', token: OAUTH }, status: 200, as: 'root' },
  {
    name: 'OAuth token via access_token',
    call: { path: USER, via: 'access_token', token: OAUTH },
    status: 200,
    as: 'root',
  },
  {
    name: 'OAuth token via PRIVATE-TOKEN is not an access token',
    call: { path: USER, via: 'header', token: OAUTH },
    status: 401,
    body: UNAUTHORIZED,
  },
  { name: 'OAuth token on an admin route', call: { path: ADMIN_READ, via: 'bearer', token: OAUTH }, status: 200 },
  {
    name: 'Bearer with garbage',
    call: { path: USER, headers: { authorization: 'Bearer a b c' } },
    status: 401,
    body: UNAUTHORIZED,
  },
  { name: 'job token header on a job route', call: { path: JOB_ROUTE, via: 'job-header', token: JOB }, status: 200 },
  { name: 'job token param on a job route', call: { path: JOB_ROUTE, via: 'job-param', token: JOB }, status: 200 },
  {
    name: 'job token on a user route',
    call: { path: USER, via: 'job-header', token: JOB },
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: 'job token param on a user route',
    call: { path: USER, via: 'job-param', token: JOB },
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: 'job token on a public route',
    call: { path: PUBLIC, via: 'job-header', token: JOB },
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: 'invalid job token on a job route',
    call: { path: JOB_ROUTE, via: 'job-header', token: 'glcbt-nope' },
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: 'personal token on a job route is not a job',
    call: { path: JOB_ROUTE, via: 'header', token: ROOT },
    status: 404,
    body: { message: '404 Job Not Found' },
  },
  { name: 'session cookie', call: { path: USER, via: 'cookie', token: SESSION_ALICE }, status: 200, as: 'alice' },
  {
    name: 'admin session on an admin route',
    call: { path: ADMIN_READ, via: 'cookie', token: SESSION_ROOT },
    status: 200,
  },
  {
    name: 'non-admin session on an admin route',
    call: { path: ADMIN_READ, via: 'cookie', token: SESSION_ALICE },
    status: 403,
    body: FORBIDDEN,
  },
  {
    name: 'session writes without scopes',
    call: { method: 'POST', path: ADMIN_WRITE, via: 'cookie', token: SESSION_ROOT, body: { value: false } },
    status: 201,
  },
  {
    name: 'unknown session on a user route',
    call: { path: USER, via: 'cookie', token: 'stale' },
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: 'unknown session on a public route is anonymous',
    call: { path: PUBLIC, via: 'cookie', token: 'stale' },
    status: 200,
  },
  {
    name: 'session value under another cookie name',
    call: { path: USER, headers: { cookie: `_gitlab_session=${SESSION_ALICE}` } },
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: 'Deploy-Token header',
    call: { path: USER, via: 'deploy-header', token: DEPLOY },
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: 'Deploy-Token header on a public route',
    call: { path: PUBLIC, via: 'deploy-header', token: DEPLOY },
    status: 401,
    body: UNAUTHORIZED,
  },
  // Sudo: the spec's three rows, the session row, and the successful forms.
  {
    name: 'sudo by username header',
    call: { path: USER, via: 'header', token: ROOT, headers: { sudo: 'alice' } },
    status: 200,
    as: 'alice',
  },
  {
    name: 'sudo by username, any case, param',
    call: { path: USER, via: 'header', token: ROOT, query: { sudo: 'ALiCE' } },
    status: 200,
    as: 'alice',
  },
  {
    name: 'sudo by id',
    call: { path: USER, via: 'header', token: ROOT, headers: { sudo: '3' } },
    status: 200,
    as: 'bob',
  },
  {
    name: 'sudo with OAuth',
    call: { path: USER, via: 'bearer', token: OAUTH, headers: { sudo: 'bob' } },
    status: 200,
    as: 'bob',
  },
  {
    name: 'sudo by a non-admin',
    call: { path: USER, via: 'header', token: ALICE, headers: { sudo: 'bob' } },
    status: 403,
    body: { message: '403 Forbidden - Must be admin to use sudo' },
  },
  {
    name: 'sudo without the sudo scope',
    call: { path: USER, via: 'header', token: ROOT_ADMIN_MODE, headers: { sudo: 'bob' } },
    status: 403,
    body: scopeBody('sudo'),
  },
  {
    name: 'sudo to an unknown user',
    call: { path: USER, via: 'header', token: ROOT, headers: { sudo: 'nobody' } },
    status: 404,
    body: { message: "404 User with ID or username 'nobody' Not Found" },
  },
  {
    name: 'sudo to an unknown id',
    call: { path: USER, via: 'header', token: ROOT, query: { sudo: '999' } },
    status: 404,
    body: { message: "404 User with ID or username '999' Not Found" },
  },
  {
    name: 'sudo from a session',
    call: { path: USER, via: 'cookie', token: SESSION_ROOT, headers: { sudo: 'bob' } },
    status: 403,
    body: { message: '403 Forbidden - Must be authenticated using an OAuth or Personal Access Token to use sudo' },
  },
  {
    name: 'sudo without credentials',
    call: { path: PUBLIC, headers: { sudo: 'bob' } },
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: 'sudo to a non-admin loses admin routes',
    call: { path: ADMIN_READ, via: 'header', token: ROOT, headers: { sudo: 'alice' } },
    status: 403,
    body: FORBIDDEN,
  },
  {
    name: 'sudo to an admin keeps admin routes',
    call: { path: ADMIN_READ, via: 'header', token: ROOT, headers: { sudo: 'ops-admin' } },
    status: 200,
  },
];

describe('authentication matrix (default seed)', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed() });
  });
  afterAll(async () => {
    await sb.close();
  });

  it.each(MATRIX.map((r) => [r.name, r] as const))('%s', async (_name, row) => {
    await check(sb, row);
  });

  it('shows is_admin to administrators only', async () => {
    const admin = await call(sb, { path: USER, via: 'header', token: ROOT });
    expect((admin.body as { is_admin?: boolean }).is_admin).toBe(true);
    const user = await call(sb, { path: USER, via: 'header', token: ALICE });
    expect(user.body).not.toHaveProperty('is_admin');
    const sudo = await call(sb, { path: USER, via: 'header', token: ROOT, headers: { sudo: 'alice' } });
    expect(sudo.body).not.toHaveProperty('is_admin');
  });

  it('sends WWW-Authenticate with invalid_token answers', async () => {
    const res = await call(sb, { path: USER, via: 'header', token: EXPIRED });
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});

describe('admin mode', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({
      seed: seed((s) => {
        s.instance.admin_mode = true;
      }),
    });
  });
  afterAll(async () => {
    await sb.close();
  });

  const rows: Row[] = [
    {
      name: 'admin token without admin_mode scope',
      call: { path: ADMIN_READ, via: 'header', token: ROOT },
      status: 403,
      body: FORBIDDEN,
    },
    {
      name: 'admin token with admin_mode scope',
      call: { path: ADMIN_READ, via: 'header', token: ROOT_ADMIN_MODE },
      status: 200,
    },
    {
      name: 'admin OAuth token without admin_mode scope',
      call: { path: ADMIN_READ, via: 'bearer', token: OAUTH },
      status: 403,
      body: FORBIDDEN,
    },
    {
      name: 'admin session',
      call: { path: ADMIN_READ, via: 'cookie', token: SESSION_ROOT },
      status: 403,
      body: FORBIDDEN,
    },
    {
      name: 'sudo needs admin rights in admin mode',
      call: { path: USER, via: 'header', token: ROOT, headers: { sudo: 'alice' } },
      status: 403,
      body: { message: '403 Forbidden - Must be admin to use sudo' },
    },
    { name: 'non-admin routes still work', call: { path: USER, via: 'header', token: ROOT }, status: 200, as: 'root' },
    {
      name: 'admin_mode token can write admin routes',
      call: { method: 'POST', path: ADMIN_WRITE, via: 'header', token: ROOT_ADMIN_MODE, body: { value: true } },
      status: 201,
    },
  ];
  it.each(rows.map((r) => [r.name, r] as const))('%s', async (_name, row) => {
    await check(sb, row);
  });

  it("shows is_admin (and UserWithAdmin's fields) to an administrator whose token lacks admin_mode, as GitLab's current_user.admin? does", async () => {
    const res = await call(sb, { path: USER, via: 'header', token: ROOT });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ username: 'root', is_admin: true, note: null });
    // ...while the admin API refuses the same token.
    expect((await call(sb, { path: ADMIN_READ, via: 'header', token: ROOT })).status).toBe(403);
    const scoped = await call(sb, { path: USER, via: 'header', token: ROOT_ADMIN_MODE });
    expect(scoped.body).toMatchObject({ is_admin: true });
    const session = await call(sb, { path: USER, via: 'cookie', token: SESSION_ROOT });
    expect(session.body).toMatchObject({ is_admin: true });
    const alice = await call(sb, { path: USER, via: 'header', token: ALICE });
    expect(alice.body).not.toHaveProperty('is_admin');
  });

  it('follows the setting when it changes at run time', async () => {
    const settings = getMeta<Record<string, unknown>>(sb.state.db, 'settings') ?? {};
    setMeta(sb.state.db, 'settings', { ...settings, admin_mode: false });
    try {
      expect((await call(sb, { path: ADMIN_READ, via: 'header', token: ROOT })).status).toBe(200);
    } finally {
      setMeta(sb.state.db, 'settings', { ...settings, admin_mode: true });
    }
    expect((await call(sb, { path: ADMIN_READ, via: 'header', token: ROOT })).status).toBe(403);
  });
});

describe('users in other states', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({
      seed: seed((s) => {
        s.users.push(
          { id: 9, username: 'carol', state: 'blocked' },
          { id: 10, username: 'dave', state: 'deactivated' },
        );
        s.credentials.push(
          { type: 'personal', user: 'carol', name: 'c', value: 'glpat-sandbox-carol-blocked-0001', scopes: ['api'] },
          { type: 'personal', user: 'dave', name: 'd', value: 'glpat-sandbox-dave-deactivated-01', scopes: ['api'] },
          {
            type: 'personal',
            user: 'root',
            name: 'ru',
            value: 'glpat-sandbox-root-read-user-0001',
            scopes: ['read_user'],
          },
        );
      }),
    });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('refuses a blocked user', async () => {
    await check(sb, {
      name: 'blocked',
      call: { path: USER, via: 'header', token: 'glpat-sandbox-carol-blocked-0001' },
      status: 403,
      body: { message: '403 Forbidden - Your account has been blocked.' },
    });
  });
  it('refuses a deactivated user', async () => {
    const res = await call(sb, { path: USER, via: 'header', token: 'glpat-sandbox-dave-deactivated-01' });
    expect(res.status).toBe(403);
  });
  it('accepts read_user on the users API but not elsewhere', async () => {
    await check(sb, {
      name: 'read_user /user',
      call: { path: USER, via: 'header', token: 'glpat-sandbox-root-read-user-0001' },
      status: 200,
      as: 'root',
    });
    await check(sb, {
      name: 'read_user /features',
      call: { path: ADMIN_READ, via: 'header', token: 'glpat-sandbox-root-read-user-0001' },
      status: 403,
      body: scopeBody('api read_api'),
    });
  });
});

describe('users API and version', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed() });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('finds users by username, case-insensitively', async () => {
    const res = await call(sb, { path: '/api/v4/users', query: { username: 'ALICE' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([expect.objectContaining({ id: 2, username: 'alice', state: 'active' })]);
    const none = await call(sb, { path: '/api/v4/users', query: { username: 'nobody' } });
    expect(none.body).toEqual([]);
  });
  it('lists users with pagination headers, admin fields for admins', async () => {
    const anon = await call(sb, { path: '/api/v4/users', query: { per_page: '2' } });
    expect((anon.body as unknown[]).length).toBe(2);
    expect(anon.headers.get('x-next-page')).toBe('2');
    expect((anon.body as object[])[0]).not.toHaveProperty('is_admin');
    const admin = await call(sb, { path: '/api/v4/users', via: 'header', token: ROOT, query: { page: '1' } });
    expect((admin.body as { is_admin: boolean }[])[0]?.is_admin).toBe(true);
    const search = await call(sb, { path: '/api/v4/users', query: { search: 'BUILD' } });
    expect((search.body as { username: string }[]).map((u) => u.username)).toEqual(['bob']);
    expect(search.headers.get('x-total')).toBe('1');
    expect((await call(sb, { path: '/api/v4/users', query: { search: '%' } })).body).toEqual([]);
    const bad = await call(sb, { path: '/api/v4/users', query: { page: 'x' } });
    expect(bad).toMatchObject({ status: 400, body: { error: 'page is invalid' } });
  });
  it('shows one user, 404 for unknown, 400 for a malformed id', async () => {
    expect(await call(sb, { path: '/api/v4/users/3' })).toMatchObject({ status: 200, body: { username: 'bob' } });
    expect(await call(sb, { path: '/api/v4/users/99' })).toMatchObject({
      status: 404,
      body: { message: '404 User Not Found' },
    });
    expect(await call(sb, { path: '/api/v4/users/abc' })).toMatchObject({ status: 400 });
  });
  it('answers /version for authenticated callers', async () => {
    expect(await call(sb, { path: '/api/v4/version' })).toMatchObject({ status: 401 });
    const res = await call(sb, { path: '/api/v4/version', via: 'header', token: ALICE });
    expect(res).toMatchObject({ status: 200, body: { version: '17.11.0', enterprise: true, kas: { enabled: false } } });
    expect((res.body as { revision: string }).revision).toMatch(/^[0-9a-f]{11}$/);
    expect((await call(sb, { path: '/api/v4/metadata', via: 'header', token: ALICE })).body).toEqual(res.body);
  });
  it('describes the job behind a job token', async () => {
    const res = await call(sb, { path: JOB_ROUTE, via: 'job-header', token: JOB });
    expect(res.body).toMatchObject({ status: 'running', user: { username: 'alice' }, project: { id: 1 } });
  });
});

describe('Features API', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({
      seed: seed((s) => {
        s.instance.feature_flags = { seeded_flag: true };
      }),
    });
  });
  afterAll(async () => {
    await sb.close();
  });
  const admin = { via: 'header' as const, token: ROOT };

  it('lists, sets (booleans and strings) and deletes flags', async () => {
    expect((await call(sb, { path: ADMIN_READ, ...admin })).body).toEqual([
      { name: 'seeded_flag', state: 'on', gates: [{ key: 'boolean', value: true }], definition: null },
    ]);
    expect(
      await call(sb, { method: 'POST', path: '/api/v4/features/new_flag', ...admin, body: { value: 'true' } }),
    ).toMatchObject({ status: 201, body: { name: 'new_flag', state: 'on' } });
    expect(
      await call(sb, { method: 'POST', path: '/api/v4/features/seeded_flag', ...admin, body: { value: false } }),
    ).toMatchObject({ status: 201, body: { state: 'off' } });
    const form = await call(sb, {
      method: 'POST',
      path: '/api/v4/features/form_flag',
      ...admin,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'value=true',
    });
    expect(form).toMatchObject({ status: 201, body: { state: 'on' } });
    const list = (await call(sb, { path: ADMIN_READ, ...admin })).body as { name: string; state: string }[];
    expect(list.map((f) => `${f.name}:${f.state}`)).toEqual(['form_flag:on', 'new_flag:on', 'seeded_flag:off']);
    expect((await call(sb, { method: 'DELETE', path: '/api/v4/features/new_flag', ...admin })).status).toBe(204);
    expect(((await call(sb, { path: ADMIN_READ, ...admin })).body as unknown[]).length).toBe(2);
  });
  it('refuses bad values and names with 400, non-admins with 403', async () => {
    expect(
      await call(sb, { method: 'POST', path: '/api/v4/features/x_flag', ...admin, body: { value: 'maybe' } }),
    ).toMatchObject({ status: 400, body: { error: 'value is invalid' } });
    expect(await call(sb, { method: 'POST', path: '/api/v4/features/x_flag', ...admin, body: {} })).toMatchObject({
      status: 400,
      body: { error: 'value is missing' },
    });
    expect(
      await call(sb, { method: 'POST', path: '/api/v4/features/Bad-Name', ...admin, body: { value: true } }),
    ).toMatchObject({ status: 400 });
    expect(
      await call(sb, { method: 'POST', path: '/api/v4/features/x_flag', ...admin, body: '{"value":' }),
    ).toMatchObject({ status: 400 });
    expect(
      await call(sb, {
        method: 'POST',
        path: '/api/v4/features/x_flag',
        via: 'header',
        token: ALICE,
        body: { value: true },
      }),
    ).toMatchObject({ status: 403, body: FORBIDDEN });
  });
});

describe('OAuth refresh and expiry', () => {
  let sb: RunningSandbox;
  let now = Date.parse('2026-06-01T12:00:00Z');
  const clock = realTimersAt(() => now);
  beforeAll(async () => {
    sb = await startSandbox({
      seed: seed((s) => {
        s.instance.oauth_ttl_seconds = 60;
      }),
      clock,
    });
  });
  afterAll(async () => {
    await sb.close();
  });
  const refresh = (body: Record<string, unknown>) => call(sb, { method: 'POST', path: '/oauth/token', body });

  it('rejects bad clients, grants and requests with OAuth errors', async () => {
    expect(
      await refresh({ ...APP, grant_type: 'refresh_token', refresh_token: OAUTH_REFRESH, client_secret: 'wrong' }),
    ).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(
      await refresh({ ...APP, grant_type: 'refresh_token', refresh_token: OAUTH_REFRESH, client_id: 'nope' }),
    ).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(await refresh({ ...APP, grant_type: 'refresh_token', refresh_token: 'unknown' })).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
    expect(
      await refresh({
        ...APP,
        grant_type: 'refresh_token',
        refresh_token: OAUTH_REFRESH,
        redirect_uri: 'http://evil/cb',
      }),
    ).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await refresh({ ...APP, grant_type: 'password', refresh_token: OAUTH_REFRESH })).toMatchObject({
      status: 400,
      body: { error: 'unsupported_grant_type' },
    });
    expect(await refresh({ ...APP, refresh_token: OAUTH_REFRESH })).toMatchObject({
      status: 400,
      body: { error: 'invalid_request' },
    });
    expect(await refresh({ ...APP, grant_type: 'refresh_token' })).toMatchObject({
      status: 400,
      body: { error: 'invalid_request' },
    });
    expect(await refresh({ ...APP, grant_type: 'refresh_token', refresh_token: ['a'] })).toMatchObject({
      status: 400,
      body: { error: 'invalid_request' },
    });
    expect(
      await refresh({ ...APP, grant_type: 'refresh_token', refresh_token: OAUTH_REFRESH, scope: 'api admin_mode' }),
    ).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
    expect((await call(sb, { method: 'POST', path: '/oauth/token', body: '{' })).status).toBe(400);
    // None of these consumed the refresh token.
    expect((await call(sb, { path: USER, via: 'bearer', token: OAUTH })).status).toBe(200);
  });

  it('expires access tokens after oauth_ttl_seconds, refreshes into a new pair and kills the old one', async () => {
    now += 61_000;
    expect(await call(sb, { path: USER, via: 'bearer', token: OAUTH })).toMatchObject({
      status: 401,
      body: EXPIRED_BODY,
    });
    // A refresh token works after its access token expired; form bodies are accepted.
    const form = new URLSearchParams({ ...APP, grant_type: 'refresh_token', refresh_token: OAUTH_REFRESH }).toString();
    const res = await call(sb, {
      method: 'POST',
      path: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const pair = res.body as Record<string, unknown>;
    expect(pair).toEqual({
      access_token: expect.stringMatching(/^[0-9a-f]{64}$/),
      token_type: 'Bearer',
      expires_in: 60,
      refresh_token: expect.stringMatching(/^[0-9a-f]{64}$/),
      created_at: Math.floor(now / 1000),
      scope: 'api sudo',
    });
    const access = pair.access_token as string;
    expect(await call(sb, { path: USER, via: 'bearer', token: access })).toMatchObject({
      status: 200,
      body: { username: 'root' },
    });
    expect(await call(sb, { path: USER, via: 'access_token', token: access })).toMatchObject({ status: 200 });
    // The old pair is dead.
    expect(await call(sb, { path: USER, via: 'bearer', token: OAUTH })).toMatchObject({ status: 401 });
    expect(await refresh({ ...APP, grant_type: 'refresh_token', refresh_token: OAUTH_REFRESH })).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
    // The new token expires after the TTL too, and its refresh token (with Basic client auth) renews it.
    now += 59_000;
    expect((await call(sb, { path: USER, via: 'bearer', token: access })).status).toBe(200);
    now += 1_000;
    expect(await call(sb, { path: USER, via: 'bearer', token: access })).toMatchObject({
      status: 401,
      body: EXPIRED_BODY,
    });
    const basic = Buffer.from(`${APP.client_id}:${APP.client_secret}`).toString('base64');
    const again = await call(sb, {
      method: 'POST',
      path: '/oauth/token',
      headers: { authorization: `Basic ${basic}` },
      body: { grant_type: 'refresh_token', refresh_token: pair.refresh_token, scope: 'api' },
    });
    expect(again).toMatchObject({ status: 200, body: { scope: 'api' } });
    const narrowed = (again.body as { access_token: string }).access_token;
    // Narrowed to api: sudo is no longer allowed.
    expect(await call(sb, { path: USER, via: 'bearer', token: narrowed, headers: { sudo: 'alice' } })).toMatchObject({
      status: 403,
      body: scopeBody('sudo'),
    });
  });
});

describe('access token expiry and last_used_at under an injected clock', () => {
  let sb: RunningSandbox;
  let now = Date.parse('2029-12-31T23:59:00Z');
  beforeAll(async () => {
    sb = await startSandbox({
      seed: seed((s) =>
        s.credentials.push({
          type: 'personal',
          user: 'bob',
          name: 'b',
          value: 'glpat-sandbox-bob-2030-00000001',
          scopes: ['api'],
          expires_at: '2030-01-01',
        }),
      ),
      clock: realTimersAt(() => now),
    });
  });
  afterAll(async () => {
    await sb.close();
  });
  const lastUsed = () =>
    (
      sb.state.db
        .prepare('SELECT last_used_at FROM credentials WHERE value = ?')
        .get('glpat-sandbox-bob-2030-00000001') as { last_used_at: string | null }
    ).last_used_at;

  it('writes last_used_at at most once per 10 minutes and expires at the start of expires_at', async () => {
    expect(lastUsed()).toBeNull();
    expect((await call(sb, { path: USER, via: 'header', token: 'glpat-sandbox-bob-2030-00000001' })).status).toBe(200);
    expect(lastUsed()).toBe('2029-12-31T23:59:00.000Z');
    now += 30_000;
    await call(sb, { path: USER, via: 'header', token: 'glpat-sandbox-bob-2030-00000001' });
    expect(lastUsed()).toBe('2029-12-31T23:59:00.000Z');
    now = Date.parse('2030-01-01T00:00:00Z');
    expect(await call(sb, { path: USER, via: 'header', token: 'glpat-sandbox-bob-2030-00000001' })).toMatchObject({
      status: 401,
      body: EXPIRED_BODY,
    });
  });

  it('updates last_used_at again after 10 minutes', async () => {
    now = Date.parse('2026-01-01T00:00:00Z');
    await call(sb, { path: USER, via: 'header', token: ALICE });
    const first = (
      sb.state.db.prepare('SELECT last_used_at FROM credentials WHERE value = ?').get(ALICE) as { last_used_at: string }
    ).last_used_at;
    now += 10 * 60_000;
    await call(sb, { path: USER, via: 'header', token: ALICE });
    const second = (
      sb.state.db.prepare('SELECT last_used_at FROM credentials WHERE value = ?').get(ALICE) as { last_used_at: string }
    ).last_used_at;
    expect([first, second]).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-01T00:10:00.000Z']);
  });
});

describe('impersonation disabled by the seed, applied at restart', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'shardmove-auth-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses impersonation tokens after a restart with impersonation_enabled: false, and accepts them again after re-enabling', async () => {
    const db = join(dir, 'sandbox.db');
    const first = await startSandbox({ seed: seed(), db });
    try {
      expect(await call(first, { path: USER, via: 'header', token: IMPERSONATION })).toMatchObject({
        status: 200,
        body: { username: 'alice' },
      });
    } finally {
      await first.close();
    }
    const second = await startSandbox({
      seed: seed((s) => {
        s.instance.impersonation_enabled = false;
      }),
      db,
    });
    try {
      expect(await call(second, { path: USER, via: 'header', token: IMPERSONATION })).toMatchObject({
        status: 401,
        body: IMPERSONATION_BODY,
      });
      expect(await call(second, { path: USER, via: 'bearer', token: IMPERSONATION })).toMatchObject({
        status: 401,
        body: IMPERSONATION_BODY,
      });
      expect(await call(second, { path: USER, via: 'header', token: ALICE })).toMatchObject({ status: 200 });
    } finally {
      await second.close();
    }
    const third = await startSandbox({ seed: seed(), db });
    try {
      expect(await call(third, { path: USER, via: 'header', token: IMPERSONATION })).toMatchObject({ status: 200 });
    } finally {
      await third.close();
    }
  });
});

describe('an independent client (@gitbeaker/rest)', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed() });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('authenticates with a token, OAuth and sudo, and reads users and metadata', async () => {
    const api = new Gitlab({ host: sb.url, token: ROOT });
    expect((await api.Users.showCurrentUser()).username).toBe('root');
    expect((await api.Users.showCurrentUser({ sudo: 'Alice' })).username).toBe('alice');
    expect((await api.Users.all({ username: 'bob' })).map((u) => u.id)).toEqual([3]);
    expect((await api.Users.show(3)).username).toBe('bob');
    expect((await api.Metadata.show()).version).toBe('17.11.0');
    const oauth = new Gitlab({ host: sb.url, oauthToken: OAUTH });
    expect((await oauth.Users.showCurrentUser()).username).toBe('root');
    await expect(api.Users.showCurrentUser({ sudo: 'nobody' })).rejects.toThrow(
      "404 User with ID or username 'nobody' Not Found",
    );
    await expect(new Gitlab({ host: sb.url, token: 'glpat-bogus' }).Users.showCurrentUser()).rejects.toThrow(
      '401 Unauthorized',
    );
  });
});
