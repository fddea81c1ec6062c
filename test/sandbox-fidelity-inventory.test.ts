// Inventory fidelity: the inventory listings behave as GitLab's, awkward parts
// included. Each block names the ledger section (docs/gitlab-behaviour.md) it pins down.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { SeedError, loadSeed, parseSeed } from '../src/sandbox/seed.js';
import { until } from './support/until.js';

const ADMIN = 'glpat-sandbox-root-api-sudo-0001';
const ALICE = 'glpat-sandbox-alice-api-00000006';

const HIDDEN = 5;
const PENDING = 6;
const BOTH = 7;
const UNLISTABLE = 23;
const PROJECTS = 40;
const SNIPPETS = 25;

type Instance = Partial<Seed['instance']>;

/** 40 projects, 25 snippets and 6 groups on nfs-1; projects 5 hidden, 6 pending deletion, 7 both; group 2 pending deletion. */
function fidelitySeed(instance: Instance = {}, states = true): Seed {
  const seed = loadSeed();
  Object.assign(seed.instance, { unlistable: [UNLISTABLE] }, instance);
  seed.inventory = {
    generate: {
      ...seed.inventory.generate!,
      projects: PROJECTS,
      snippets: SNIPPETS,
      groups: 6,
      public_fraction: 1,
      storages: { 'nfs-1': 1 },
    },
    projects: states
      ? [
          { id: HIDDEN, storage: 'nfs-1', visibility: 'public', hidden: true },
          { id: PENDING, storage: 'nfs-1', visibility: 'public', pending_delete: true },
          { id: BOTH, storage: 'nfs-1', visibility: 'public', hidden: true, pending_delete: true },
        ]
      : [],
    groups: [{ id: 2, storage: 'nfs-1', visibility: 'public', pending_delete: true }],
  };
  return seed;
}

interface Got {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

function client(sb: () => RunningSandbox) {
  return async (path: string, token?: string, init: { method?: string; body?: unknown } = {}): Promise<Got> => {
    const headers: Record<string, string> = token ? { 'private-token': token } : {};
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${sb().url}${path}`, {
      method: init.method ?? 'GET',
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
}

const ids = (body: unknown) => (body as { id: number }[]).map((p) => p.id);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('GitLab fidelity of the inventory (EE ultimate)', () => {
  let sb: RunningSandbox;
  const get = client(() => sb);
  beforeAll(async () => {
    sb = await startSandbox({ seed: fidelitySeed(), moveDurationMs: 20 });
  });
  afterAll(async () => {
    await sb.close();
  });

  describe('GET /snippets/all (ledger 1.1)', () => {
    it('lists newest first whatever order_by and sort say', async () => {
      const newestFirst = range(1, SNIPPETS).reverse();
      for (const q of ['', 'order_by=id&sort=asc', 'order_by=created_at&sort=asc', 'order_by=bogus&sort=sideways']) {
        const r = await get(`/api/v4/snippets/all?per_page=100&${q}`, ADMIN);
        expect(r.status, q).toBe(200);
        expect(ids(r.body), q).toEqual(newestFirst);
      }
      expect(ids((await get('/api/v4/snippets/all?per_page=10&page=2&sort=asc', ADMIN)).body)).toEqual(
        range(6, 15).reverse(),
      );
    });

    it('ignores pagination=keyset (offset only) and every other undeclared parameter', async () => {
      const r = await get('/api/v4/snippets/all?pagination=keyset&order_by=id&sort=asc&per_page=5&id_after=20', ADMIN);
      expect(ids(r.body)).toEqual([25, 24, 23, 22, 21]);
      expect(r.headers.get('x-page')).toBe('1');
      expect(r.headers.get('x-next-page')).toBe('2');
      expect(r.headers.get('x-total')).toBe(String(SNIPPETS));
      expect(r.headers.get('link')).toContain('page=2');
      const junk = await get(
        '/api/v4/snippets/all?pagination=nonsense&visibility=nope&search=zzz&owned=maybe&per_page=100',
        ADMIN,
      );
      expect(junk.status).toBe(200);
      expect(ids(junk.body)).toHaveLength(SNIPPETS);
    });

    it('filters by created_after (>=) and created_before (<=), and refuses a date it cannot read', async () => {
      const created = (
        sb.state.db.prepare("SELECT created_at FROM items WHERE kind = 'snippet' AND id = 1").get() as {
          created_at: string;
        }
      ).created_at;
      const ms = Date.parse(created);
      const count = async (q: string) => ids((await get(`/api/v4/snippets/all?per_page=100&${q}`, ADMIN)).body).length;
      expect(await count(`created_after=${created}`)).toBe(SNIPPETS);
      expect(await count(`created_before=${created}`)).toBe(SNIPPETS);
      expect(await count(`created_after=${new Date(ms + 1).toISOString()}`)).toBe(0);
      expect(await count(`created_before=${new Date(ms - 1).toISOString()}`)).toBe(0);
      expect(await get('/api/v4/snippets/all?created_after=yesterday-ish', ADMIN)).toMatchObject({
        status: 400,
        body: { error: 'created_after is invalid' },
      });
    });

    it('declares the snippet id an Integer: /snippets/x is 400 id is invalid', async () => {
      expect(await get('/api/v4/snippets/x', ADMIN)).toMatchObject({ status: 400, body: { error: 'id is invalid' } });
    });
  });

  describe('hidden and pending-delete projects (ledger 1.3)', () => {
    const hiddenish = [HIDDEN, PENDING, BOTH];
    const listed = async (q: string, token?: string) =>
      ids((await get(`/api/v4/projects?per_page=100&order_by=id&sort=asc&${q}`, token)).body);

    it('leaves them out of GET /projects by default, offset and keyset, for everyone', async () => {
      const visible = range(1, PROJECTS).filter((id) => !hiddenish.includes(id) && id !== UNLISTABLE);
      // The unlistable project sits on the page; take the pages around it.
      expect(await listed('repository_storage=nfs-1&id_before=23', ADMIN)).toEqual(
        visible.filter((id) => id < UNLISTABLE),
      );
      expect(
        ids((await get('/api/v4/projects?pagination=keyset&order_by=id&sort=asc&per_page=15', ADMIN)).body),
      ).toEqual(visible.slice(0, 15));
      expect(await listed('id_before=23', ALICE)).toEqual(visible.filter((id) => id < UNLISTABLE));
      expect(await listed('id_before=23')).toEqual(visible.filter((id) => id < UNLISTABLE));
    });

    it("counts them in an offset page's x-total, an id range at a time: what a dry run's census reads", async () => {
      const total = async (q: string) => {
        const r = await get(
          `/api/v4/projects?repository_storage=nfs-1&order_by=id&sort=asc&simple=true&page=1&per_page=1&${q}`,
          ADMIN,
        );
        expect(r.status).toBe(200);
        expect(ids(r.body)).toHaveLength(1);
        return Number(r.headers.get('x-total'));
      };
      const range1to9 = 'id_after=0&id_before=10';
      const both = await total(`${range1to9}&include_hidden=true&include_pending_delete=true`);
      expect(both).toBe(9);
      // BOTH is hidden and pending deletion: each listing without one flag leaves it out.
      expect(both - (await total(`${range1to9}&include_pending_delete=true`))).toBe(2);
      expect(both - (await total(`${range1to9}&include_hidden=true`))).toBe(2);
      expect(await total('id_after=5&id_before=8&include_hidden=true&include_pending_delete=true')).toBe(2);
    });

    it('shows them to administrators only, with include_hidden and include_pending_delete', async () => {
      expect(await listed('id_before=10&include_hidden=true', ADMIN)).toEqual([1, 2, 3, 4, HIDDEN, 8, 9]);
      expect(await listed('id_before=10&include_pending_delete=true', ADMIN)).toEqual([1, 2, 3, 4, PENDING, 8, 9]);
      expect(await listed('id_before=10&include_hidden=true&include_pending_delete=true', ADMIN)).toEqual(range(1, 9));
      // verify_project_filters! drops both for anyone else, silently.
      expect(await listed('id_before=10&include_hidden=true&include_pending_delete=true', ALICE)).toEqual([
        1, 2, 3, 4, 8, 9,
      ]);
      expect(await listed('id_before=10&include_hidden=true&include_pending_delete=true')).toEqual([1, 2, 3, 4, 8, 9]);
      expect(await get('/api/v4/projects?include_pending_delete=perhaps', ADMIN)).toMatchObject({
        status: 400,
        body: { error: 'include_pending_delete is invalid' },
      });
    });

    it('answers 404 Project Not Found on GET /projects/:id, even to an administrator, by id or path', async () => {
      for (const id of hiddenish) {
        expect(await get(`/api/v4/projects/${id}`, ADMIN)).toMatchObject({
          status: 404,
          body: { message: '404 Project Not Found' },
        });
        expect((await get(`/api/v4/projects/group-${((id - 1) % 6) + 1}%2Fproject-${id}`, ADMIN)).status).toBe(404);
      }
      // The write routes use the same default scopes.
      const commit = {
        branch: 'main',
        commit_message: 'x',
        actions: [{ action: 'create', file_path: 'a.txt', content: 'x' }],
      };
      expect(
        await get(`/api/v4/projects/${HIDDEN}/repository/commits`, ADMIN, { method: 'POST', body: commit }),
      ).toMatchObject({ status: 404, body: { message: '404 Project Not Found' } });
    });

    it('moves them one by one, and the bulk move includes them', async () => {
      const one = await get(`/api/v4/projects/${HIDDEN}/repository_storage_moves`, ADMIN, {
        method: 'POST',
        body: { destination_storage_name: 'cluster' },
      });
      expect(one).toMatchObject({ status: 201, body: { project: { id: HIDDEN } } });
      expect((await get(`/api/v4/projects/${HIDDEN}/repository_storage_moves`, ADMIN)).status).toBe(200);
      await until(
        () => get(`/-/sandbox/items/project/${HIDDEN}`, ADMIN),
        (r) => (r.body as { storage: string }).storage === 'cluster',
      );
      expect((await get(`/-/sandbox/items/project/${HIDDEN}`, ADMIN)).body).toMatchObject({
        storage: 'cluster',
        hidden: true,
        read_only: false,
      });

      expect(
        (
          await get('/api/v4/project_repository_storage_moves', ADMIN, {
            method: 'POST',
            body: { source_storage_name: 'nfs-1', destination_storage_name: 'nfs-2' },
          })
        ).status,
      ).toBe(202);
      for (const id of [PENDING, BOTH]) {
        const r = await until(
          () => get(`/-/sandbox/items/project/${id}`, ADMIN),
          (x) => (x.body as { storage: string }).storage === 'nfs-2',
        );
        expect(r.body, `project ${id}`).toMatchObject({ storage: 'nfs-2', pending_delete: true });
      }
    });

    it('lists and shows groups pending deletion (GitLab has no include_pending_delete for groups)', async () => {
      expect(ids((await get('/api/v4/groups?per_page=100', ADMIN)).body)).toContain(2);
      expect(await get('/api/v4/groups/2', ADMIN)).toMatchObject({ status: 200, body: { id: 2 } });
    });
  });

  describe('a project GitLab cannot render (ledger 8, unrenderable item)', () => {
    it('turns exactly the offset pages that would hold it into 500s, at every per_page', async () => {
      // The default order (created_at desc, here id desc) and id asc; hidden and pending projects are not on the pages.
      const listedIds = range(1, PROJECTS).filter((id) => ![HIDDEN, PENDING, BOTH].includes(id));
      for (const [q, order] of [
        ['order_by=id&sort=asc', listedIds],
        ['', [...listedIds].reverse()],
      ] as const) {
        for (const perPage of [1, 2, 3, 7, 10, 16, 20, 36, 100]) {
          const pages = Math.ceil(order.length / perPage);
          for (let page = 1; page <= pages; page++) {
            const expected = order.slice((page - 1) * perPage, page * perPage);
            const r = await get(`/api/v4/projects?per_page=${perPage}&page=${page}&${q}`, ADMIN);
            if (expected.includes(UNLISTABLE)) {
              expect(r, `${q} per_page=${perPage} page=${page}`).toMatchObject({
                status: 500,
                body: { message: '500 Internal Server Error' },
              });
            } else {
              expect(r.status, `${q} per_page=${perPage} page=${page}`).toBe(200);
              expect(ids(r.body)).toEqual(expected);
            }
          }
        }
      }
    });

    it('does the same on keyset pages, and a client can step past it with id_after', async () => {
      const listedIds = range(1, PROJECTS).filter((id) => ![HIDDEN, PENDING, BOTH].includes(id));
      for (const perPage of [1, 4, 20]) {
        for (let after = 0; after <= PROJECTS; after++) {
          const expected = listedIds.filter((id) => id > after).slice(0, perPage);
          const r = await get(
            `/api/v4/projects?pagination=keyset&order_by=id&sort=asc&per_page=${perPage}&id_after=${after}`,
            ADMIN,
          );
          expect(r.status, `per_page=${perPage} id_after=${after}`).toBe(expected.includes(UNLISTABLE) ? 500 : 200);
        }
      }
      expect(
        ids(
          (
            await get(
              `/api/v4/projects?pagination=keyset&order_by=id&sort=asc&per_page=3&id_after=${UNLISTABLE}`,
              ADMIN,
            )
          ).body,
        ),
      ).toEqual([24, 25, 26]);
    });

    it('answers 500 on GET /projects/:id too (the same entity), for non-admins as well, but still moves', async () => {
      expect(await get(`/api/v4/projects/${UNLISTABLE}`, ADMIN)).toMatchObject({
        status: 500,
        body: { message: '500 Internal Server Error' },
      });
      expect((await get(`/api/v4/projects/${UNLISTABLE}`, ALICE)).status).toBe(500);
      expect(
        (await get(`/api/v4/projects?per_page=100&id_after=${UNLISTABLE - 1}&id_before=${UNLISTABLE + 1}`, ALICE))
          .status,
      ).toBe(500);
      // Pages on another storage do not hold it.
      expect((await get('/api/v4/projects?repository_storage=default&per_page=100', ADMIN)).status).toBe(200);
      const move = await get(`/api/v4/projects/${UNLISTABLE}/repository_storage_moves`, ADMIN, {
        method: 'POST',
        body: { destination_storage_name: 'default' },
      });
      expect(move.status).toBe(201);
      const done = await until(
        () => get(`/-/sandbox/items/project/${UNLISTABLE}`, ADMIN),
        (r) => (r.body as { storage: string }).storage === 'default',
      );
      expect(done.body).toMatchObject({ storage: 'default', read_only: false });
    });
  });

  describe('repository_read_only is no API field (ledger 1.4)', () => {
    it('appears on no entity, for an administrator, on any route', async () => {
      sb.state.db.prepare('UPDATE items SET read_only = 1 WHERE id = 1').run();
      try {
        for (const path of [
          '/api/v4/projects?per_page=5',
          '/api/v4/projects/1',
          '/api/v4/projects?pagination=keyset&order_by=id&per_page=5',
          '/api/v4/projects?per_page=5&simple=true',
          '/api/v4/snippets/all?per_page=5',
          '/api/v4/snippets/1',
          '/api/v4/groups',
          '/api/v4/groups/1',
          '/api/v4/project_repository_storage_moves',
        ]) {
          const r = await get(path, ADMIN);
          expect(r.status, path).toBe(200);
          expect(r.text, path).not.toContain('read_only');
        }
      } finally {
        sb.state.db.prepare('UPDATE items SET read_only = 0 WHERE id = 1').run();
      }
    });

    it('is served by GET /-/sandbox/items/:kind/:id, to effective administrators only', async () => {
      expect((await get('/-/sandbox/items/snippet/3', ADMIN)).body).toEqual({
        kind: 'snippet',
        id: 3,
        storage: 'nfs-1',
        read_only: false,
        hidden: false,
        pending_delete: false,
        size_mb: expect.any(Number),
        commit_count: expect.any(Number),
        checksum: expect.stringMatching(/^[0-9a-f]{40}$/),
        stale_copies: [],
      });
      expect((await get('/-/sandbox/items/project/group-2%2Fproject-8', ADMIN)).body).toMatchObject({
        kind: 'project',
        id: 8,
      });
      expect((await get(`/-/sandbox/items/project/${BOTH}`, ADMIN)).body).toMatchObject({
        hidden: true,
        pending_delete: true,
      });
      expect((await get('/-/sandbox/items/group/2', ADMIN)).body).toMatchObject({
        kind: 'group',
        pending_delete: true,
      });
      expect(await get('/-/sandbox/items/project/1', ALICE)).toMatchObject({
        status: 403,
        body: { message: '403 Forbidden' },
      });
      expect((await get('/-/sandbox/items/project/1')).status).toBe(401);
      expect(await get('/-/sandbox/items/project/9999', ADMIN)).toMatchObject({
        status: 404,
        body: { message: '404 Project Not Found' },
      });
      expect((await get('/-/sandbox/items/wiki/1', ADMIN)).status).toBe(404);
      expect(await get('/-/sandbox/items/snippet/x', ADMIN)).toMatchObject({
        status: 400,
        body: { error: 'id is invalid' },
      });
    });

    it('shows read_only while a move holds the repository', async () => {
      const slow = await startSandbox({ seed: fidelitySeed(), moveDurationMs: 60_000 });
      try {
        const r = await fetch(`${slow.url}/api/v4/snippets/4/repository_storage_moves`, {
          method: 'POST',
          headers: { 'private-token': ADMIN, 'content-type': 'application/json' },
          body: '{"destination_storage_name":"cluster"}',
        });
        expect(r.status).toBe(201);
        const state = await (
          await fetch(`${slow.url}/-/sandbox/items/snippet/4`, { headers: { 'private-token': ADMIN } })
        ).json();
        expect(state).toMatchObject({ read_only: true, storage: 'nfs-1' });
      } finally {
        await slow.close();
      }
    });
  });
});

describe('GET /snippets/all before 16.3 (ledger 1.1)', () => {
  for (const [version, status] of [
    ['16.2.9', 400],
    ['16.0.0', 400],
    ['16.3.0', 200],
  ] as const) {
    it(`answers ${status} on ${version}`, async () => {
      const sb = await startSandbox({ seed: fidelitySeed({ version }) });
      try {
        const r = await client(() => sb)('/api/v4/snippets/all', ADMIN);
        expect(r.status).toBe(status);
        if (status === 400) expect(r.body).toEqual({ error: 'id is invalid' });
      } finally {
        await sb.close();
      }
    });
  }
});

describe('Community Edition (ledger 1.2)', () => {
  let sb: RunningSandbox;
  const get = client(() => sb);
  beforeAll(async () => {
    sb = await startSandbox({ seed: fidelitySeed({ edition: 'ce', tier: undefined }, false) });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('has no storage field on snippets and groups and ignores their filter; projects keep both', async () => {
    const snippets = await get('/api/v4/snippets/all?repository_storage=cluster&per_page=100', ADMIN);
    expect(ids(snippets.body)).toHaveLength(SNIPPETS);
    expect((snippets.body as object[]).some((s) => 'repository_storage' in s)).toBe(false);
    expect((await get('/api/v4/snippets/1', ADMIN)).body).not.toHaveProperty('repository_storage');
    const groups = await get('/api/v4/groups?repository_storage=cluster&per_page=100', ADMIN);
    expect(ids(groups.body)).toHaveLength(6);
    expect((groups.body as object[]).some((g) => 'repository_storage' in g)).toBe(false);
    expect((await get('/api/v4/groups/1', ADMIN)).body).not.toHaveProperty('repository_storage');
    expect((await get('/api/v4/projects?repository_storage=cluster', ADMIN)).body).toEqual([]);
    expect((await get('/api/v4/projects/1', ADMIN)).body).toMatchObject({ repository_storage: 'nfs-1' });
  });

  it('has no group wikis and no group repository moves (no such routes)', async () => {
    expect(
      await get('/api/v4/groups/1/wikis', ADMIN, { method: 'POST', body: { title: 't', content: 'c' } }),
    ).toMatchObject({ status: 404, body: { error: '404 Not Found' } });
    expect(await get('/api/v4/group_repository_storage_moves', ADMIN)).toMatchObject({
      status: 404,
      body: { error: '404 Not Found' },
    });
  });

  it('does not know include_hidden (only EE filters hidden projects), but knows include_pending_delete', async () => {
    // CE has the column but no by_hidden: a hidden row (set here in the database) is listed.
    sb.state.db.prepare("UPDATE items SET hidden = 1 WHERE kind = 'project' AND id = 3").run();
    const r = await get('/api/v4/projects?per_page=5&order_by=id&sort=asc&include_hidden=junk', ADMIN);
    expect(r.status).toBe(200);
    expect(ids(r.body)).toEqual([1, 2, 3, 4, 5]);
    expect((await get('/api/v4/projects/3', ADMIN)).status).toBe(404);
    expect((await get('/api/v4/projects?include_pending_delete=junk', ADMIN)).status).toBe(400);
  });
});

describe('EE Free (ledger 1.2)', () => {
  let sb: RunningSandbox;
  const get = client(() => sb);
  beforeAll(async () => {
    sb = await startSandbox({ seed: fidelitySeed({ tier: 'free' }) });
  });
  afterAll(async () => {
    await sb.close();
  });

  // A lapsed licence keeps the group wiki repositories: EE::GroupsFinder filters by their shard with
  // no licence check, but the entity shows the field only with the group_wikis feature.
  it("shows no group storage field, yet the admin group filter applies to the groups' wiki repositories", async () => {
    const all = await get('/api/v4/groups?per_page=100', ADMIN);
    expect(ids(all.body)).toHaveLength(6);
    expect((all.body as object[]).some((g) => 'repository_storage' in g)).toBe(false);
    const onNfs1 = (
      sb.state.db.prepare("SELECT id FROM items WHERE kind = 'group' AND storage = 'nfs-1' ORDER BY id").all() as {
        id: number;
      }[]
    ).map((r) => r.id);
    expect(onNfs1.length).toBeGreaterThan(0);
    const filtered = await get('/api/v4/groups?repository_storage=nfs-1&order_by=id&per_page=100', ADMIN);
    expect(ids(filtered.body)).toEqual(onNfs1);
    expect((filtered.body as object[]).some((g) => 'repository_storage' in g)).toBe(false);
    expect(ids((await get('/api/v4/groups?repository_storage=nfs-1', ALICE)).body)).toHaveLength(6);
  });

  it('keeps the snippet field and filter (EE, any licence)', async () => {
    expect((await get('/api/v4/snippets/all?repository_storage=cluster', ADMIN)).body).toEqual([]);
    expect((await get('/api/v4/snippets/1', ADMIN)).body).toMatchObject({ repository_storage: 'nfs-1' });
  });

  it('honours include_hidden for administrators (the EE helper checks the admin, not the licence)', async () => {
    expect(
      ids((await get('/api/v4/projects?id_before=6&include_hidden=true&order_by=id&sort=asc', ADMIN)).body),
    ).toEqual([1, 2, 3, 4, HIDDEN]);
  });
});

describe('seed: edition, states, unlistable, credentials', () => {
  const problems = (text: string): string[] => {
    try {
      parseSeed(text, 'seed.yaml');
    } catch (err) {
      if (err instanceof SeedError) return err.problems;
      throw err;
    }
    return [];
  };

  it('accepts edition, defaulting to ee, and gives the community edition the free tier', () => {
    expect(parseSeed('instance: {}\n').instance).toMatchObject({ edition: 'ee', tier: 'ultimate', unlistable: [] });
    expect(parseSeed('instance: { edition: ce }\n').instance).toMatchObject({ edition: 'ce', tier: 'free' });
    expect(problems('instance:\n  edition: oss\n')).toEqual(['seed.yaml:2:12: instance.edition: must be ee or ce']);
    expect(problems('instance:\n  edition: ce\n  tier: premium\n')).toEqual([
      'seed.yaml:3:9: instance.tier: the community edition has no licence tier: leave tier out or set free',
    ]);
  });

  it('refuses hidden projects on the community edition, states on snippets, and unknown unlistable projects', () => {
    const text = [
      'instance: { edition: ce, storages: [default], unlistable: [3, 99] }',
      'inventory:',
      '  generate: { projects: 10, hidden_fraction: 0.1 }',
      '  projects: [{ id: 99, storage: default }, { id: 2, storage: default, hidden: true }]',
      '  snippets: [{ id: 1, storage: default, pending_delete: true }]',
      '',
    ].join('\n');
    expect(problems(text)).toEqual([
      'seed.yaml:3:46: inventory.generate.hidden_fraction: hidden projects exist only in the enterprise edition (edition: ee)',
      'seed.yaml:4:79: inventory.projects.1.hidden: hidden projects exist only in the enterprise edition (edition: ee)',
      'seed.yaml:5:41: inventory.snippets.0.pending_delete: unknown field "pending_delete"; known fields: id, name, storage, visibility, size_mb, commit_count, namespace, project, author',
    ]);
    expect(
      problems('instance: { storages: [default], unlistable: [11] }\ninventory: { generate: { projects: 10 } }\n'),
    ).toEqual(['seed.yaml:1:47: instance.unlistable.0: unknown project 11']);
  });

  it('rejects a job token without the user it runs as, and other credentials without their owner, at file:line:col', () => {
    const text = [
      'users: [{ id: 1, username: root }]',
      'credentials:',
      '  - { type: job, project: 1, value: glcbt-x }',
      '  - { type: personal, value: glpat-x }',
      '  - { type: project_access, value: glpat-y }',
      '  - { type: session, user: 7, value: s }',
      '',
    ].join('\n');
    expect(problems(text)).toEqual([
      'seed.yaml:3:5: credentials.0.user: a job credential needs user: the user it authenticates as',
      'seed.yaml:4:5: credentials.1.user: a personal credential needs user: the user it authenticates as',
      'seed.yaml:5:5: credentials.2.project: a project_access credential needs project: the project it belongs to',
      'seed.yaml:6:28: credentials.3.user: unknown user id 7',
    ]);
  });

  it('accepts the README job token, which then authenticates GET /job', async () => {
    const sb = await startSandbox();
    try {
      const r = await fetch(`${sb.url}/api/v4/job`, { headers: { 'job-token': 'glcbt-sandbox-job-project-1-0001' } });
      expect(r.status).toBe(200);
      expect(await r.json()).toMatchObject({ user: { username: 'alice' } });
    } finally {
      await sb.close();
    }
  });
});
