// POST and DELETE /admin/token over real HTTP: all 14 credential types (each DELETE effect checked by
// using or looking up the token afterwards), prefix rules, versions and feature flags, bad input.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { assertProperty } from './support/property.js';

const ROOT = 'glpat-sandbox-root-api-sudo-0001';
const ROOT_READ = 'glpat-sandbox-root-read-api-0002';
const ALICE = 'glpat-sandbox-alice-api-00000006';
const APP = { client_id: 'sandbox-app-uid', redirect_uri: 'http://localhost/cb' };

const T = {
  personal: ALICE,
  impersonation: 'glpat-sandbox-impersonate-alice8',
  project: 'glpat-sandbox-project-1-bot-0009',
  group: 'glpat-sandbox-group-1-bot-000010',
  deploy: 'gldt-sandbox-deploy-0001',
  feed: 'glft-sandbox-feed-alice-0001',
  oauthSecret: 'gloas-sandbox-application-secret-0001',
  agent: 'glagent-sandbox-agent-0001',
  runner: 'glrt-sandbox-runner-0001',
  trigger: 'glptt-sandbox-trigger-0001',
  job: 'glcbt-sandbox-job-project-1-0001',
  ffClient: 'glffct-sandbox-ffclient-0001',
  session: '_service_session=sandbox-session-alice-0001',
  incomingEmail: 'glimt-sandbox-incoming-alice-01',
  oldPrefix: 'acme-sandbox-root-old-prefix-007',
};

const NOT_FOUND = { message: { error: 'Not found' } };
const NOT_SUPPORTED = { message: 'Token type not supported.' };
const ROUTE_NOT_FOUND = { error: '404 Not Found' };
const REVOKE_FLAG_OFF = { message: "'api_admin_token_revoke' feature flag is disabled" };
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function seed(change: (s: Seed) => void = () => {}): Seed {
  const s = structuredClone(loadSeed());
  s.inventory = {};
  change(s);
  return s;
}

interface Answer {
  status: number;
  body: unknown;
}

async function request(
  sb: RunningSandbox,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Answer> {
  const res = await fetch(new URL(path, sb.url), {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const tokenCall = (
  sb: RunningSandbox,
  method: 'POST' | 'DELETE',
  token: unknown,
  auth: string | null = ROOT,
  extra: Record<string, string> = {},
) =>
  request(
    sb,
    method,
    '/api/v4/admin/token',
    { ...(auth ? { 'private-token': auth } : {}), ...extra },
    JSON.stringify({ token }),
  );
const post = (sb: RunningSandbox, token: unknown, auth?: string | null) => tokenCall(sb, 'POST', token, auth);
const del = (sb: RunningSandbox, token: unknown, auth?: string | null) => tokenCall(sb, 'DELETE', token, auth);
const get = (sb: RunningSandbox, path: string, headers: Record<string, string>) => request(sb, 'GET', path, headers);
const setFlag = (sb: RunningSandbox, name: string, value: boolean) =>
  request(sb, 'POST', `/api/v4/features/${name}`, { 'private-token': ROOT }, JSON.stringify({ value }));

function credentialId(sb: RunningSandbox, value: string): number {
  return (sb.state.db.prepare('SELECT id FROM credentials WHERE value = ?').get(value) as { id: number }).id;
}
function credentialValue(sb: RunningSandbox, id: number): string | undefined {
  return (sb.state.db.prepare('SELECT value FROM credentials WHERE id = ?').get(id) as { value: string } | undefined)
    ?.value;
}

describe('POST /admin/token: every credential type (17.11)', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed() });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('describes an access token with exactly the documented record', async () => {
    const res = await post(sb, T.personal);
    expect(res.status).toBe(200);
    const body = res.body as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual([
      'advanced_scopes',
      'after_expiry_notification_delivered',
      'created_at',
      'expire_notification_delivered',
      'expires_at',
      'id',
      'impersonation',
      'last_used_at',
      'name',
      'organization_id',
      'previous_personal_access_token_id',
      'revoked',
      'scopes',
      'updated_at',
      'user_id',
    ]);
    expect(body).toMatchObject({
      user_id: 2,
      name: 'alice',
      revoked: false,
      expires_at: '2099-01-01',
      scopes: ['api'],
      impersonation: false,
      expire_notification_delivered: false,
      last_used_at: null,
      after_expiry_notification_delivered: false,
      previous_personal_access_token_id: null,
      advanced_scopes: null,
      organization_id: 1,
    });
    expect(body.created_at).toMatch(TIMESTAMP);
    expect(body.updated_at).toMatch(TIMESTAMP);
  });

  it.each([
    ['impersonation', T.impersonation, { impersonation: true, user_id: 2 }],
    ['project access', T.project, { impersonation: false, name: 'project-bot' }],
    ['group access', T.group, { impersonation: false, name: 'group-bot' }],
    [
      'deploy',
      T.deploy,
      {
        name: 'deployer',
        username: expect.stringMatching(/^gitlab\+deploy-token-\d+$/),
        scopes: ['read_repository'],
        revoked: false,
        expired: false,
      },
    ],
    ['feed', T.feed, { id: 2, username: 'alice' }],
    [
      'OAuth application secret',
      T.oauthSecret,
      {
        id: 1,
        application_id: 'sandbox-app-uid',
        application_name: 'shardmove',
        callback_url: 'http://localhost/cb',
        confidential: true,
      },
    ],
    ['cluster agent', T.agent, { name: 'agent', status: 'active' }],
    ['runner', T.runner, { description: 'runner-1', runner_type: 'instance_type', is_shared: true }],
    [
      'pipeline trigger',
      T.trigger,
      {
        token: 'glptt-sand',
        description: 'trigger',
        expired: false,
        owner: expect.objectContaining({ username: 'alice' }),
      },
    ],
    [
      'CI/CD job',
      T.job,
      { job: expect.objectContaining({ status: 'running', user: expect.objectContaining({ username: 'alice' }) }) },
    ],
    ['feature flags client', T.ffClient, { project_id: 1 }],
    ['session cookie', T.session, { id: 2, username: 'alice' }],
    ['incoming email', T.incomingEmail, { id: 2, username: 'alice' }],
  ])('describes a %s token', async (_name, token, expected) => {
    const res = await post(sb, token);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject(expected);
    // No record echoes a full secret back.
    expect(JSON.stringify(res.body)).not.toContain(token.replace(/^_service_session=/, ''));
  });

  it.each([
    ['no credentials', null, 401, { message: '401 Unauthorized' }],
    ['a non-admin', ALICE, 403, { message: '403 Forbidden' }],
    [
      'an admin read_api token (POST is a write)',
      ROOT_READ,
      403,
      expect.objectContaining({ error: 'insufficient_scope', scope: 'api' }),
    ],
  ])('refuses %s', async (_name, auth, status, body) => {
    expect(await post(sb, T.personal, auth)).toEqual({ status, body });
    expect(await del(sb, T.personal, auth)).toEqual({ status, body });
  });

  it('refuses an admin acting as a non-admin through sudo', async () => {
    expect(await tokenCall(sb, 'POST', T.personal, ROOT, { sudo: 'alice' })).toEqual({
      status: 403,
      body: { message: '403 Forbidden' },
    });
  });

  it.each([
    ['an unknown prefix', 'xyz-123', 422, NOT_SUPPORTED],
    ['a previous custom prefix', T.oldPrefix, 422, NOT_SUPPORTED],
    ['an empty token', '', 422, NOT_SUPPORTED],
    ['a glpat- token that does not exist', 'glpat-does-not-exist', 404, NOT_FOUND],
    ['a feed token that does not exist', 'glft-nope', 404, NOT_FOUND],
    ['an unknown session', '_service_session=nope', 404, NOT_FOUND],
    ['an OAuth secret that does not exist', 'gloas-nope', 404, NOT_FOUND],
    ['a value with no known prefix (an OAuth access token)', 'sandbox-oauth-access-root-0001', 422, NOT_SUPPORTED],
    ['a number', 12, 400, { error: 'token is invalid' }],
    ['a list', ['glpat-x'], 400, { error: 'token is invalid' }],
  ])('answers %s', async (_name, token, status, body) => {
    expect(await post(sb, token)).toEqual({ status, body });
    expect(await del(sb, token)).toEqual({ status, body });
  });

  it('answers malformed bodies with 4xx JSON', async () => {
    const headers = { 'private-token': ROOT };
    expect(await request(sb, 'POST', '/api/v4/admin/token', headers, '{}')).toEqual({
      status: 400,
      body: { error: 'token is missing' },
    });
    expect((await request(sb, 'POST', '/api/v4/admin/token', headers, '{"token":')).status).toBe(400);
    expect((await request(sb, 'POST', '/api/v4/admin/token', headers, '[1,2]')).status).toBe(400);
    expect((await request(sb, 'DELETE', '/api/v4/admin/token', headers, 'null')).status).toBe(400);
    const form = await request(
      sb,
      'POST',
      '/api/v4/admin/token',
      { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      `token=${T.feed}`,
    );
    expect(form).toMatchObject({ status: 200, body: { username: 'alice' } });
  });
});

describe('DELETE /admin/token: every credential type and its effect (17.11)', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed() });
  });
  afterAll(async () => {
    await sb.close();
  });

  it.each([
    ['personal', T.personal],
    ['impersonation', T.impersonation],
    ['project access', T.project],
    ['group access', T.group],
  ])('revokes a %s token: it stops authenticating', async (_name, token) => {
    expect((await get(sb, '/api/v4/user', { 'private-token': token })).status).toBe(200);
    expect(await del(sb, token)).toEqual({ status: 204, body: undefined });
    expect(await get(sb, '/api/v4/user', { 'private-token': token })).toMatchObject({
      status: 401,
      body: { error: 'invalid_token' },
    });
    expect(await post(sb, token)).toMatchObject({ status: 200, body: { revoked: true } });
    // Revoking again is not an error.
    expect((await del(sb, token)).status).toBe(204);
  });

  it('revokes a deploy token', async () => {
    expect((await del(sb, T.deploy)).status).toBe(204);
    expect(await post(sb, T.deploy)).toMatchObject({ status: 200, body: { revoked: true } });
  });

  it('revokes a cluster agent token', async () => {
    expect((await del(sb, T.agent)).status).toBe(204);
    expect(await post(sb, T.agent)).toMatchObject({ status: 200, body: { status: 'revoked' } });
  });

  it('resets a runner token: the runner can no longer verify with the old one', async () => {
    const verify = (token: string) => request(sb, 'POST', '/api/v4/runners/verify', {}, JSON.stringify({ token }));
    expect(await verify(T.runner)).toMatchObject({ status: 200, body: { token: T.runner } });
    const id = credentialId(sb, T.runner);
    expect((await del(sb, T.runner)).status).toBe(204);
    expect(await verify(T.runner)).toEqual({ status: 403, body: { message: '403 Forbidden' } });
    const fresh = credentialValue(sb, id) as string;
    expect(fresh).toMatch(/^glrt-[0-9a-f]{40}$/);
    expect((await verify(fresh)).status).toBe(200);
    expect(await post(sb, T.runner)).toEqual({ status: 404, body: NOT_FOUND });
  });

  it.each([
    ['feed', T.feed, 'glft-'],
    ['incoming email', T.incomingEmail, 'glimt-'],
    ['feature flags client', T.ffClient, 'glffct-'],
  ])('resets a %s token: the old value is dead, a new one exists', async (_name, token, prefix) => {
    const id = credentialId(sb, token);
    expect(await del(sb, token)).toEqual({ status: 204, body: undefined });
    expect(await post(sb, token)).toEqual({ status: 404, body: NOT_FOUND });
    const fresh = credentialValue(sb, id) as string;
    expect(fresh).not.toBe(token);
    expect(fresh.startsWith(prefix)).toBe(true);
    expect((await post(sb, fresh)).status).toBe(200);
  });

  it('resets an OAuth application secret: the old secret no longer authenticates the client', async () => {
    expect((await del(sb, T.oauthSecret)).status).toBe(204);
    expect(await post(sb, T.oauthSecret)).toEqual({ status: 404, body: NOT_FOUND });
    const refresh = (secret: string) =>
      request(
        sb,
        'POST',
        '/oauth/token',
        {},
        JSON.stringify({
          ...APP,
          client_secret: secret,
          grant_type: 'refresh_token',
          refresh_token: 'sandbox-oauth-refresh-root-0001',
        }),
      );
    expect(await refresh(T.oauthSecret)).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    const fresh = (sb.state.db.prepare('SELECT secret FROM applications WHERE id = 1').get() as { secret: string })
      .secret;
    expect(fresh).toMatch(/^gloas-[0-9a-f]{40}$/);
    expect(await post(sb, fresh)).toMatchObject({ status: 200, body: { application_id: 'sandbox-app-uid' } });
    expect((await refresh(fresh)).status).toBe(200);
  });

  it('deletes a session: the cookie no longer works', async () => {
    const cookie = { cookie: 'a=b; _service_session=sandbox-session-alice-0001' };
    expect((await get(sb, '/api/v4/user', cookie)).status).toBe(200);
    expect((await del(sb, T.session)).status).toBe(204);
    expect(await get(sb, '/api/v4/user', cookie)).toEqual({ status: 401, body: { message: '401 Unauthorized' } });
    expect(await post(sb, T.session)).toEqual({ status: 404, body: NOT_FOUND });
  });

  it('refuses a CI/CD job token with 422 and leaves it working', async () => {
    expect(await del(sb, T.job)).toEqual({ status: 422, body: NOT_SUPPORTED });
    expect((await get(sb, '/api/v4/job', { 'job-token': T.job })).status).toBe(200);
  });

  it('expires a pipeline trigger token only with token_api_expire_pipeline_triggers', async () => {
    const trigger = (token: string, project = 1) =>
      request(sb, 'POST', `/api/v4/projects/${project}/trigger/pipeline`, {}, JSON.stringify({ token, ref: 'main' }));
    expect(await trigger(T.trigger)).toMatchObject({ status: 201, body: { ref: 'main', source: 'trigger' } });
    expect(await trigger(T.trigger, 2)).toEqual({ status: 404, body: { message: '404 Not Found' } });
    expect(await del(sb, T.trigger)).toEqual({ status: 422, body: NOT_SUPPORTED });
    expect(await post(sb, T.trigger)).toMatchObject({ body: { expired: false } });
    expect((await trigger(T.trigger)).status).toBe(201);
    expect((await setFlag(sb, 'token_api_expire_pipeline_triggers', true)).status).toBe(201);
    expect((await del(sb, T.trigger)).status).toBe(204);
    expect(await post(sb, T.trigger)).toMatchObject({ status: 200, body: { expired: true } });
    expect(await trigger(T.trigger)).toEqual({ status: 404, body: { message: '404 Not Found' } });
  });

  it('answers 404 for a token that does not exist and 422 for an unknown type', async () => {
    expect(await del(sb, 'glpat-gone')).toEqual({ status: 404, body: NOT_FOUND });
    expect(await del(sb, 'nothing-known')).toEqual({ status: 422, body: NOT_SUPPORTED });
  });

  it('lets an admin revoke the very token it authenticates with', async () => {
    expect((await del(sb, 'glpat-sandbox-root-admin-mode-03', 'glpat-sandbox-root-admin-mode-03')).status).toBe(204);
    expect((await post(sb, T.personal, 'glpat-sandbox-root-admin-mode-03')).status).toBe(401);
  });
});

describe('custom access-token prefixes', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({
      seed: seed((s) => {
        s.instance.personal_access_token_prefix = 'corp-';
        s.instance.previous_prefixes = ['acme-', 'old-'];
        s.credentials.push(
          { type: 'personal', user: 'bob', name: 'corp', value: 'corp-sandbox-bob-current-0001', scopes: ['api'] },
          { type: 'personal', user: 'bob', name: 'old', value: 'old-sandbox-bob-previous-0001', scopes: ['api'] },
        );
      }),
    });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('accepts the current custom prefix and the default glpat-', async () => {
    expect(await post(sb, 'corp-sandbox-bob-current-0001')).toMatchObject({ status: 200, body: { name: 'corp' } });
    expect(await post(sb, T.personal)).toMatchObject({ status: 200, body: { name: 'alice' } });
    expect(await get(sb, '/api/v4/user', { 'private-token': 'corp-sandbox-bob-current-0001' })).toMatchObject({
      status: 200,
      body: { username: 'bob' },
    });
  });

  it('refuses every previous prefix with 422 and as a credential with 401', async () => {
    for (const token of [T.oldPrefix, 'old-sandbox-bob-previous-0001']) {
      expect(await post(sb, token)).toEqual({ status: 422, body: NOT_SUPPORTED });
      expect(await del(sb, token)).toEqual({ status: 422, body: NOT_SUPPORTED });
      expect(await get(sb, '/api/v4/user', { 'private-token': token })).toEqual({
        status: 401,
        body: { message: '401 Unauthorized' },
      });
    }
  });

  it('revokes a token with the current custom prefix', async () => {
    expect((await del(sb, 'corp-sandbox-bob-current-0001')).status).toBe(204);
    expect(await get(sb, '/api/v4/user', { 'private-token': 'corp-sandbox-bob-current-0001' })).toMatchObject({
      status: 401,
      body: { error: 'invalid_token' },
    });
  });
});

/** One step of a version case: the method, the token, and the expected status (and body). */
type Step = [method: 'POST' | 'DELETE', token: string, status: number, body?: unknown];

interface VersionCase {
  name: string;
  version: string;
  flags?: Record<string, boolean>;
  steps: Step[];
}

const VERSION_CASES: VersionCase[] = [
  {
    name: '17.4: no endpoint at all, even before authentication',
    version: '17.4.2',
    steps: [
      ['POST', T.personal, 404, ROUTE_NOT_FOUND],
      ['DELETE', T.personal, 404, ROUTE_NOT_FOUND],
    ],
  },
  {
    name: '17.6 without admin_agnostic_token_finder: no endpoint',
    version: '17.6.0',
    steps: [['POST', T.personal, 404, ROUTE_NOT_FOUND]],
  },
  {
    name: '17.6 with the finder flag: access, deploy and feed tokens; no DELETE yet',
    version: '17.6.0',
    flags: { admin_agnostic_token_finder: true },
    steps: [
      ['POST', T.personal, 200],
      ['POST', T.deploy, 200],
      ['POST', T.feed, 200],
      ['POST', T.oauthSecret, 422, NOT_SUPPORTED],
      ['POST', T.agent, 422],
      ['POST', T.runner, 422],
      ['POST', T.trigger, 422],
      ['POST', T.job, 422],
      ['DELETE', T.personal, 405, { error: '405 Method Not Allowed' }],
    ],
  },
  {
    name: '17.5 with the finder flag: no feed tokens yet',
    version: '17.5.1',
    flags: { admin_agnostic_token_finder: true },
    steps: [
      ['POST', T.personal, 200],
      ['POST', T.deploy, 200],
      ['POST', T.feed, 422, NOT_SUPPORTED],
    ],
  },
  {
    name: '17.7 with the finder flag: the 17.7 types; DELETE behind api_admin_token_revoke',
    version: '17.7.0',
    flags: { admin_agnostic_token_finder: true },
    steps: [
      ['POST', T.oauthSecret, 200],
      ['POST', T.agent, 200],
      ['POST', T.runner, 200],
      ['POST', T.trigger, 200],
      ['POST', T.job, 422],
      ['POST', T.ffClient, 422],
      ['POST', T.session, 422],
      ['POST', T.incomingEmail, 422],
      ['DELETE', T.personal, 404, REVOKE_FLAG_OFF],
    ],
  },
  {
    name: '17.7 with both flags: DELETE acts on access, deploy and feed tokens only',
    version: '17.7.3',
    flags: { admin_agnostic_token_finder: true, api_admin_token_revoke: true },
    steps: [
      ['DELETE', T.personal, 204],
      ['DELETE', T.deploy, 204],
      ['DELETE', T.feed, 204],
      ['DELETE', T.oauthSecret, 422, NOT_SUPPORTED],
      ['DELETE', T.agent, 422],
      ['DELETE', T.runner, 422],
      ['DELETE', T.trigger, 422],
    ],
  },
  {
    name: '17.8: generally available, DELETE still behind its flag',
    version: '17.8.0',
    steps: [
      ['POST', T.personal, 200],
      ['POST', T.trigger, 200],
      ['POST', T.job, 422],
      ['DELETE', T.personal, 404, REVOKE_FLAG_OFF],
    ],
  },
  {
    name: '17.9: every type for POST; DELETE of the 17.9 types',
    version: '17.9.0',
    flags: { token_api_expire_pipeline_triggers: true },
    steps: [
      ['POST', T.job, 200],
      ['POST', T.ffClient, 200],
      ['POST', T.session, 200],
      ['POST', T.incomingEmail, 200],
      ['DELETE', T.agent, 204],
      ['DELETE', T.runner, 204],
      ['DELETE', T.oauthSecret, 204],
      ['DELETE', T.incomingEmail, 204],
      ['DELETE', T.ffClient, 204],
      ['DELETE', T.trigger, 422, NOT_SUPPORTED],
      ['DELETE', T.session, 422, NOT_SUPPORTED],
      ['DELETE', T.job, 422, NOT_SUPPORTED],
      ['DELETE', T.personal, 204],
    ],
  },
  {
    name: '17.9 with api_admin_token_revoke turned off: no DELETE',
    version: '17.9.0',
    flags: { api_admin_token_revoke: false },
    steps: [
      ['POST', T.personal, 200],
      ['DELETE', T.personal, 404, REVOKE_FLAG_OFF],
    ],
  },
  {
    name: '17.10 without the trigger flag: triggers cannot be expired',
    version: '17.10.0',
    steps: [
      ['DELETE', T.trigger, 422, NOT_SUPPORTED],
      ['DELETE', T.session, 422, NOT_SUPPORTED],
    ],
  },
  {
    name: '17.10 with the trigger flag',
    version: '17.10.2',
    flags: { token_api_expire_pipeline_triggers: true },
    steps: [['DELETE', T.trigger, 204]],
  },
  {
    name: '17.11: sessions can be deleted, triggers still need their flag',
    version: '17.11.0',
    steps: [
      ['DELETE', T.session, 204],
      ['POST', T.session, 404, NOT_FOUND],
      ['DELETE', T.trigger, 422, NOT_SUPPORTED],
      ['DELETE', T.job, 422],
    ],
  },
];

describe('versions and feature flags', () => {
  it.each(VERSION_CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const sb = await startSandbox({
      seed: seed((s) => {
        s.instance.version = c.version;
        s.instance.feature_flags = c.flags ?? {};
      }),
    });
    try {
      for (const [method, token, status, body] of c.steps) {
        const res = await tokenCall(sb, method, token);
        expect({ step: `${method} ${token}`, status: res.status }).toEqual({ step: `${method} ${token}`, status });
        if (body !== undefined) expect(res.body).toEqual(body);
      }
      if (c.steps.some(([, , , body]) => body === ROUTE_NOT_FOUND)) {
        // A missing endpoint answers like an unknown path even without credentials, for any method.
        expect(await post(sb, T.personal, null)).toEqual({ status: 404, body: ROUTE_NOT_FOUND });
        expect(await get(sb, '/api/v4/admin/token', {})).toEqual({ status: 404, body: ROUTE_NOT_FOUND });
      } else {
        expect(await get(sb, '/api/v4/admin/token', {})).toMatchObject({ status: 405 });
      }
    } finally {
      await sb.close();
    }
  });

  it('turns the endpoint on in 17.6 once admin_agnostic_token_finder is set through the Features API', async () => {
    const sb = await startSandbox({
      seed: seed((s) => {
        s.instance.version = '17.6.0';
      }),
    });
    try {
      expect((await post(sb, T.personal)).status).toBe(404);
      expect((await setFlag(sb, 'admin_agnostic_token_finder', true)).status).toBe(201);
      expect((await post(sb, T.personal)).status).toBe(200);
      expect(
        (await request(sb, 'DELETE', '/api/v4/features/admin_agnostic_token_finder', { 'private-token': ROOT })).status,
      ).toBe(204);
      expect((await post(sb, T.personal)).status).toBe(404);
    } finally {
      await sb.close();
    }
  });
});

describe('jobs that are not running', () => {
  it("a finished job's token neither authenticates nor is found", async () => {
    const sb = await startSandbox({ seed: seed() });
    try {
      sb.state.db.prepare('UPDATE credentials SET extra = \'{"status":"success"}\' WHERE value = ?').run(T.job);
      expect(await get(sb, '/api/v4/job', { 'job-token': T.job })).toEqual({
        status: 401,
        body: { message: '401 Unauthorized' },
      });
      expect(await post(sb, T.job)).toEqual({ status: 404, body: NOT_FOUND });
    } finally {
      await sb.close();
    }
  });
});

describe('arbitrary input never produces a 5xx', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed() });
  });
  afterAll(async () => {
    await sb.close();
  });

  const paths = [
    '/api/v4/admin/token',
    '/oauth/token',
    '/api/v4/runners/verify',
    '/api/v4/projects/1/trigger/pipeline',
    '/api/v4/features/some_flag',
    '/api/v4/user',
    '/api/v4/users',
    '/api/v4/job',
  ];
  const headerValue = fc
    .oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom(ROOT, ALICE, T.job, 'Bearer x', 'Bearer sandbox-oauth-access-root-0001'),
    )
    .map((v) => v.replace(/[^\x20-\x7e]/g, ''));

  it('answers every body, parameter and header combination with JSON below 500', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.constantFrom(...paths),
        fc.constantFrom('GET', 'POST', 'DELETE', 'PUT'),
        fc.oneof(
          fc.json(),
          fc.string({ maxLength: 60 }),
          fc.constant('{"token":'),
          fc.constant('token=glpat-x&token[]=y'),
        ),
        fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'text/plain'),
        fc.record(
          {
            'private-token': headerValue,
            sudo: headerValue,
            authorization: headerValue,
            cookie: headerValue,
            'job-token': headerValue,
          },
          { requiredKeys: [] },
        ),
        fc.dictionary(
          fc.constantFrom(
            'sudo',
            'private_token',
            'access_token',
            'job_token',
            'token',
            'username',
            'search',
            'page',
            'per_page',
            'value',
            'grant_type',
            'refresh_token',
            'client_id',
          ),
          fc.string({ maxLength: 20 }),
        ),
        async (path, method, body, type, headers, query) => {
          const url = new URL(path, sb.url);
          for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
          const res = await fetch(url, {
            method,
            headers: { ...headers, 'content-type': type },
            body: method === 'GET' ? undefined : body,
          });
          const text = await res.text();
          expect(res.status, `${method} ${url.pathname} -> ${text}`).toBeLessThan(500);
          if (res.status !== 204) expect(() => JSON.parse(text)).not.toThrow();
        },
      ),
      { numRuns: 300 },
    );
  });
});
