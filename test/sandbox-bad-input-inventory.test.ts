// Arbitrary queries and bodies on the inventory, settings, health and Geo endpoints never yield a
// 5xx and never change state they should not.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import { assertProperty } from './support/property.js';

const ADMIN = 'glpat-sandbox-root-api-sudo-0001';
const ALICE = 'glpat-sandbox-alice-api-00000006';
/** Works whether Admin Mode is on or off. */
const ADMIN_MODE = 'glpat-sandbox-root-admin-mode-03';

const KEYS = [
  'page',
  'per_page',
  'pagination',
  'order_by',
  'sort',
  'id_after',
  'id_before',
  'repository_storage',
  'visibility',
  'search',
  'simple',
  'statistics',
  'owned',
  'all',
  'page[]',
  'per_page[x]',
  'repository_storage[]',
  'sort[a]',
  'search[]',
  'include_hidden',
  'include_pending_delete',
  'created_after',
  'created_before',
  'created_after[]',
];
const value = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    'keyset',
    'id',
    'name',
    'asc',
    'desc',
    '0',
    '-1',
    '1e3',
    '99999999999999999999',
    'nfs-1',
    'public',
    'true',
    '%',
    '_',
    '2024-01-01T00:00:00Z',
    '2099-12-31',
    '+275760-09-14T00:00:00Z',
  ),
  fc.integer({ min: -5, max: 200_000 }).map(String),
);
const query = fc
  .array(fc.tuple(fc.constantFrom(...KEYS), value), { maxLength: 6 })
  .map((pairs) => new URLSearchParams(pairs).toString());
const json: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 });

describe('bad input on inventory, settings, health and Geo', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox();
  });
  afterAll(async () => {
    await sb.close();
  });

  it('answers arbitrary list queries with 2xx or 4xx', async () => {
    const paths = [
      '/api/v4/projects',
      '/api/v4/snippets/all',
      '/api/v4/groups',
      '/api/v4/projects/1',
      '/api/v4/groups/1',
      '/api/v4/snippets/1',
      '/api/v4/geo_sites',
      '/api/v4/geo_sites/status',
      '/api/v4/geo_sites/2/status',
      '/-/readiness',
      '/api/v4/application/settings',
      '/api/v4/snippets/x',
      '/-/sandbox/items/project/1',
      '/-/sandbox/items/snippet/x',
      '/-/sandbox/items/nope/1',
    ];
    await assertProperty(
      fc.asyncProperty(fc.constantFrom(...paths), query, fc.constantFrom(ADMIN, ALICE, ''), async (path, q, token) => {
        const res = await fetch(`${sb.url}${path}?${q}`, { headers: token ? { 'private-token': token } : {} });
        const text = await res.text();
        expect(res.status, `${path}?${q} -> ${text}`).toBeLessThan(500);
        if (res.status >= 400) expect(() => JSON.parse(text)).not.toThrow();
      }),
      { numRuns: 300 },
    );
  });

  it('answers arbitrary settings bodies with 200 or 400 and keeps valid weights', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.oneof(json, fc.record({ repository_storages_weighted: json }), fc.record({ admin_mode: json })),
        async (body) => {
          const res = await fetch(`${sb.url}/api/v4/application/settings`, {
            method: 'PUT',
            headers: { 'private-token': ADMIN, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          const text = await res.text();
          expect(res.status, `${JSON.stringify(body)} -> ${text}`).toBeLessThan(500);
          const current = (await (
            await fetch(`${sb.url}/api/v4/application/settings`, { headers: { 'private-token': ADMIN_MODE } })
          ).json()) as { repository_storages_weighted: Record<string, number>; admin_mode: boolean };
          // Whatever was sent, what is stored stays valid.
          for (const [k, v] of Object.entries(current.repository_storages_weighted)) {
            expect(['default', 'nfs-1', 'nfs-2', 'cluster']).toContain(k);
            expect(Number.isInteger(v) && v >= 0 && v <= 100).toBe(true);
          }
          if (current.admin_mode) {
            // Switch it back off so later runs keep the plain token's admin rights.
            await fetch(`${sb.url}/api/v4/application/settings`, {
              method: 'PUT',
              headers: { 'private-token': ADMIN_MODE, 'content-type': 'application/json' },
              body: '{"admin_mode":false}',
            });
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('answers arbitrary GraphQL bodies with 200 and records only valid mutations', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.record({
          query: fc.oneof(
            json,
            fc.constantFrom(
              'mutation { geoRegistriesBulkUpdate(input: { registryClass: X, action: Y }) { errors } }',
              'mutation($i: T!) { geoRegistriesBulkUpdate(input: $i) { errors } }',
              'mutation { geoRegistriesBulkUpdate(',
            ),
          ),
          variables: json,
        }),
        async (body) => {
          const before = (sb.state.db.prepare('SELECT count(*) n FROM geo_actions').get() as { n: number }).n;
          const res = await fetch(`${sb.url}/api/graphql`, {
            method: 'POST',
            headers: { 'private-token': ADMIN, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          expect(res.status).toBe(200);
          const out = (await res.json()) as { errors?: unknown[] };
          expect(out.errors).toBeDefined();
          expect((sb.state.db.prepare('SELECT count(*) n FROM geo_actions').get() as { n: number }).n).toBe(before);
        },
      ),
      { numRuns: 150 },
    );
  });
});
