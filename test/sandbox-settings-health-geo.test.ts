import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed, parseSeed } from '../src/sandbox/seed.js';
import { isAllowlisted, monitoringAllowlist } from '../src/sandbox/instance/health.js';

const ADMIN = 'glpat-sandbox-root-api-sudo-0001';
const ALICE = 'glpat-sandbox-alice-api-00000006';

function seedWith(change: (s: Seed) => void): Seed {
  const seed = loadSeed();
  change(seed);
  return seed;
}

async function call(url: string, method: string, token?: string, body?: unknown, form = false) {
  const headers: Record<string, string> = token ? { 'private-token': token } : {};
  let payload: string | undefined;
  if (body !== undefined) {
    headers['content-type'] = form ? 'application/x-www-form-urlencoded' : 'application/json';
    payload = form ? String(body) : JSON.stringify(body);
  }
  const res = await fetch(url, { method, headers, ...(payload !== undefined ? { body: payload } : {}) });
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: json as Record<string, unknown> };
}

/** A request with its own `Host` header (fetch cannot set one): how a client reaches one Geo site of the sandbox. */
function hostCall(
  sb: RunningSandbox,
  host: string,
  path: string,
  body?: unknown,
  method = 'POST',
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: sb.port,
        path,
        method,
        headers: {
          host,
          'private-token': ADMIN,
          ...(payload !== undefined
            ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }
            : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('application settings', () => {
  let sb: RunningSandbox;
  const settings = (method: string, token?: string, body?: unknown, form = false) =>
    call(`${sb.url}/api/v4/application/settings`, method, token, body, form);
  beforeAll(async () => {
    sb = await startSandbox();
  });
  afterAll(async () => {
    await sb.close();
  });

  it('shows the seeded weights to admins only', async () => {
    const r = await settings('GET', ADMIN);
    expect(r.status).toBe(200);
    expect(r.body.repository_storages_weighted).toEqual({ default: 100 });
    expect(r.body.admin_mode).toBe(false);
    expect((await settings('GET', ALICE)).status).toBe(403);
    expect((await settings('GET')).status).toBe(401);
    expect((await settings('PUT', ALICE, { repository_storages_weighted: { cluster: 100 } })).status).toBe(403);
  });

  it('replaces the weights from JSON, coercing string numbers', async () => {
    const r = await settings('PUT', ADMIN, { repository_storages_weighted: { cluster: '100', default: 0 } });
    expect(r.status).toBe(200);
    expect(r.body.repository_storages_weighted).toEqual({ cluster: 100, default: 0 });
    const again = await settings('PUT', ADMIN, { repository_storages_weighted: { 'nfs-2': 5 } });
    expect(again.body.repository_storages_weighted).toEqual({ 'nfs-2': 5 });
    expect((await settings('GET', ADMIN)).body.repository_storages_weighted).toEqual({ 'nfs-2': 5 });
  });

  it('accepts the form-encoded hash', async () => {
    const r = await settings(
      'PUT',
      ADMIN,
      'repository_storages_weighted[cluster]=70&repository_storages_weighted[default]=30',
      true,
    );
    expect(r.status).toBe(200);
    expect(r.body.repository_storages_weighted).toEqual({ cluster: 70, default: 30 });
  });

  // Grape's HashOfIntegerValues: `value.transform_values(&:to_i)` (lib/api/validations/types/hash_of_integer_values.rb).
  it('takes every weight through Ruby\'s to_i: "abc" is 0, 50.7 and "50.7" are 50, null is 0', async () => {
    const r = await settings('PUT', ADMIN, {
      repository_storages_weighted: { default: 'abc', cluster: 50.7, 'nfs-1': ' 7 apples', 'nfs-2': '1_0' },
    });
    expect(r.status).toBe(200);
    expect(r.body.repository_storages_weighted).toEqual({ default: 0, cluster: 50, 'nfs-1': 7, 'nfs-2': 10 });
    const more = await settings('PUT', ADMIN, {
      repository_storages_weighted: { default: '50.7', cluster: null, 'nfs-1': -0.9, 'nfs-2': '' },
    });
    expect(more.body.repository_storages_weighted).toEqual({ default: 50, cluster: 0, 'nfs-1': 0, 'nfs-2': 0 });
    const form = await settings(
      'PUT',
      ADMIN,
      'repository_storages_weighted[cluster]=70.9&repository_storages_weighted[default]=x',
      true,
    );
    expect(form.body.repository_storages_weighted).toEqual({ cluster: 70, default: 0 });
  });

  it("answers GitLab's validation errors and keeps the previous weights", async () => {
    const bad = await settings('PUT', ADMIN, {
      repository_storages_weighted: { nope: 1, other: 2, default: 'x', cluster: 101, 'nfs-1': -1 },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      message: {
        repository_storages_weighted: [
          "can't include: nope, other",
          "value for 'cluster' must be between 0 and 100",
          "value for 'nfs-1' must be between 0 and 100",
        ],
      },
    });
    expect((await settings('PUT', ADMIN, { repository_storages_weighted: { default: '250.5' } })).body).toEqual({
      message: { repository_storages_weighted: ["value for 'default' must be between 0 and 100"] },
    });
    // true, arrays and hashes have no to_i: the coercer raises, and Grape calls the parameter invalid.
    for (const value of [true, [1], { a: 1 }]) {
      expect(await settings('PUT', ADMIN, { repository_storages_weighted: { default: value } })).toMatchObject({
        status: 400,
        body: { error: 'repository_storages_weighted is invalid' },
      });
    }
    expect((await settings('PUT', ADMIN, { repository_storages_weighted: 'default' })).status).toBe(400);
    expect((await settings('GET', ADMIN)).body.repository_storages_weighted).toEqual({ cluster: 70, default: 0 });
  });

  it('toggles admin_mode, which then gates admin endpoints on the admin_mode scope', async () => {
    expect((await settings('PUT', ADMIN, { admin_mode: 'maybe' })).status).toBe(400);
    const on = await settings('PUT', ADMIN, { admin_mode: true });
    expect(on.body.admin_mode).toBe(true);
    expect((await settings('GET', ADMIN)).status).toBe(403);
    const off = await settings('PUT', 'glpat-sandbox-root-admin-mode-03', { admin_mode: false });
    expect(off.status).toBe(200);
    expect((await settings('GET', ADMIN)).body.admin_mode).toBe(false);
  });
});

describe('health probes', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({
      seed: seedWith((s) => {
        s.instance.unreachable = ['nfs-2'];
      }),
      faults: { errorRate: 1, seed: 3 },
    });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('answers /-/health and /-/liveness without credentials, despite faults', async () => {
    const health = await call(`${sb.url}/-/health`, 'GET');
    expect(health).toMatchObject({ status: 200, text: 'GitLab OK' });
    expect((await call(`${sb.url}/-/liveness`, 'GET')).body).toEqual({ status: 'ok' });
    // The API itself is down (error rate 1), the probes are exempt.
    expect((await call(`${sb.url}/api/v4/version`, 'GET', ADMIN)).status).toBe(503);
  });

  it('runs only master_check by default', async () => {
    expect((await call(`${sb.url}/-/readiness`, 'GET')).body).toEqual({
      status: 'ok',
      master_check: [{ status: 'ok' }],
    });
  });

  it('reports one gitaly_check per storage with ?all=1; one failure keeps the top level ok', async () => {
    const r = await call(`${sb.url}/-/readiness?all=1`, 'GET');
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('ok');
    expect(r.body.db_check).toEqual([{ status: 'ok' }]);
    const gitaly = r.body.gitaly_check as { status: string; labels: { shard: string }; message?: string }[];
    expect(gitaly.map((g) => g.labels.shard)).toEqual(['default', 'nfs-1', 'nfs-2', 'cluster']);
    expect(gitaly.filter((g) => g.status === 'failed').map((g) => g.labels.shard)).toEqual(['nfs-2']);
    expect(gitaly.find((g) => g.labels.shard === 'nfs-2')?.message).toMatch(/nfs-2/);
  });

  it('answers 503 failed when every storage is unreachable', async () => {
    const down = await startSandbox({
      seed: seedWith((s) => {
        s.instance.storages = ['a', 'b'];
        s.instance.unreachable = ['a', 'b'];
        s.inventory = {};
      }),
    });
    try {
      const r = await call(`${down.url}/-/readiness?all=1`, 'GET');
      expect(r.status).toBe(503);
      expect(r.body.status).toBe('failed');
      expect((await call(`${down.url}/-/readiness`, 'GET')).status).toBe(200);
    } finally {
      await down.close();
    }
  });
});

describe('health probes: the monitoring IP allowlist', () => {
  it("answers 404 off the allowlist: GitLab's HTML not-found page for readiness and liveness, an empty text body for /-/health", async () => {
    const sb = await startSandbox({
      seed: seedWith((s) => {
        s.instance.monitoring_allowlist = ['10.0.0.0/8', '::1/128'];
      }),
    });
    try {
      for (const path of ['/-/readiness?all=1', '/-/readiness', '/-/liveness']) {
        const r = await call(`${sb.url}${path}`, 'GET');
        expect(r.status, path).toBe(404);
        expect(r.headers.get('content-type'), path).toMatch(/^text\/html/);
        expect(r.text, path).toContain('<title>Not Found</title>');
        expect(r.body, path).toBeUndefined();
      }
      const health = await call(`${sb.url}/-/health`, 'GET');
      expect(health).toMatchObject({ status: 404, text: '' });
      expect(health.headers.get('content-type')).toMatch(/^text\/plain/);
      // Credentials change nothing: the allowlist is about the client's address.
      expect((await call(`${sb.url}/-/readiness`, 'GET', ADMIN)).status).toBe(404);
      // The API itself is not behind the allowlist.
      expect((await call(`${sb.url}/api/v4/version`, 'GET', ADMIN)).status).toBe(200);
    } finally {
      await sb.close();
    }
  });

  it('answers clients on the allowlist; an explicit list replaces the default', async () => {
    const sb = await startSandbox({
      seed: seedWith((s) => {
        s.instance.monitoring_allowlist = ['127.0.0.1'];
      }),
    });
    try {
      expect((await call(`${sb.url}/-/readiness?all=1`, 'GET')).status).toBe(200);
      expect((await call(`${sb.url}/-/health`, 'GET')).text).toBe('GitLab OK');
    } finally {
      await sb.close();
    }
  });

  it('matches IPv4 entries against IPv4-mapped IPv6 addresses, as Node reports them on a dual-stack socket', async () => {
    const list = monitoringAllowlist({
      ...loadSeed().instance,
      monitoring_allowlist: ['127.0.0.0/8', '2001:db8::/32'],
    });
    expect(isAllowlisted(list, '127.0.0.1')).toBe(true);
    expect(isAllowlisted(list, '::ffff:127.0.0.1')).toBe(true);
    expect(isAllowlisted(list, '::ffff:10.0.0.1')).toBe(false);
    expect(isAllowlisted(list, '2001:db8::5')).toBe(true);
    expect(isAllowlisted(list, '::1')).toBe(false);
    expect(isAllowlisted(list, undefined)).toBe(false);
    expect(isAllowlisted(list, 'not-an-address')).toBe(false);
    const byDefault = monitoringAllowlist({ ...loadSeed().instance, monitoring_allowlist: undefined });
    expect(['127.0.0.1', '127.255.0.9', '::ffff:127.0.0.1', '::1'].map((a) => isAllowlisted(byDefault, a))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(isAllowlisted(byDefault, '192.168.1.1')).toBe(false);
    // A real dual-stack socket, when the host has IPv6: an IPv4 client arrives as ::ffff:127.0.0.1.
    let sb: RunningSandbox | undefined;
    try {
      sb = await startSandbox({
        host: '::',
        seed: seedWith((s) => {
          s.instance.monitoring_allowlist = ['127.0.0.1/32'];
        }),
      });
    } catch {
      return;
    }
    try {
      expect((await call(`http://127.0.0.1:${sb.port}/-/readiness`, 'GET')).status).toBe(200);
    } finally {
      await sb.close();
    }
  });

  it('refuses a seed whose allowlist entry is not an address or CIDR', () => {
    expect(() => parseSeed('instance: { monitoring_allowlist: ["127.0.0.0/8", "10.0.0.0/33", "localhost"] }')).toThrow(
      /monitoring_allowlist\.1: must be an IP address or a CIDR[\s\S]*monitoring_allowlist\.2/,
    );
  });
});

describe('Geo', () => {
  let sb: RunningSandbox;
  const gql = (body: unknown, token = ADMIN) => call(`${sb.url}/api/graphql`, 'POST', token, body);
  const mutation =
    'mutation($cls: GeoRegistryClass!, $action: GeoRegistriesBulkAction!) { geoRegistriesBulkUpdate(input: { registryClass: $cls, action: $action }) { registryClass errors } }';
  beforeAll(async () => {
    sb = await startSandbox();
  });
  afterAll(async () => {
    await sb.close();
  });

  it('lists sites and their status for admins', async () => {
    const sites = await call(`${sb.url}/api/v4/geo_sites`, 'GET', ADMIN);
    expect(sites.status).toBe(200);
    expect((sites.body as unknown as { id: number; primary: boolean }[]).map((s) => [s.id, s.primary])).toEqual([
      [1, true],
      [2, false],
    ]);
    expect((await call(`${sb.url}/api/v4/geo_sites/2`, 'GET', ADMIN)).body).toMatchObject({ id: 2, name: 'secondary' });
    // GeoNode.find: ActiveRecord's 404, not the `404 GeoSite Not Found` of the route's desc; `:id` is a Grape Integer.
    expect(await call(`${sb.url}/api/v4/geo_sites/9`, 'GET', ADMIN)).toMatchObject({
      status: 404,
      body: { message: '404 Not found' },
    });
    expect(await call(`${sb.url}/api/v4/geo_sites/9/status`, 'GET', ADMIN)).toMatchObject({
      status: 404,
      body: { message: '404 Not found' },
    });
    expect(await call(`${sb.url}/api/v4/geo_sites/eu`, 'GET', ADMIN)).toMatchObject({
      status: 400,
      body: { error: 'id is invalid' },
    });
    const status = await call(`${sb.url}/api/v4/geo_sites/2/status`, 'GET', ADMIN);
    expect(status.body).toMatchObject({
      geo_node_id: 2,
      healthy: true,
      project_repositories_count: 300,
      snippet_repositories_count: 40,
      group_wiki_repositories_count: 20,
      registry_bulk_actions: [],
    });
    expect(((await call(`${sb.url}/api/v4/geo_sites/status`, 'GET', ADMIN)).body as unknown as unknown[]).length).toBe(
      2,
    );
    expect((await call(`${sb.url}/api/v4/geo_sites`, 'GET', ALICE)).status).toBe(403);
  });

  it("at the primary: answers success with errors [] (variables or literals) and marks no registry, as GitLab's enqueue-only service", async () => {
    const before = (sb.state.db.prepare('SELECT count(*) n FROM geo_actions').get() as { n: number }).n;
    const r = await gql({ query: mutation, variables: { cls: 'PROJECT_REPOSITORY_REGISTRY', action: 'RESYNC_ALL' } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      data: { geoRegistriesBulkUpdate: { registryClass: 'PROJECT_REPOSITORY_REGISTRY', errors: [] } },
    });
    const literal = await gql({
      query:
        'mutation { geoRegistriesBulkUpdate(input: { registryClass: SNIPPET_REPOSITORY_REGISTRY, action: REVERIFY_ALL }) { errors } }',
    });
    expect(literal.body).toMatchObject({
      data: { geoRegistriesBulkUpdate: { registryClass: 'SNIPPET_REPOSITORY_REGISTRY', errors: [] } },
    });
    const input = await gql({
      query:
        'mutation bulk($input: GeoRegistriesBulkUpdateInput!) { geoRegistriesBulkUpdate(input: $input) { registryClass errors } }',
      variables: { input: { registryClass: 'GROUP_WIKI_REPOSITORY_REGISTRY', action: 'RESYNC_ALL' } },
    });
    expect(input.body).toMatchObject({
      data: { geoRegistriesBulkUpdate: { registryClass: 'GROUP_WIKI_REPOSITORY_REGISTRY' } },
    });
    // Through the proxy to the primary itself: the same.
    expect(
      (
        await call(`${sb.url}/api/v4/geo/node_proxy/1/graphql`, 'POST', ADMIN, {
          query: mutation,
          variables: { cls: 'PROJECT_REPOSITORY_REGISTRY', action: 'RESYNC_ALL' },
        })
      ).body,
    ).toEqual({ data: { geoRegistriesBulkUpdate: { registryClass: 'PROJECT_REPOSITORY_REGISTRY', errors: [] } } });
    expect((sb.state.db.prepare('SELECT count(*) n FROM geo_actions').get() as { n: number }).n).toBe(before);
    for (const id of [1, 2]) {
      const status = await call(`${sb.url}/api/v4/geo_sites/${id}/status`, 'GET', ADMIN);
      expect(status.body).toMatchObject({ registry_bulk_actions: [], project_repositories_synced_count: 300 });
    }
  });

  it("at a secondary (its own host) or through the primary's proxy: marks that site's registries, visible in its status counters", async () => {
    const atSecondary = await hostCall(sb, 'secondary.example.com', '/api/graphql', {
      query: mutation,
      variables: { cls: 'SNIPPET_REPOSITORY_REGISTRY', action: 'REVERIFY_ALL' },
    });
    expect(atSecondary).toEqual({
      status: 200,
      body: { data: { geoRegistriesBulkUpdate: { registryClass: 'SNIPPET_REPOSITORY_REGISTRY', errors: [] } } },
    });
    const proxied = await call(`${sb.url}/api/v4/geo/node_proxy/2/graphql`, 'POST', ADMIN, {
      query: mutation,
      variables: { cls: 'PROJECT_REPOSITORY_REGISTRY', action: 'RESYNC_ALL' },
    });
    expect(proxied.body).toEqual({
      data: { geoRegistriesBulkUpdate: { registryClass: 'PROJECT_REPOSITORY_REGISTRY', errors: [] } },
    });
    expect(
      sb.state.db.prepare('SELECT site_id, registry_class, action, registries FROM geo_actions ORDER BY id').all(),
    ).toEqual([
      { site_id: 2, registry_class: 'SNIPPET_REPOSITORY_REGISTRY', action: 'REVERIFY_ALL', registries: 40 },
      { site_id: 2, registry_class: 'PROJECT_REPOSITORY_REGISTRY', action: 'RESYNC_ALL', registries: 300 },
    ]);
    const status = (await call(`${sb.url}/api/v4/geo_sites/2/status`, 'GET', ADMIN)).body;
    expect(status).toMatchObject({
      project_repositories_registry_count: 300,
      project_repositories_synced_count: 0,
      project_repositories_synced_in_percentage: '0.00%',
      snippet_repositories_synced_count: 40,
      snippet_repositories_verified_count: 0,
      group_wiki_repositories_synced_count: 20,
    });
    expect((status.registry_bulk_actions as { registry_class: string }[]).map((a) => a.registry_class)).toEqual([
      'SNIPPET_REPOSITORY_REGISTRY',
      'PROJECT_REPOSITORY_REGISTRY',
    ]);
    expect((await call(`${sb.url}/api/v4/geo_sites/1/status`, 'GET', ADMIN)).body).toMatchObject({
      registry_bulk_actions: [],
      project_repositories_synced_count: 300,
    });
  });

  it('answers unknown classes and actions with GraphQL errors and status 200, recording nothing', async () => {
    const before = (sb.state.db.prepare('SELECT count(*) n FROM geo_actions').get() as { n: number }).n;
    const r = await gql({ query: mutation, variables: { cls: 'NOPE_REGISTRY', action: 'DELETE_ALL' } });
    expect(r.status).toBe(200);
    const errors = r.body.errors as { message: string }[];
    expect(errors).toHaveLength(2);
    expect(errors[0]?.message).toContain('registryClass');
    expect(errors[1]?.message).toContain('action');
    expect((await gql({ query: '{ currentUser { id } }' })).body.errors).toBeDefined();
    expect((await gql({ query: 42 })).status).toBe(200);
    const denied = await gql(
      { query: mutation, variables: { cls: 'PROJECT_REPOSITORY_REGISTRY', action: 'RESYNC_ALL' } },
      ALICE,
    );
    expect(denied.body).toMatchObject({
      data: { geoRegistriesBulkUpdate: null },
      errors: [{ message: expect.stringContaining("don't have permission") }],
    });
    expect((sb.state.db.prepare('SELECT count(*) n FROM geo_actions').get() as { n: number }).n).toBe(before);
  });

  it("accepts the mutation through the primary proxy; an unknown site is ActiveRecord's 404, a non-integer one 400", async () => {
    const r = await call(`${sb.url}/api/v4/geo/node_proxy/2/graphql`, 'POST', ADMIN, {
      query: mutation,
      variables: { cls: 'PROJECT_WIKI_REPOSITORY_REGISTRY', action: 'REVERIFY_ALL' },
    });
    expect(r.body).toMatchObject({
      data: { geoRegistriesBulkUpdate: { registryClass: 'PROJECT_WIKI_REPOSITORY_REGISTRY' } },
    });
    // GeoNode.find raises before the route's `not_found!('GeoNode')` could run.
    expect(await call(`${sb.url}/api/v4/geo/node_proxy/9/graphql`, 'POST', ADMIN, { query: mutation })).toMatchObject({
      status: 404,
      body: { message: '404 Not found' },
    });
    expect(await call(`${sb.url}/api/v4/geo/node_proxy/eu/graphql`, 'POST', ADMIN, { query: mutation })).toMatchObject({
      status: 400,
      body: { error: 'id is invalid' },
    });
  });
});

describe('Geo: a primary with several secondaries', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({
      seed: seedWith((s) => {
        s.geo_sites = [
          { id: 1, name: 'primary', url: 'https://gitlab.example.com/', primary: true },
          { id: 2, name: 'eu', url: 'https://eu.gitlab.example.com/' },
          { id: 3, name: 'asia', url: 'https://asia.gitlab.example.com/', enabled: false },
        ];
      }),
    });
  });
  afterAll(async () => {
    await sb.close();
  });

  it("lists the sites (GitLab's GeoSite entity, offset-paginated): secondary-only fields on secondaries, `current` for the site asked", async () => {
    const r = await call(`${sb.url}/api/v4/geo_sites`, 'GET', ADMIN);
    expect(r.headers.get('x-total')).toBe('3');
    const sites = r.body as unknown as Record<string, unknown>[];
    expect(sites.map((s) => [s.id, s.name, s.url, s.primary, s.enabled, s.current])).toEqual([
      [1, 'primary', 'https://gitlab.example.com/', true, true, true],
      [2, 'eu', 'https://eu.gitlab.example.com/', false, true, false],
      [3, 'asia', 'https://asia.gitlab.example.com/', false, false, false],
    ]);
    expect(Object.keys(sites[0] as object)).toEqual([
      'id',
      'name',
      'url',
      'internal_url',
      'primary',
      'enabled',
      'current',
      'files_max_capacity',
      'repos_max_capacity',
      'verification_max_capacity',
      'container_repositories_max_capacity',
      'selective_sync_type',
      'selective_sync_shards',
      'selective_sync_namespace_ids',
      'minimum_reverification_interval',
      'web_edit_url',
      '_links',
    ]);
    expect(sites[1]).toMatchObject({
      sync_object_storage: false,
      web_geo_replication_details_url:
        'https://eu.gitlab.example.com/admin/geo/sites/2/replication/project_repositories',
    });
    const paged = await call(`${sb.url}/api/v4/geo_sites?per_page=2&page=2`, 'GET', ADMIN);
    expect((paged.body as unknown as { id: number }[]).map((s) => s.id)).toEqual([3]);
    const fromEu = await hostCall(sb, 'eu.gitlab.example.com', '/api/v4/geo_sites', undefined, 'GET');
    expect((fromEu.body as { id: number; current: boolean }[]).map((s) => [s.id, s.current])).toEqual([
      [1, false],
      [2, true],
      [3, false],
    ]);
  });

  it('keeps registry state per site', async () => {
    const mutation =
      'mutation($registryClass: GeoRegistryClass!) { geoRegistriesBulkUpdate(input: {registryClass: $registryClass, action: RESYNC_ALL}) { registryClass errors } }';
    for (const id of [1, 2, 3]) {
      const r = await call(`${sb.url}/api/v4/geo/node_proxy/${id}/graphql`, 'POST', ADMIN, {
        query: mutation,
        variables: { registryClass: 'GROUP_WIKI_REPOSITORY_REGISTRY' },
      });
      expect(r.body).toEqual({
        data: { geoRegistriesBulkUpdate: { registryClass: 'GROUP_WIKI_REPOSITORY_REGISTRY', errors: [] } },
      });
    }
    expect(sb.state.db.prepare('SELECT site_id FROM geo_actions ORDER BY id').all()).toEqual([
      { site_id: 2 },
      { site_id: 3 },
    ]);
    const counts = await Promise.all(
      [1, 2, 3].map(
        async (id) =>
          (await call(`${sb.url}/api/v4/geo_sites/${id}/status`, 'GET', ADMIN)).body
            .group_wiki_repositories_synced_count,
      ),
    );
    expect(counts).toEqual([20, 0, 0]);
  });

  it('refuses a seed with two primaries, duplicate ids or hosts, or a site URL that is not http(s)', () => {
    const bad = `geo_sites:
  - { id: 1, name: a, url: "https://a.example.com/", primary: true }
  - { id: 1, name: b, url: "https://a.example.com/", primary: true }
  - { id: 3, name: c, url: "ftp://c" }
`;
    expect(() => parseSeed(bad)).toThrow(
      /geo_sites\.1\.id: duplicate site id 1[\s\S]*geo_sites\.1\.url: another site has the host a\.example\.com[\s\S]*geo_sites\.1\.primary: only one site[\s\S]*geo_sites\.2\.url: must be an http\(s\) URL/,
    );
  });
});

describe('Geo on the free tier and the Community Edition', () => {
  const mutation =
    'mutation { geoRegistriesBulkUpdate(input: { registryClass: PROJECT_REPOSITORY_REGISTRY, action: RESYNC_ALL }) { errors } }';

  // ee/lib/api/geo_sites.rb and the node proxy call authenticated_as_admin! only; the mutation needs
  // read_all_geo, which EE's GlobalPolicy gives every admin. No licence check anywhere.
  it('answers on EE Free as on Premium: sites, status, the proxy and the mutation', async () => {
    // A Free instance has no sites unless it had some, e.g. from a lapsed licence: seed them.
    const sb = await startSandbox({
      seed: seedWith((s) => {
        s.instance.tier = 'free';
        s.geo_sites = [
          { id: 1, name: 'primary', url: 'https://gitlab.example.com/', primary: true },
          { id: 2, name: 'eu', url: 'https://eu.gitlab.example.com/' },
        ];
      }),
    });
    try {
      expect((await call(`${sb.url}/api/v4/geo_sites/status`, 'GET', ADMIN)).status).toBe(200);
      const sites = await call(`${sb.url}/api/v4/geo_sites`, 'GET', ADMIN);
      expect(sites.status).toBe(200);
      expect((sites.body as unknown as { id: number }[]).map((x) => x.id)).toEqual([1, 2]);
      expect((await call(`${sb.url}/api/v4/geo_sites/2/status`, 'GET', ADMIN)).body).toMatchObject({ geo_node_id: 2 });
      expect((await call(`${sb.url}/api/v4/geo_sites`, 'GET', ALICE)).status).toBe(403);
      const proxied = await call(`${sb.url}/api/v4/geo/node_proxy/2/graphql`, 'POST', ADMIN, { query: mutation });
      expect(proxied.body).toEqual({
        data: { geoRegistriesBulkUpdate: { registryClass: 'PROJECT_REPOSITORY_REGISTRY', errors: [] } },
      });
      expect(
        (sb.state.db.prepare('SELECT count(*) n FROM geo_actions WHERE site_id = 2').get() as { n: number }).n,
      ).toBe(1);
    } finally {
      await sb.close();
    }
  });

  it('has none of it on the Community Edition: 404 before authentication, and no such mutation in the schema', async () => {
    const sb = await startSandbox({
      seed: seedWith((s) => {
        Object.assign(s.instance, { edition: 'ce', tier: 'free' });
      }),
    });
    try {
      const absent = { status: 404, body: { error: '404 Not Found' } };
      expect(await call(`${sb.url}/api/v4/geo_sites`, 'GET', ADMIN)).toMatchObject(absent);
      expect(await call(`${sb.url}/api/v4/geo_sites`, 'GET')).toMatchObject(absent);
      expect(await call(`${sb.url}/api/v4/geo_sites/2/status`, 'GET', ALICE)).toMatchObject(absent);
      expect(await call(`${sb.url}/api/v4/geo/node_proxy/2/graphql`, 'POST', ADMIN, { query: mutation })).toMatchObject(
        absent,
      );
      const r = await call(`${sb.url}/api/graphql`, 'POST', ADMIN, { query: mutation });
      expect(r).toMatchObject({
        status: 200,
        body: { errors: [{ message: "Field 'geoRegistriesBulkUpdate' doesn't exist on type 'Mutation'" }] },
      });
      expect(r.body).not.toHaveProperty('data');
    } finally {
      await sb.close();
    }
  });
});
