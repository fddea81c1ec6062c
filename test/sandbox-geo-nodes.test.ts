// The older Geo nodes API beside the Geo sites API (ee/lib/api/geo_nodes.rb, ee/lib/api/geo_sites.rb):
// `/geo_nodes` is mounted on every release the sandbox models and is still in the newest source
// (deprecated in 16.0), `/geo_sites` only from 16.0. Both are EE only, admin only, with no licence
// check, over the same sites. The sandbox had no `/geo_nodes` and served `/geo_sites` on 15.11.
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { callSandbox } from './support/sandbox-call.js';

const ALICE_TOKEN = 'glpat-sandbox-alice-api-00000006';

const running: RunningSandbox[] = [];
afterEach(async () => {
  for (const sb of running.splice(0)) await sb.close();
});

async function start(instance: Partial<Seed['instance']> = {}): Promise<RunningSandbox> {
  const seed = structuredClone(loadSeed());
  seed.instance = { ...seed.instance, ...instance };
  seed.geo_sites = [
    { id: 1, name: 'primary', url: 'https://gitlab.example.com/', primary: true },
    { id: 2, name: 'eu', url: 'https://eu.gitlab.example.com/' },
  ];
  const sb = await startSandbox({ seed });
  running.push(sb);
  return sb;
}

describe('the Geo nodes API', () => {
  it('lists the same sites as /geo_sites, with clone_protocol and links to /geo_nodes', async () => {
    const sb = await start();
    const nodes = await callSandbox(sb, 'GET', '/geo_nodes');
    const sites = await callSandbox(sb, 'GET', '/geo_sites');
    expect(nodes.status).toBe(200);
    expect(nodes.headers.get('x-total')).toBe('2');
    expect(nodes.body.map((n) => n.id)).toEqual([1, 2]);
    const api = `${sb.url}/api/v4/geo_nodes/2`;
    expect(nodes.body[1]).toEqual({
      ...(sites.body[1] as object),
      clone_protocol: 'http',
      _links: { self: api, status: `${api}/status`, repair: `${api}/repair` },
    });
    // The node entity puts clone_protocol after sync_object_storage, before web_edit_url.
    const keys = Object.keys(nodes.body[1] as object);
    expect(keys.slice(keys.indexOf('sync_object_storage'), keys.indexOf('sync_object_storage') + 3)).toEqual([
      'sync_object_storage',
      'clone_protocol',
      'web_edit_url',
    ]);
    expect(await callSandbox(sb, 'GET', '/geo_nodes/2')).toMatchObject({ status: 200, body: { id: 2, name: 'eu' } });
  });

  it('answers statuses for all nodes and for one, linking each to its node', async () => {
    const sb = await start();
    const all = await callSandbox(sb, 'GET', '/geo_nodes/status');
    expect(all.status).toBe(200);
    expect(all.body.map((s) => s.geo_node_id)).toEqual([1, 2]);
    const one = await callSandbox(sb, 'GET', '/geo_nodes/2/status');
    const api = `${sb.url}/api/v4/geo_nodes/2`;
    expect(one.body).toMatchObject({ geo_node_id: 2, healthy: true, _links: { self: `${api}/status`, node: api } });
    const site = await callSandbox(sb, 'GET', '/geo_sites/2/status');
    const siteApi = `${sb.url}/api/v4/geo_sites/2`;
    expect(site.body._links).toEqual({ self: `${siteApi}/status`, site: siteApi });
  });

  it("answers GitLab's errors: unknown id, non-integer id (a client's /statuses too), non-admin, anonymous", async () => {
    const sb = await start();
    expect(await callSandbox(sb, 'GET', '/geo_nodes/9')).toMatchObject({
      status: 404,
      body: { message: '404 Not found' },
    });
    expect(await callSandbox(sb, 'GET', '/geo_nodes/9/status')).toMatchObject({ status: 404 });
    expect(await callSandbox(sb, 'GET', '/geo_nodes/statuses')).toMatchObject({
      status: 400,
      body: { error: 'id is invalid' },
    });
    expect(await callSandbox(sb, 'GET', '/geo_nodes', undefined, ALICE_TOKEN)).toMatchObject({
      status: 403,
      body: { message: '403 Forbidden' },
    });
    expect(await callSandbox(sb, 'GET', '/geo_nodes/status', undefined, null)).toMatchObject({ status: 401 });
  });

  it('answers on EE Free (no licence check) and is absent on the Community Edition', async () => {
    const free = await start({ tier: 'free' });
    expect((await callSandbox(free, 'GET', '/geo_nodes')).status).toBe(200);
    const ce = await start({ edition: 'ce', tier: 'free' });
    for (const path of ['/geo_nodes', '/geo_nodes/status', '/geo_nodes/1', '/geo_nodes/1/status']) {
      // Grape's catch-all, before authentication.
      expect(await callSandbox(ce, 'GET', path, undefined, null)).toMatchObject({
        status: 404,
        body: { error: '404 Not Found' },
      });
    }
  });
});

describe('the Geo sites API by release', () => {
  it('is absent before 16.0, where /geo_nodes answers alone', async () => {
    const sb = await start({ version: '15.11.0' });
    for (const path of ['/geo_sites', '/geo_sites/status', '/geo_sites/1', '/geo_sites/1/status']) {
      expect(await callSandbox(sb, 'GET', path)).toMatchObject({ status: 404, body: { error: '404 Not Found' } });
    }
    expect((await callSandbox(sb, 'GET', '/geo_nodes')).body.map((n) => n.id)).toEqual([1, 2]);
    expect((await callSandbox(sb, 'GET', '/geo_nodes/1/status')).body).toMatchObject({ geo_node_id: 1 });
    // A route the release does not have is no route for any method: 404, not 405.
    expect(await callSandbox(sb, 'POST', '/geo_sites', {})).toMatchObject({ status: 404 });
  });

  it('is no route on the Community Edition for any method either', async () => {
    const ce = await start({ edition: 'ce', tier: 'free' });
    for (const method of ['POST', 'PUT', 'DELETE'])
      expect(await callSandbox(ce, method, '/geo_sites/1', {})).toMatchObject({
        status: 404,
        body: { error: '404 Not Found' },
      });
  });

  it('is there from 16.0', async () => {
    const sb = await start({ version: '16.0.0' });
    expect((await callSandbox(sb, 'GET', '/geo_sites')).body.map((s) => s.id)).toEqual([1, 2]);
  });
});

describe('the Geo registries bulk update by release', () => {
  const resync = {
    query:
      'mutation($registryClass: GeoRegistryClass!) { geoRegistriesBulkUpdate(input: {registryClass: $registryClass, action: RESYNC_ALL}) { registryClass errors } }',
    variables: { registryClass: 'SNIPPET_REPOSITORY_REGISTRY' },
  };
  const actions = (sb: RunningSandbox) =>
    (sb.state.db.prepare('SELECT count(*) AS n FROM geo_actions').get() as { n: number }).n;

  // ee/app/graphql/ee/types/mutation_type.rb mounts it with `alpha: { milestone: '16.4' }`.
  for (const version of ['15.11.0', '16.3.0']) {
    it(`is not in the schema on ${version}: the undefined-field error through the proxy, nothing recorded`, async () => {
      const sb = await start({ version });
      const r = await callSandbox(sb, 'POST', '/geo/node_proxy/2/graphql', resync);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        errors: [
          {
            message: "Field 'geoRegistriesBulkUpdate' doesn't exist on type 'Mutation'",
            extensions: { code: 'undefinedField', typeName: 'Mutation', fieldName: 'geoRegistriesBulkUpdate' },
          },
        ],
      });
      expect(actions(sb)).toBe(0);
    });
  }

  it('is there from 16.4, and the secondary records the resync', async () => {
    const sb = await start({ version: '16.4.0' });
    const r = await callSandbox(sb, 'POST', '/geo/node_proxy/2/graphql', resync);
    expect(r.body).toEqual({
      data: { geoRegistriesBulkUpdate: { registryClass: 'SNIPPET_REPOSITORY_REGISTRY', errors: [] } },
    });
    expect(actions(sb)).toBe(1);
  });
});
