// Geo, sandbox side: a secondary the primary cannot reach. Geo::RequestService returns
// false when the forward fails, and the primary's node proxy turns that into `200 {}` (16.7's
// ee/lib/ee/api/geo.rb: `execute(body) || {}`) or, in newer releases, a 500 with an error.
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { callSandbox } from './support/sandbox-call.js';

const MUTATION =
  'mutation { geoRegistriesBulkUpdate(input: { registryClass: PROJECT_REPOSITORY_REGISTRY, action: RESYNC_ALL }) { registryClass errors } }';

const running: RunningSandbox[] = [];
afterEach(async () => {
  for (const sb of running.splice(0)) await sb.close();
});

async function start(version: string): Promise<RunningSandbox> {
  const seed: Seed = structuredClone(loadSeed());
  seed.instance.version = version;
  seed.geo_sites = [
    { id: 1, name: 'primary', url: 'https://gitlab.example.com/', primary: true },
    { id: 2, name: 'eu', url: 'https://eu.gitlab.example.com/' },
    { id: 3, name: 'asia', url: 'https://asia.gitlab.example.com/', reachable: false },
  ];
  const sb = await startSandbox({ seed });
  running.push(sb);
  return sb;
}

const actions = (sb: RunningSandbox) => sb.state.db.prepare('SELECT site_id FROM geo_actions ORDER BY id').all();

describe('the node proxy to a secondary the primary cannot reach (ee/lib/ee/api/geo.rb)', () => {
  it('answers 200 {} on 16.7, and resyncs nothing there', async () => {
    const sb = await start('16.7.0');
    const r = await callSandbox(sb, 'POST', '/geo/node_proxy/3/graphql', { query: MUTATION });
    expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: {} });
    // A reachable secondary still gets the mutation.
    const ok = await callSandbox(sb, 'POST', '/geo/node_proxy/2/graphql', { query: MUTATION });
    expect(ok.body).toEqual({
      data: { geoRegistriesBulkUpdate: { registryClass: 'PROJECT_REPOSITORY_REGISTRY', errors: [] } },
    });
    expect(actions(sb)).toEqual([{ site_id: 2 }]);
    const status = await callSandbox(sb, 'GET', '/geo_sites/3/status');
    expect(status.body).toMatchObject({ registry_bulk_actions: [], project_repositories_synced_count: 300 });
  });

  it("answers 500 with GitLab's error from 17.7 (the release inferred for the change)", async () => {
    const sb = await start('17.11.0');
    const r = await callSandbox(sb, 'POST', '/geo/node_proxy/3/graphql', { query: MUTATION });
    expect({ status: r.status, body: r.body }).toEqual({
      status: 500,
      body: { error: 'An error occurred while processing the GraphQL request to the Geo node' },
    });
    expect(actions(sb)).toEqual([]);
  });

  it("keeps the proxy's other answers: unknown site 404, non-integer id 400", async () => {
    const sb = await start('16.7.0');
    expect((await callSandbox(sb, 'POST', '/geo/node_proxy/9/graphql', { query: MUTATION })).status).toBe(404);
    expect((await callSandbox(sb, 'POST', '/geo/node_proxy/asia/graphql', { query: MUTATION })).status).toBe(400);
  });
});
