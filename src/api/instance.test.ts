import { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { RequestEvent } from './client.js';
import { createInstanceApi } from './instance.js';
import type { InstanceApiOptions } from './instance.js';
import type { ItemRecord } from './types.js';

const ORIGIN = 'http://gitlab.test';
const TOKEN = 'glpat-RUNTOKEN00000000000';
const J = { headers: { 'content-type': 'application/json' } };
let agent: MockAgent | undefined;

function setup(extra: Partial<InstanceApiOptions> = {}) {
  const mock = new MockAgent();
  agent = mock;
  mock.disableNetConnect();
  const events: RequestEvent[] = [];
  const api = createInstanceApi({
    baseUrl: ORIGIN,
    credentials: { type: 'token', token: TOKEN },
    sudo: null,
    timeoutMs: 1000,
    dispatcher: mock,
    sleep: () => Promise.resolve(),
    onRequest: (e) => events.push(e),
    ...extra,
  });
  return { pool: mock.get(ORIGIN), api, events };
}

const move = (id: number, state: string, extra: Record<string, unknown> = {}) => ({
  id,
  created_at: '2026-11-22T10:00:00Z',
  state,
  source_storage_name: 'nfs-1',
  destination_storage_name: 'cluster',
  project: { id: 7, path_with_namespace: 'a/b' },
  ...extra,
});

afterEach(async () => {
  agent?.assertNoPendingInterceptors();
  await agent?.close();
  agent = undefined;
});

describe('pre-flight reads', () => {
  it('reads version and the current user', async () => {
    const { pool, api } = setup();
    pool.intercept({ path: '/api/v4/metadata', method: 'GET' }).reply(404, { message: '404 Not Found' }, J);
    pool.intercept({ path: '/api/v4/version', method: 'GET' }).reply(200, { version: '17.9.1-ee', revision: 'x' }, J);
    pool.intercept({ path: '/api/v4/user', method: 'GET' }).reply(200, { id: 1, username: 'root', is_admin: true }, J);
    expect(await api.version()).toEqual({ version: '17.9.1-ee', enterprise: null });
    expect(await api.currentUser()).toEqual({ id: 1, username: 'root', isAdmin: true });
  });

  it('reads the edition from /metadata (15.2+)', async () => {
    const { pool, api } = setup();
    pool
      .intercept({ path: '/api/v4/metadata', method: 'GET' })
      .reply(200, { version: '17.11.0', revision: 'x', kas: {}, enterprise: false }, J);
    expect(await api.version()).toEqual({ version: '17.11.0', enterprise: false });
  });

  it('inspects a token, and answers null where the endpoint is missing or cannot tell', async () => {
    const { pool, api } = setup();
    pool
      .intercept({ path: '/api/v4/admin/token', method: 'POST', body: JSON.stringify({ token: TOKEN }) })
      .reply(
        200,
        { id: 5, user_id: 1, name: 'mover', revoked: false, expires_at: '2027-01-01', scopes: ['api', 'admin_mode'] },
        J,
      );
    pool.intercept({ path: '/api/v4/admin/token', method: 'POST' }).reply(404, { message: '404 Not Found' }, J);
    pool
      .intercept({ path: '/api/v4/admin/token', method: 'POST' })
      .reply(422, { message: 'Token type not supported.' }, J);
    pool.intercept({ path: '/api/v4/admin/token', method: 'POST' }).reply(503, 'unavailable');
    pool.intercept({ path: '/api/v4/admin/token', method: 'POST' }).reply(403, { message: '403 Forbidden' }, J);
    expect(await api.inspectToken(TOKEN)).toEqual({
      id: 5,
      userId: 1,
      name: 'mover',
      scopes: ['api', 'admin_mode'],
      revoked: false,
      expiresAt: '2027-01-01',
    });
    expect(await api.inspectToken(TOKEN)).toBeNull();
    expect(await api.inspectToken(TOKEN)).toBeNull();
    // A read-only POST is retried like a GET (503, then the 403).
    await expect(api.inspectToken(TOKEN)).rejects.toMatchObject({ code: 'SHARDMOVE_API_FORBIDDEN' });
    expect(api.stats()).toEqual({ requests: 5, mutating: 0 });
  });

  it('reports every gitaly shard, including a failed one under a top-level "ok"', async () => {
    const { pool, api } = setup();
    const body = {
      status: 'ok',
      master_check: [{ status: 'ok' }],
      gitaly_check: [
        { status: 'ok', labels: { shard: 'nfs-1' } },
        { status: 'failed', message: 'UNAVAILABLE', labels: { shard: 'cluster' } },
      ],
    };
    pool.intercept({ path: '/-/readiness?all=1', method: 'GET' }).reply(200, body, J);
    pool.intercept({ path: '/-/readiness?all=1', method: 'GET' }).reply(503, { ...body, status: 'failed' }, J);
    const expected = [
      { storage: 'nfs-1', ok: true, message: null },
      { storage: 'cluster', ok: false, message: 'UNAVAILABLE' },
    ];
    expect(await api.readiness()).toEqual({ status: 'ok', gitaly: expected });
    expect(await api.readiness()).toEqual({ status: 'failed', gitaly: expected });
  });

  it('rejects a readiness 404 (a client outside the monitoring allowlist gets an HTML page) as not found, unretried', async () => {
    const { pool, api } = setup();
    pool
      .intercept({ path: '/-/readiness?all=1', method: 'GET' })
      .reply(404, '<!DOCTYPE html><html>The page could not be found</html>', {
        headers: { 'content-type': 'text/html' },
      });
    await expect(api.readiness()).rejects.toMatchObject({ code: 'SHARDMOVE_API_NOT_FOUND', status: 404 });
  });

  it('reads weights and PUTs the full object as JSON', async () => {
    const { pool, api } = setup();
    pool
      .intercept({ path: '/api/v4/application/settings', method: 'GET' })
      .reply(200, { repository_storages_weighted: { 'nfs-1': 100, cluster: 0 } }, J);
    pool
      .intercept({
        path: '/api/v4/application/settings',
        method: 'PUT',
        body: JSON.stringify({ repository_storages_weighted: { 'nfs-1': 0, cluster: 100 } }),
      })
      .reply(200, { repository_storages_weighted: { 'nfs-1': 0, cluster: 100 } }, J);
    expect(await api.getWeights()).toEqual({ 'nfs-1': 100, cluster: 0 });
    expect(await api.setWeights({ 'nfs-1': 0, cluster: 100 })).toEqual({ 'nfs-1': 0, cluster: 100 });
  });
});

describe('items', () => {
  it('reads forks_count left out (a caller without read_code) as unknown, not 0 (docs/gitlab-behaviour.md §1.5)', async () => {
    const { pool, api } = setup();
    const project = (id: number, extra: Record<string, unknown>) => ({
      id,
      path_with_namespace: `g/p${id}`,
      repository_storage: 'nfs-1',
      ...extra,
    });
    pool.intercept({ path: '/api/v4/projects/1', method: 'GET' }).reply(200, project(1, {}), J);
    pool.intercept({ path: '/api/v4/projects/2', method: 'GET' }).reply(200, project(2, { forks_count: 0 }), J);
    pool.intercept({ path: '/api/v4/projects/3', method: 'GET' }).reply(200, project(3, { forks_count: 4 }), J);
    expect((await api.getItem('projects', 1))?.forksCount).toBeNull();
    expect(await api.getItem('projects', 2)).not.toHaveProperty('forksCount');
    expect((await api.getItem('projects', 3))?.forksCount).toBe(4);
  });

  it('lists projects by keyset from afterId, hidden and pending-delete ones included, never reading repository_read_only', async () => {
    const { pool, api } = setup();
    const project = (id: number) => ({
      id,
      path_with_namespace: `g/p${id}`,
      repository_storage: 'nfs-1',
      repository_read_only: true,
      statistics: { repository_size: id * 10 },
      forks_count: 0,
    });
    const q =
      'repository_storage=nfs-1&statistics=true&include_hidden=true&include_pending_delete=true&pagination=keyset&order_by=id&sort=asc';
    pool
      .intercept({ path: `/api/v4/projects?${q}&id_after=10&per_page=2`, method: 'GET' })
      .reply(200, [project(11), project(12)], {
        headers: { link: `<${ORIGIN}/api/v4/projects?id_after=12&per_page=2>; rel="next"` },
      });
    pool.intercept({ path: `/api/v4/projects?${q}&id_after=12&per_page=2`, method: 'GET' }).reply(200, [], {});
    const pages: ItemRecord[][] = [];
    for await (const p of api.listItemsOnStorage('projects', 'nfs-1', { afterId: 10, perPage: 2 })) pages.push(p);
    expect(pages).toEqual([
      [
        { kind: 'projects', id: 11, storage: 'nfs-1', name: 'g/p11', sizeBytes: 110 },
        { kind: 'projects', id: 12, storage: 'nfs-1', name: 'g/p12', sizeBytes: 120 },
      ],
    ]);
  });

  it("lists projects without one flag for a dry run's census: those carrying it are left out, and no statistics are asked", async () => {
    const { pool, api } = setup();
    const keyset = 'pagination=keyset&order_by=id&sort=asc&id_after=0&per_page=100';
    pool
      .intercept({
        path: `/api/v4/projects?repository_storage=nfs-1&include_pending_delete=true&${keyset}`,
        method: 'GET',
      })
      .reply(200, [{ id: 1, repository_storage: 'nfs-1' }]);
    pool
      .intercept({ path: `/api/v4/projects?repository_storage=nfs-1&include_hidden=true&${keyset}`, method: 'GET' })
      .reply(200, [{ id: 2, repository_storage: 'nfs-1' }]);
    const ids = async (leaveOut: 'hidden' | 'pending_delete') => {
      const out: number[] = [];
      for await (const p of api.listItemsOnStorage('projects', 'nfs-1', { leaveOut })) out.push(...p.map((i) => i.id));
      return out;
    };
    expect(await ids('hidden')).toEqual([1]);
    expect(await ids('pending_delete')).toEqual([2]);
  });

  it("counts a range of a storage's projects from one offset page's x-total, with or without a flag; none above 10,000", async () => {
    const { pool, api } = setup();
    const tail = 'order_by=id&sort=asc&simple=true&id_after=100&page=1&per_page=1&id_before=200';
    pool
      .intercept({
        path: `/api/v4/projects?repository_storage=nfs-1&include_hidden=true&include_pending_delete=true&${tail}`,
        method: 'GET',
      })
      .reply(200, [{ id: 101 }], { headers: { 'x-total': '99', 'x-total-pages': '99' } });
    pool
      .intercept({
        path: `/api/v4/projects?repository_storage=nfs-1&include_pending_delete=true&${tail}`,
        method: 'GET',
      })
      .reply(200, [{ id: 101 }], { headers: { 'x-total': '97' } });
    pool
      .intercept({ path: `/api/v4/projects?repository_storage=nfs-1&include_hidden=true&${tail}`, method: 'GET' })
      .reply(200, [{ id: 101 }], { headers: { 'x-next-page': '2' } });
    const range = { afterId: 100, beforeId: 200 };
    expect(await api.countItemsOnStorage('nfs-1', range)).toBe(99);
    expect(await api.countItemsOnStorage('nfs-1', { ...range, leaveOut: 'hidden' })).toBe(97);
    // GitLab leaves x-total out when the query has more than 10,000 records.
    expect(await api.countItemsOnStorage('nfs-1', { ...range, leaveOut: 'pending_delete' })).toBeNull();
  });

  it('lists snippets by offset without order params (GitLab ignores them), groups by id, both from page 1', async () => {
    const { pool, api } = setup();
    pool.intercept({ path: '/api/v4/snippets/all?repository_storage=nfs-1&page=1&per_page=100', method: 'GET' }).reply(
      200,
      [
        { id: 2, title: 's2', repository_storage: 'nfs-1' },
        { id: 1, title: 's1' },
      ],
      { headers: { 'x-next-page': '' } },
    );
    pool
      .intercept({
        path: '/api/v4/groups?repository_storage=nfs-1&order_by=id&sort=asc&page=1&per_page=100',
        method: 'GET',
      })
      .reply(200, [{ id: 3, full_path: 'g', repository_storage: 'nfs-1' }], { headers: { 'x-next-page': '' } });
    const snippets: ItemRecord[] = [];
    for await (const p of api.listItemsOnStorage('snippets', 'nfs-1', { afterId: 1 })) snippets.push(...p);
    // Newest first, as GitLab serves it; afterId means nothing to an offset listing.
    expect(snippets).toEqual([
      { kind: 'snippets', id: 2, storage: 'nfs-1', name: 's2', sizeBytes: null },
      { kind: 'snippets', id: 1, storage: null, name: 's1', sizeBytes: null },
    ]);
    const groups: ItemRecord[] = [];
    for await (const p of api.listItemsOnStorage('groups', 'nfs-1')) groups.push(...p);
    expect(groups).toEqual([{ kind: 'groups', id: 3, storage: 'nfs-1', name: 'g', sizeBytes: null }]);
  });

  it('narrows a page that keeps answering 500 down to the project that breaks it, and lists the rest', async () => {
    const { pool, api } = setup({ retry: { maxAttempts: 1 } });
    const project = (id: number) => ({ id, path_with_namespace: `g/p${id}`, repository_storage: 'nfs-1' });
    const q =
      'repository_storage=nfs-1&statistics=true&include_hidden=true&include_pending_delete=true&pagination=keyset&order_by=id&sort=asc';
    const ids = [1, 2, 3, 5, 6];
    const broken = 4;
    // A live keyset listing over ids 1..6 where project 4 cannot be rendered.
    pool
      .intercept({
        path: (p) => p.startsWith('/api/v4/projects?') && q.split('&').every((kv) => p.includes(kv)),
        method: 'GET',
      })
      .reply<object>((o) => {
        const u = new URL(String(o.path), ORIGIN);
        const after = Number(u.searchParams.get('id_after'));
        const before = Number(u.searchParams.get('id_before') ?? Infinity);
        const per = Number(u.searchParams.get('per_page'));
        const rest = [...ids, broken].sort((a, b) => a - b).filter((i) => i > after && i < before);
        const page = rest.slice(0, per);
        if (page.includes(broken)) return { statusCode: 500, data: { message: '500 Internal Server Error' } };
        return {
          statusCode: 200,
          data: page.map(project),
          responseOptions: rest.length > per ? { headers: { link: `<${ORIGIN}/x>; rel="next"` } } : {},
        };
      })
      .persist();
    const gaps: unknown[] = [];
    const listed: number[] = [];
    for await (const p of api.listItemsOnStorage('projects', 'nfs-1', {
      perPage: 100,
      onUnlistable: (g) => gaps.push(g),
    }))
      listed.push(...p.map((i) => i.id));
    expect(listed).toEqual([1, 2, 3, 5, 6]);
    expect(gaps).toEqual([
      { kind: 'projects', id: 4, afterId: 3, beforeId: 5, reason: 'this item breaks the listing (HTTP 500)' },
    ]);
  });

  it('gets one item, or null on 404', async () => {
    const { pool, api } = setup();
    pool
      .intercept({ path: '/api/v4/groups/3', method: 'GET' })
      .reply(200, { id: 3, full_path: 'g', repository_storage: 'cluster' }, J);
    pool.intercept({ path: '/api/v4/snippets/4', method: 'GET' }).reply(404, { message: '404 Snippet Not Found' }, J);
    expect(await api.getItem('groups', 3)).toMatchObject({ id: 3, storage: 'cluster' });
    expect(await api.getItem('snippets', 4)).toBeNull();
  });
});

describe('moves', () => {
  it('schedules a move with an explicit destination', async () => {
    const { pool, api } = setup();
    pool
      .intercept({
        path: '/api/v4/projects/7/repository_storage_moves',
        method: 'POST',
        body: JSON.stringify({ destination_storage_name: 'cluster' }),
      })
      .reply(201, move(99, 'scheduled'), J);
    expect(await api.scheduleMove('projects', 7, 'cluster')).toEqual({
      outcome: 'scheduled',
      move: {
        id: 99,
        kind: 'projects',
        itemId: 7,
        itemName: 'a/b',
        state: 'scheduled',
        sourceStorage: 'nfs-1',
        destinationStorage: 'cluster',
        errorMessage: null,
        createdAt: '2026-11-22T10:00:00Z',
      },
    });
  });

  it('answers read-only for "is read-only" and "is read only", throws other 400s and ambiguous 5xx', async () => {
    const { pool, api } = setup();
    const path = '/api/v4/snippets/3/repository_storage_moves';
    pool.intercept({ path, method: 'POST' }).reply(400, { message: { snippet: ['is read-only'] } }, J);
    pool.intercept({ path, method: 'POST' }).reply(400, { message: { snippet: ['is read only'] } }, J);
    pool
      .intercept({ path, method: 'POST' })
      .reply(400, { message: { destination_storage_name: ['is not included in the list'] } }, J);
    pool.intercept({ path, method: 'POST' }).reply(500, { message: '500 Internal Server Error' }, J);
    expect(await api.scheduleMove('snippets', 3, 'cluster')).toEqual({ outcome: 'read-only' });
    expect(await api.scheduleMove('snippets', 3, 'cluster')).toEqual({ outcome: 'read-only' });
    await expect(api.scheduleMove('snippets', 3, 'x')).rejects.toMatchObject({
      code: 'SHARDMOVE_API_HTTP',
      status: 400,
    });
    await expect(api.scheduleMove('snippets', 3, 'cluster')).rejects.toMatchObject({ code: 'SHARDMOVE_API_AMBIGUOUS' });
    expect(api.stats()).toEqual({ requests: 4, mutating: 4 });
  });

  it('schedules a bulk move per kind and storage', async () => {
    const { pool, api } = setup();
    pool
      .intercept({
        path: '/api/v4/group_repository_storage_moves',
        method: 'POST',
        body: JSON.stringify({ source_storage_name: 'nfs-1', destination_storage_name: 'cluster' }),
      })
      .reply(202, { message: '202 Accepted' }, J);
    await api.scheduleBulk('groups', 'nfs-1', 'cluster');
  });

  it('answers a 429 on the bulk POST at once, with Retry-After, without re-sending it (the drain decides)', async () => {
    const { pool, api } = setup();
    pool
      .intercept({ path: '/api/v4/project_repository_storage_moves', method: 'POST' })
      .reply(429, 'Retry later', { headers: { 'content-type': 'text/plain', 'retry-after': '30' } });
    await expect(api.scheduleBulk('projects', 'nfs-1', 'cluster')).rejects.toMatchObject({
      code: 'SHARDMOVE_API_RATE_LIMITED',
      status: 429,
      retryAfterMs: 30_000,
    });
    expect(api.stats()).toEqual({ requests: 1, mutating: 1 });
  });

  it("lists an item's moves across pages, a page of all moves, and one move", async () => {
    const { pool, api } = setup();
    const snip = (id: number, state: string) =>
      move(id, state, {
        project: undefined,
        snippet: { id: 3 },
        error_message: state === 'failed' ? 'boom' : undefined,
      });
    pool
      .intercept({ path: '/api/v4/snippets/3/repository_storage_moves?page=1&per_page=100', method: 'GET' })
      .reply(200, [snip(5, 'failed')], { headers: { 'x-next-page': '2' } });
    pool
      .intercept({ path: '/api/v4/snippets/3/repository_storage_moves?page=2&per_page=100', method: 'GET' })
      .reply(200, [snip(4, 'cleanup failed')], { headers: { 'x-next-page': '' } });
    const moves = await api.listItemMoves('snippets', 3);
    expect(moves.map((m) => [m.id, m.itemId, m.state, m.errorMessage])).toEqual([
      [5, 3, 'failed', 'boom'],
      [4, 3, 'cleanup failed', null],
    ]);
    pool
      .intercept({ path: '/api/v4/project_repository_storage_moves?page=2&per_page=50', method: 'GET' })
      .reply(200, [move(9, 'started')], { headers: { 'x-next-page': '3' } });
    pool
      .intercept({ path: '/api/v4/project_repository_storage_moves?page=3&per_page=50', method: 'GET' })
      .reply(200, [move(8, 'finished')], { headers: { 'x-next-page': '' } });
    expect(await api.listMoves('projects', 2, 50)).toMatchObject({ moves: [{ id: 9, state: 'started' }], nextPage: 3 });
    expect(await api.listMoves('projects', 3, 50)).toMatchObject({ nextPage: null });
    pool
      .intercept({ path: '/api/v4/project_repository_storage_moves/9', method: 'GET' })
      .reply(200, move(9, 'replicated'), J);
    pool
      .intercept({ path: '/api/v4/project_repository_storage_moves/10', method: 'GET' })
      .reply(404, { message: '404 Not found' }, J);
    expect(await api.getMove('projects', 9)).toMatchObject({ id: 9, state: 'replicated', itemId: 7 });
    expect(await api.getMove('projects', 10)).toBeNull();
  });

  it('rejects a move record with an unknown state', async () => {
    const { pool, api } = setup();
    pool
      .intercept({ path: '/api/v4/project_repository_storage_moves/9', method: 'GET' })
      .reply(200, move(9, 'teleported'), J);
    await expect(api.getMove('projects', 9)).rejects.toMatchObject({ code: 'SHARDMOVE_API_INVALID_RESPONSE' });
  });
});

describe('geo and dry run', () => {
  it('lists the Geo sites across pages, and answers null where GET /geo_sites and GET /geo_nodes are 404 (no Geo API: the Community Edition)', async () => {
    const { pool, api } = setup();
    const site = (id: number, primary: boolean, extra: Record<string, unknown> = {}) => ({
      id,
      name: `site-${id}`,
      url: `https://s${id}.test/`,
      primary,
      enabled: true,
      current: primary,
      ...extra,
    });
    pool
      .intercept({ path: '/api/v4/geo_sites?page=1&per_page=100', method: 'GET' })
      .reply(200, [site(1, true), site(2, false)], { headers: { 'x-next-page': '2' } });
    pool
      .intercept({ path: '/api/v4/geo_sites?page=2&per_page=100', method: 'GET' })
      .reply(200, [site(3, false, { enabled: false })], { headers: { 'x-next-page': '' } });
    expect(await api.geoSites()).toEqual([
      { listedBy: 'geo_sites', id: 1, name: 'site-1', url: 'https://s1.test/', primary: true, enabled: true },
      { listedBy: 'geo_sites', id: 2, name: 'site-2', url: 'https://s2.test/', primary: false, enabled: true },
      { listedBy: 'geo_sites', id: 3, name: 'site-3', url: 'https://s3.test/', primary: false, enabled: false },
    ]);
    pool
      .intercept({ path: '/api/v4/geo_sites?page=1&per_page=100', method: 'GET' })
      .reply(404, { error: '404 Not Found' }, J);
    pool
      .intercept({ path: '/api/v4/geo_nodes?page=1&per_page=100', method: 'GET' })
      .reply(404, { error: '404 Not Found' }, J);
    expect(await api.geoSites()).toBeNull();
  });

  it('asks GET /geo_nodes where GET /geo_sites is 404 (before 16.0), and says which API listed the sites', async () => {
    const { pool, api } = setup();
    pool
      .intercept({ path: '/api/v4/geo_sites?page=1&per_page=100', method: 'GET' })
      .reply(404, { error: '404 Not Found' }, J);
    pool.intercept({ path: '/api/v4/geo_nodes?page=1&per_page=100', method: 'GET' }).reply(
      200,
      [
        { id: 1, name: 'primary', url: 'https://p.test/', primary: true, enabled: true, clone_protocol: 'http' },
        { id: 2, name: 'eu', url: 'https://eu.test/', primary: false, enabled: true, clone_protocol: 'http' },
      ],
      { headers: { 'x-next-page': '' } },
    );
    expect(await api.geoSites()).toEqual([
      { listedBy: 'geo_nodes', id: 1, name: 'primary', url: 'https://p.test/', primary: true, enabled: true },
      { listedBy: 'geo_nodes', id: 2, name: 'eu', url: 'https://eu.test/', primary: false, enabled: true },
    ]);
  });

  it('marks a secondary whose schema has no geoRegistriesBulkUpdate (before 16.4) as unsupported, not refused', async () => {
    const { pool, api } = setup();
    pool.intercept({ path: '/api/v4/geo/node_proxy/2/graphql', method: 'POST' }).reply(
      200,
      {
        errors: [
          {
            message: "Field 'geoRegistriesBulkUpdate' doesn't exist on type 'Mutation'",
            extensions: { code: 'undefinedField', typeName: 'Mutation', fieldName: 'geoRegistriesBulkUpdate' },
          },
        ],
      },
      J,
    );
    expect(await api.geoResync(2, ['SNIPPET_REPOSITORY_REGISTRY'])).toEqual([
      {
        registryClass: 'SNIPPET_REPOSITORY_REGISTRY',
        errors: ["Field 'geoRegistriesBulkUpdate' doesn't exist on type 'Mutation'"],
        forwarded: true,
        unsupported: true,
      },
    ]);
  });

  it('sends RESYNC_ALL per registry class to a secondary through the node proxy and returns GraphQL errors', async () => {
    const { pool, api } = setup();
    const body = (cls: string) => (b: string) => {
      const parsed = JSON.parse(b) as { query: string; variables: { registryClass: string } };
      return (
        parsed.query.includes('geoRegistriesBulkUpdate') &&
        parsed.query.includes('RESYNC_ALL') &&
        parsed.variables.registryClass === cls
      );
    };
    pool
      .intercept({
        path: '/api/v4/geo/node_proxy/2/graphql',
        method: 'POST',
        body: body('PROJECT_REPOSITORY_REGISTRY'),
      })
      .reply(
        200,
        { data: { geoRegistriesBulkUpdate: { registryClass: 'PROJECT_REPOSITORY_REGISTRY', errors: [] } } },
        J,
      );
    pool
      .intercept({
        path: '/api/v4/geo/node_proxy/2/graphql',
        method: 'POST',
        body: body('GROUP_WIKI_REPOSITORY_REGISTRY'),
      })
      .reply(200, { data: { geoRegistriesBulkUpdate: null }, errors: [{ message: 'not a secondary' }] }, J);
    expect(await api.geoResync(2, ['PROJECT_REPOSITORY_REGISTRY', 'GROUP_WIKI_REPOSITORY_REGISTRY'])).toEqual([
      { registryClass: 'PROJECT_REPOSITORY_REGISTRY', errors: [], forwarded: true },
      { registryClass: 'GROUP_WIKI_REPOSITORY_REGISTRY', errors: ['not a secondary'], forwarded: true },
    ]);
    // GitLab's node proxy when it cannot reach the secondary (ee/lib/api/geo.rb): 200 with an empty object.
    pool.intercept({ path: '/api/v4/geo/node_proxy/3/graphql', method: 'POST' }).reply(200, {}, J);
    expect(await api.geoResync(3, ['PROJECT_REPOSITORY_REGISTRY'])).toEqual([
      {
        registryClass: 'PROJECT_REPOSITORY_REGISTRY',
        errors: [expect.stringMatching(/no answer through the node proxy/)],
        forwarded: false,
      },
    ]);
    pool
      .intercept({ path: '/api/v4/geo/node_proxy/9/graphql', method: 'POST' })
      .reply(404, { message: '404 GeoNode Not Found' }, J);
    await expect(api.geoResync(9, ['PROJECT_REPOSITORY_REGISTRY'])).rejects.toMatchObject({
      code: 'SHARDMOVE_API_NOT_FOUND',
    });
  });

  it('sends nothing mutating in read-only mode but still inspects the token', async () => {
    const { pool, api, events } = setup({ readOnly: true });
    await expect(api.scheduleMove('projects', 7, 'cluster')).rejects.toMatchObject({
      code: 'SHARDMOVE_DRY_RUN_BLOCKED',
    });
    await expect(api.scheduleBulk('projects', 'nfs-1', 'cluster')).rejects.toMatchObject({
      code: 'SHARDMOVE_DRY_RUN_BLOCKED',
    });
    await expect(api.setWeights({ cluster: 100 })).rejects.toMatchObject({ code: 'SHARDMOVE_DRY_RUN_BLOCKED' });
    await expect(api.geoResync(2, ['PROJECT_REPOSITORY_REGISTRY'])).rejects.toMatchObject({
      code: 'SHARDMOVE_DRY_RUN_BLOCKED',
    });
    pool
      .intercept({ path: '/api/v4/admin/token', method: 'POST' })
      .reply(422, { message: 'Token type not supported.' }, J);
    expect(await api.inspectToken(TOKEN)).toBeNull();
    expect(events.map((e) => `${e.method} ${e.path}`)).toEqual(['POST /api/v4/admin/token']);
    expect(api.stats()).toEqual({ requests: 1, mutating: 0 });
    expect(JSON.stringify(events)).not.toContain(TOKEN);
  });

  it('refreshes an OAuth token through the same pool, also in read-only mode', async () => {
    const pairs: string[] = [];
    const { pool, api, events } = setup({
      readOnly: true,
      credentials: {
        type: 'oauth',
        accessToken: 'oauth-access-1',
        refreshToken: 'oauth-refresh-1',
        clientId: 'cid',
        clientSecret: 'csecret',
        redirectUri: 'http://localhost/cb',
      },
      onRefresh: (p) => {
        pairs.push(p.refreshToken);
      },
    });
    pool
      .intercept({ path: '/api/v4/user', method: 'GET', headers: { authorization: 'Bearer oauth-access-1' } })
      .reply(401, { error: 'invalid_token', error_description: 'Token is expired.' }, J);
    pool
      .intercept({ path: '/oauth/token', method: 'POST' })
      .reply(200, { access_token: 'oauth-access-2', refresh_token: 'oauth-refresh-2', expires_in: 7200 }, J);
    pool
      .intercept({ path: '/api/v4/user', method: 'GET', headers: { authorization: 'Bearer oauth-access-2' } })
      .reply(200, { id: 1, username: 'root', is_admin: true }, J);
    expect(await api.currentUser()).toMatchObject({ isAdmin: true });
    expect(pairs).toEqual(['oauth-refresh-2']);
    const logged = JSON.stringify(events);
    for (const secret of ['oauth-access-1', 'oauth-access-2', 'oauth-refresh-1', 'oauth-refresh-2', 'csecret'])
      expect(logged).not.toContain(secret);
  });
});
