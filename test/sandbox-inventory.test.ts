import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';

const ADMIN = 'glpat-sandbox-root-api-sudo-0001';
const ALICE = 'glpat-sandbox-alice-api-00000006';

function seedWith(projects: number, tier: Seed['instance']['tier'] = 'ultimate', version?: string): Seed {
  const seed = loadSeed();
  seed.instance.tier = tier;
  if (version !== undefined) seed.instance.version = version;
  seed.inventory = { generate: { ...seed.inventory.generate!, projects, snippets: 150, groups: 30 } };
  return seed;
}

interface Got {
  status: number;
  headers: Headers;
  body: unknown;
}

function client(sb: () => RunningSandbox) {
  return async (path: string, token?: string): Promise<Got> => {
    const res = await fetch(path.startsWith('http') ? path : `${sb().url}${path}`, {
      headers: token ? { 'private-token': token } : {},
    });
    return { status: res.status, headers: res.headers, body: await res.json() };
  };
}

const ids = (body: unknown) => (body as { id: number }[]).map((p) => p.id);
const nextLink = (h: Headers) => /<([^>]+)>; rel="next"/.exec(h.get('link') ?? '')?.[1];

describe('inventory listings (12,000 projects)', () => {
  let sandbox: RunningSandbox;
  const get = client(() => sandbox);
  const count = (sql: string, ...params: unknown[]) =>
    (sandbox.state.db.prepare(`SELECT count(*) n FROM items WHERE ${sql}`).get(...params) as { n: number }).n;
  const idList = (sql: string, ...params: unknown[]) =>
    (sandbox.state.db.prepare(`SELECT id FROM items WHERE ${sql} ORDER BY id`).all(...params) as { id: number }[]).map(
      (r) => r.id,
    );

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: seedWith(12_000) });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  describe('offset pagination', () => {
    it('sends page headers and totals, and the Link pages cover every item once', async () => {
      const expected = idList("kind = 'project' AND storage = 'nfs-2'");
      expect(expected.length).toBeGreaterThan(100);
      expect(expected.length).toBeLessThan(10_000);
      let url: string | undefined = '/api/v4/projects?repository_storage=nfs-2&per_page=100&order_by=id&sort=asc';
      const seen: number[] = [];
      let first = true;
      while (url) {
        const r = await get(url, ADMIN);
        expect(r.status).toBe(200);
        if (first) {
          expect(r.headers.get('x-total')).toBe(String(expected.length));
          expect(r.headers.get('x-total-pages')).toBe(String(Math.ceil(expected.length / 100)));
          expect(r.headers.get('x-page')).toBe('1');
          expect(r.headers.get('x-per-page')).toBe('100');
          expect(r.headers.get('x-prev-page')).toBe('');
          expect(r.headers.get('x-next-page')).toBe('2');
          expect(r.headers.get('link')).toContain('rel="last"');
          first = false;
        }
        seen.push(...ids(r.body));
        url = nextLink(r.headers);
      }
      expect(seen).toEqual(expected);
    });

    it('orders newest first by default', async () => {
      const r = await get('/api/v4/projects?per_page=3', ADMIN);
      expect(ids(r.body)).toEqual([12_000, 11_999, 11_998]);
    });

    it('leaves out x-total, x-total-pages and rel="last" above 10,000 records', async () => {
      const r = await get('/api/v4/projects?per_page=5', ADMIN);
      expect(r.status).toBe(200);
      expect(r.headers.has('x-total')).toBe(false);
      expect(r.headers.has('x-total-pages')).toBe(false);
      expect(r.headers.get('link')).not.toContain('rel="last"');
      expect(r.headers.get('link')).toContain('rel="next"');
      expect(r.headers.get('x-next-page')).toBe('2');
    });

    it('clamps per_page to 100 and refuses malformed page numbers', async () => {
      const r = await get('/api/v4/projects?per_page=1000', ADMIN);
      expect((r.body as unknown[]).length).toBe(100);
      expect(r.headers.get('x-per-page')).toBe('100');
      for (const q of ['page=abc', 'page=-2', 'per_page=1.5']) {
        const bad = await get(`/api/v4/projects?${q}`, ADMIN);
        expect(bad.status).toBe(400);
        expect(bad.body).toEqual({ error: `${q.split('=')[0]} is invalid` });
      }
    });

    // 17.11's offset_paginator caps only CursorBasedKeyset's ENFORCED_TYPES, which never list Project.
    it('serves /projects offset pages past 50,000 on 17.11, as every other list', async () => {
      const r = await get('/api/v4/projects?page=501&per_page=100', ADMIN);
      expect(r.status).toBe(200);
      expect(r.body).toEqual([]);
      expect(r.headers.get('x-page')).toBe('501');
      const snippets = await get('/api/v4/snippets/all?page=501&per_page=100', ADMIN);
      expect(snippets.status).toBe(200);
      expect(snippets.body).toEqual([]);
    });
  });

  describe('keyset pagination', () => {
    // Gitlab::Pagination::Keyset::Pager announces the next page after every page with a last
    // record, without looking ahead: the end of the walk is an empty page without a Link.
    it('walks every item through Link rel="next" only, ascending, and ends on an empty page', async () => {
      const expected = idList("kind = 'project' AND storage = 'nfs-1'");
      let url: string | undefined =
        '/api/v4/projects?pagination=keyset&order_by=id&sort=asc&per_page=100&repository_storage=nfs-1';
      const sizes: number[] = [];
      const seen: number[] = [];
      while (url) {
        const r = await get(url, ADMIN);
        expect(r.status).toBe(200);
        for (const h of ['x-total', 'x-total-pages', 'x-page', 'x-next-page', 'x-per-page'])
          expect(r.headers.has(h)).toBe(false);
        seen.push(...ids(r.body));
        sizes.push(ids(r.body).length);
        url = nextLink(r.headers);
        if (url) expect(url).toMatch(/id_after=\d+/);
        else expect(r.headers.has('link')).toBe(false);
      }
      expect(seen).toEqual(expected);
      expect(sizes.length).toBe(Math.ceil(expected.length / 100) + 1);
      expect(sizes.at(-1)).toBe(0);
    });

    it('names a next page after a last page that happens to be short, too', async () => {
      const last = idList("kind = 'project'").at(-1) as number;
      const r = await get(
        `/api/v4/projects?pagination=keyset&order_by=id&sort=asc&per_page=5&id_after=${last - 2}`,
        ADMIN,
      );
      expect(ids(r.body)).toEqual([last - 1, last]);
      expect(nextLink(r.headers)).toContain(`id_after=${last}`);
      const end = await get(nextLink(r.headers) as string, ADMIN);
      expect(end).toMatchObject({ status: 200, body: [] });
      expect(end.headers.has('link')).toBe(false);
    });

    it('goes backwards with sort=desc and id_before', async () => {
      const r = await get('/api/v4/projects?pagination=keyset&order_by=id&sort=desc&per_page=2', ADMIN);
      expect(ids(r.body)).toEqual([12_000, 11_999]);
      const next = nextLink(r.headers);
      expect(next).toContain('id_before=11999');
      expect(ids((await get(next as string, ADMIN)).body)).toEqual([11_998, 11_997]);
    });

    it('refuses orders without keyset support with 405', async () => {
      const r = await get('/api/v4/projects?pagination=keyset&order_by=name&sort=asc', ADMIN);
      expect(r.status).toBe(405);
      expect(r.body).toEqual({ message: 'Keyset pagination is not yet available for this type of request' });
    });
  });

  describe('repository_storage filter and field', () => {
    it('filters for admins and shows repository_storage', async () => {
      const r = await get('/api/v4/projects?repository_storage=default&per_page=100', ADMIN);
      const body = r.body as { repository_storage: string }[];
      expect(body.length).toBe(100);
      expect(body.every((p) => p.repository_storage === 'default' && !('repository_read_only' in p))).toBe(true);
      expect(r.headers.get('x-total')).toBe(String(count("kind = 'project' AND storage = 'default'")));
    });

    it('silently ignores the filter for a non-admin and hides the field', async () => {
      const visible = count("kind = 'project' AND visibility IN ('public', 'internal')");
      expect(visible).toBeLessThan(10_000);
      const r = await get('/api/v4/projects?repository_storage=default&per_page=100', ALICE);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-total')).toBe(String(visible));
      const body = r.body as Record<string, unknown>[];
      expect(body.some((p) => 'repository_storage' in p || 'repository_read_only' in p)).toBe(false);
      expect(body.every((p) => p.visibility !== 'private')).toBe(true);
    });

    it('shows anonymous callers public projects only, filter ignored', async () => {
      const r = await get('/api/v4/projects?repository_storage=default&per_page=100');
      expect(r.status).toBe(200);
      expect(r.headers.get('x-total')).toBe(String(count("kind = 'project' AND visibility = 'public'")));
      expect(
        (r.body as { visibility: string }[]).every((p) => p.visibility === 'public' && !('repository_storage' in p)),
      ).toBe(true);
    });

    it('filters by visibility and refuses unknown values', async () => {
      const r = await get('/api/v4/projects?visibility=internal&per_page=100', ADMIN);
      expect(r.headers.get('x-total')).toBe(String(count("kind = 'project' AND visibility = 'internal'")));
      expect((await get('/api/v4/projects?visibility=secret', ADMIN)).status).toBe(400);
    });

    it('serves storage-filtered lists from the items_storage index (a rare storage never scans the kind)', async () => {
      const db = sandbox.state.db;
      const seen: string[] = [];
      const original = db.prepare.bind(db);
      (db as { prepare: unknown }).prepare = (sql: string) => {
        seen.push(sql);
        return original(sql);
      };
      try {
        for (const q of [
          'pagination=keyset&order_by=id&sort=desc&visibility=public',
          'visibility=public&order_by=id&sort=asc&per_page=7',
        ]) {
          expect((await get(`/api/v4/projects?repository_storage=cluster&${q}`, ADMIN)).body).toEqual([]);
        }
      } finally {
        (db as { prepare: unknown }).prepare = original;
      }
      const lists = seen.filter((sql) => sql.includes('storage = ?'));
      expect(lists.length).toBeGreaterThanOrEqual(3);
      for (const sql of lists) {
        const params = Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => null);
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[])
          .map((r) => r.detail)
          .join('; ');
        expect(plan).toContain('items_storage');
      }
    });

    // GitLab exposes no read-only flag: the sandbox serves it on its own route.
    it('keeps the read-only flag out of the entity, and serves it on GET /-/sandbox/items/:kind/:id', async () => {
      sandbox.state.db.prepare("UPDATE items SET read_only = 1 WHERE kind = 'project' AND id = 7").run();
      const r = await get('/api/v4/projects/7', ADMIN);
      expect(r.body).not.toHaveProperty('repository_read_only');
      expect((await get('/-/sandbox/items/project/7', ADMIN)).body).toMatchObject({
        kind: 'project',
        id: 7,
        read_only: true,
      });
      sandbox.state.db.prepare("UPDATE items SET read_only = 0 WHERE kind = 'project' AND id = 7").run();
    });
  });

  describe('single projects', () => {
    it('serves public projects without credentials, by id or URL-encoded path', async () => {
      const id = idList("kind = 'project' AND visibility = 'public'")[0] as number;
      const r = await get(`/api/v4/projects/${id}`);
      expect(r.status).toBe(200);
      const p = r.body as { path_with_namespace: string; web_url: string; name_with_namespace: string };
      expect(p).toMatchObject({ id, name: `project-${id}`, visibility: 'public' });
      expect(p.web_url).toBe(`${sandbox.url}/${p.path_with_namespace}`);
      expect((await get(`/api/v4/projects/${encodeURIComponent(p.path_with_namespace)}`)).body).toMatchObject({ id });
    });

    it('answers 404 "Project Not Found" for private or missing projects', async () => {
      const priv = idList("kind = 'project' AND visibility = 'private'")[0] as number;
      expect(await get(`/api/v4/projects/${priv}`)).toMatchObject({
        status: 404,
        body: { message: '404 Project Not Found' },
      });
      expect((await get(`/api/v4/projects/${priv}`, ADMIN)).body).toMatchObject({
        id: priv,
        repository_storage: expect.any(String),
      });
      expect((await get('/api/v4/projects/999999', ADMIN)).status).toBe(404);
      expect((await get('/api/v4/projects/no%2Fsuch', ADMIN)).status).toBe(404);
    });
  });

  describe('snippets', () => {
    it('lists all snippets for admins with the filter, public and internal ones for others', async () => {
      const admin = await get('/api/v4/snippets/all?repository_storage=nfs-1&per_page=100', ADMIN);
      expect(admin.headers.get('x-total')).toBe(String(count("kind = 'snippet' AND storage = 'nfs-1'")));
      expect((admin.body as { repository_storage: string }[]).every((s) => s.repository_storage === 'nfs-1')).toBe(
        true,
      );
      const alice = await get('/api/v4/snippets/all?repository_storage=nfs-1&per_page=100', ALICE);
      expect(alice.headers.get('x-total')).toBe(String(count("kind = 'snippet' AND visibility != 'private'")));
      expect((alice.body as Record<string, unknown>[]).some((s) => 'repository_storage' in s)).toBe(false);
      expect((await get('/api/v4/snippets/all')).status).toBe(401);
    });

    // GitLab's /snippets/all declares no order and no keyset: newest first, offset headers.
    it('shows one snippet with its author; lists newest first with offset pagination whatever is asked', async () => {
      const r = await get('/api/v4/snippets/3', ADMIN);
      expect(r.body).toMatchObject({
        id: 3,
        title: 'snippet-3',
        author: { username: 'root' },
        repository_storage: expect.any(String),
      });
      expect((await get('/api/v4/snippets/99999', ADMIN)).body).toEqual({ message: '404 Snippet Not Found' });
      const k = await get('/api/v4/snippets/all?pagination=keyset&order_by=id&sort=asc&per_page=100', ADMIN);
      const total = count("kind = 'snippet'");
      expect(ids(k.body)[0]).toBe(total);
      expect(k.headers.get('x-page')).toBe('1');
      expect(nextLink(k.headers)).toContain('page=2');
    });
  });

  describe('groups', () => {
    it('filters by storage for admins on ultimate, ordered by name', async () => {
      const r = await get('/api/v4/groups?repository_storage=nfs-2&per_page=100', ADMIN);
      const body = r.body as { repository_storage: string; name: string }[];
      expect(body.length).toBe(count("kind = 'group' AND storage = 'nfs-2'"));
      expect(body.every((g) => g.repository_storage === 'nfs-2')).toBe(true);
      expect(body.map((g) => g.name)).toEqual([...body.map((g) => g.name)].sort());
      const alice = await get('/api/v4/groups?repository_storage=nfs-2&per_page=100', ALICE);
      expect((alice.body as unknown[]).length).toBe(count("kind = 'group' AND visibility != 'private'"));
      expect((await get('/api/v4/groups/2', ADMIN)).body).toMatchObject({ id: 2, full_path: 'group-2' });
      expect((await get('/api/v4/groups/group-2', ADMIN)).body).toMatchObject({ id: 2 });
    });

    // lib/api/groups.rb: present_groups_with_pagination_strategies hands a logged-in caller to
    // present_groups, which paginates by offset; only anonymous callers get the keyset strategy.
    it('ignores pagination=keyset for a logged-in caller: offset pages by name, with offset headers', async () => {
      const byName = (
        sandbox.state.db.prepare("SELECT id FROM items WHERE kind = 'group' ORDER BY name, id LIMIT 3").all() as {
          id: number;
        }[]
      ).map((g) => g.id);
      for (const token of [ADMIN, ALICE]) {
        const r = await get('/api/v4/groups?pagination=keyset&order_by=id&sort=asc&per_page=3', token);
        expect(r.status).toBe(200);
        expect(r.headers.get('x-page')).toBe('1');
        expect(r.headers.get('x-next-page')).toBe('2');
        expect(nextLink(r.headers)).toContain('page=2');
        if (token === ADMIN) expect(ids(r.body)).toEqual([1, 2, 3]);
      }
      const plain = await get('/api/v4/groups?pagination=keyset&per_page=3', ADMIN);
      expect(ids(plain.body)).toEqual(byName);
      expect(plain.headers.has('x-total')).toBe(true);
      const anonymous = await get('/api/v4/groups?pagination=keyset&order_by=id&sort=asc&per_page=3');
      expect(anonymous.headers.has('x-page')).toBe(false);
    });
  });
});

describe('inventory on 15.1: the /projects offset cap', () => {
  let sandbox: RunningSandbox;
  const get = client(() => sandbox);
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: seedWith(50, 'ultimate', '15.1.0') });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  // Before CursorBasedKeyset's enforcement check, offset_paginator capped every keyset-capable type.
  it('answers 405 past offset 50,000 on /projects (page * per_page), and not on other lists', async () => {
    expect((await get('/api/v4/projects?page=500&per_page=100', ADMIN)).status).toBe(200);
    const r = await get('/api/v4/projects?page=501&per_page=100', ADMIN);
    expect(r.status).toBe(405);
    expect(r.body).toEqual({
      error:
        'Offset pagination has a maximum allowed offset of 50000 for requests that return objects of type Project. Remaining records can be retrieved using keyset pagination.',
    });
    expect((await get('/api/v4/projects?page=2501', ADMIN)).status).toBe(405);
    expect((await get('/api/v4/groups?page=501&per_page=100', ADMIN)).status).toBe(200);
  });
});

describe('inventory on the free tier', () => {
  let sandbox: RunningSandbox;
  const get = client(() => sandbox);
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: seedWith(50, 'free') });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  // EE Free applies the groups filter for admins to the wiki repositories a
  // lapsed licence left, without showing the field.
  it('filters groups by their wiki repositories without showing the field, and filters projects', async () => {
    const r = await get('/api/v4/groups?repository_storage=nfs-2&per_page=100', ADMIN);
    const onNfs2 = sandbox.state.db
      .prepare("SELECT count(*) AS n FROM items WHERE kind = 'group' AND storage = 'nfs-2'")
      .get() as { n: number };
    expect(onNfs2.n).toBeGreaterThan(0);
    expect((r.body as unknown[]).length).toBe(onNfs2.n);
    const all = await get('/api/v4/groups?per_page=100', ADMIN);
    expect((all.body as Record<string, unknown>[]).length).toBe(30);
    expect((all.body as Record<string, unknown>[]).some((g) => 'repository_storage' in g)).toBe(false);
    const p = await get('/api/v4/projects?repository_storage=nfs-2&per_page=100', ADMIN);
    expect((p.body as { repository_storage: string }[]).every((x) => x.repository_storage === 'nfs-2')).toBe(true);
  });
});
