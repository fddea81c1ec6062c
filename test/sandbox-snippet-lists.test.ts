// The snippet routes clients call beside /snippets/all (lib/api/snippets.rb): GET /snippets, the
// caller's own snippets, and GET /snippets/public, public personal snippets. The sandbox answered
// 404 for the first and 400 "id is invalid" for the second (taken as /snippets/:id). Snippets with
// a repository also carry ssh_url_to_repo and http_url_to_repo (BasicSnippet), on every route that
// renders one, move records included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { SANDBOX_ROOT_TOKEN } from './support/sandbox-call.js';

const ALICE_TOKEN = 'glpat-sandbox-alice-api-00000006';

type Json = Record<string, unknown>;

/**
 * Alice (user 2) writes personal snippets of each visibility and snippets in projects with each
 * snippets feature level; root (user 1) writes one personal public snippet and one in project 1.
 * Alice is a member of project 3 (members-only) but not of project 4 (members-only too).
 */
function seed(edition: 'ee' | 'ce' = 'ee'): Seed {
  const s = structuredClone(loadSeed());
  if (edition === 'ce') s.instance = { ...s.instance, edition: 'ce', tier: 'free' };
  s.inventory = {
    projects: [
      { id: 1, storage: 'nfs-1', visibility: 'public', snippets_access_level: 'enabled' },
      { id: 2, storage: 'nfs-1', visibility: 'public', snippets_access_level: 'disabled', members: ['alice'] },
      { id: 3, storage: 'nfs-1', visibility: 'private', snippets_access_level: 'private', members: ['alice'] },
      { id: 4, storage: 'nfs-1', visibility: 'public', snippets_access_level: 'private' },
    ],
    snippets: [
      { id: 1, storage: 'nfs-1', author: 'alice', visibility: 'private' },
      { id: 2, storage: 'nfs-2', author: 'alice', visibility: 'internal' },
      { id: 3, storage: 'nfs-1', author: 'alice', visibility: 'public' },
      { id: 4, storage: 'nfs-1', author: 'alice', visibility: 'public', project: 1 },
      { id: 5, storage: 'nfs-1', author: 'alice', visibility: 'public', project: 2 },
      { id: 6, storage: 'nfs-1', author: 'alice', visibility: 'private', project: 3 },
      { id: 7, storage: 'nfs-1', author: 'alice', visibility: 'public', project: 4 },
      { id: 8, storage: 'nfs-1', author: 'root', visibility: 'public' },
      { id: 9, storage: 'nfs-1', author: 'root', visibility: 'private', project: 1 },
    ],
  };
  return s;
}

async function get(sb: RunningSandbox, path: string, opts: { token?: string | null; sudo?: string } = {}) {
  const headers: Record<string, string> = {};
  const token = opts.token === undefined ? SANDBOX_ROOT_TOKEN : opts.token;
  if (token) headers['private-token'] = token;
  if (opts.sudo) headers.sudo = opts.sudo;
  const res = await fetch(`${sb.url}/api/v4${path}`, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Json & Json[] };
}

const ids = (body: Json[]) => body.map((s) => s.id);

describe('GET /snippets and GET /snippets/public (EE)', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed(), moveDurationMs: 60_000 });
    // Explicit seeds share one creation time: a day apart each, in id order, for the time filters.
    sb.state.db
      .prepare(
        "UPDATE items SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', '2024-01-01', '+' || id || ' days') WHERE kind = 'snippet'",
      )
      .run();
  });
  afterAll(async () => {
    await sb.close();
  });

  it("lists the caller's own snippets, newest first, where the project's snippets feature lets the caller see them", async () => {
    const alice = await get(sb, '/snippets', { token: ALICE_TOKEN });
    expect(alice.status).toBe(200);
    // Personal ones of every visibility; project 1 (enabled); project 3 (members-only, a member).
    // Not project 2 (disabled, even for a member) nor project 4 (members-only, not a member).
    expect(ids(alice.body)).toEqual([6, 4, 3, 2, 1]);
    expect(alice.body.some((s) => 'repository_storage' in s)).toBe(false);
    expect(alice.headers.get('x-total')).toBe('5');
  });

  it("gives an administrator their own snippets, not everyone's, with repository_storage", async () => {
    const root = await get(sb, '/snippets');
    expect(ids(root.body)).toEqual([9, 8]);
    expect(root.body.map((s) => s.repository_storage)).toEqual(['nfs-1', 'nfs-1']);
    // Under sudo the list is the impersonated user's (and the caller is no longer an administrator).
    const asAlice = await get(sb, '/snippets', { sudo: 'alice' });
    expect(ids(asAlice.body)).toEqual([6, 4, 3, 2, 1]);
    expect(asAlice.body.some((s) => 'repository_storage' in s)).toBe(false);
  });

  it('takes created_after, created_before and offset pages, and ignores a storage filter it does not declare', async () => {
    const all = (await get(sb, '/snippets', { token: ALICE_TOKEN })).body;
    const created = (id: number) => String(all.find((s) => s.id === id)?.created_at);
    const window = await get(
      sb,
      `/snippets?created_after=${encodeURIComponent(created(2))}&created_before=${encodeURIComponent(created(4))}`,
      { token: ALICE_TOKEN },
    );
    expect(ids(window.body)).toEqual([4, 3, 2]);
    expect((await get(sb, '/snippets?created_after=yesterday', { token: ALICE_TOKEN })).body).toEqual({
      error: 'created_after is invalid',
    });
    const page = await get(sb, '/snippets?per_page=2&page=2', { token: ALICE_TOKEN });
    expect(ids(page.body)).toEqual([3, 2]);
    expect(page.headers.get('x-next-page')).toBe('3');
    expect(ids((await get(sb, '/snippets?repository_storage=nfs-2')).body)).toEqual([9, 8]);
  });

  it('lists public personal snippets only, whoever asks, and is no snippet id', async () => {
    for (const token of [SANDBOX_ROOT_TOKEN, ALICE_TOKEN]) {
      const listed = await get(sb, '/snippets/public', { token });
      expect(listed.status).toBe(200);
      // Project snippets are left out however public (4, 7); so are private and internal ones.
      expect(ids(listed.body)).toEqual([8, 3]);
    }
    expect((await get(sb, '/snippets/public')).body.map((s) => s.repository_storage)).toEqual(['nfs-1', 'nfs-1']);
  });

  it('refuses anonymous callers on both (authenticate!)', async () => {
    for (const path of ['/snippets', '/snippets/public']) {
      const res = await get(sb, path, { token: null });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: '401 Unauthorized' });
    }
  });

  it('shows the clone URLs of the snippet repository on every route that renders a snippet', async () => {
    const host = new URL(sb.url).hostname;
    const personal = { ssh: `git@${host}:snippets/3.git`, http: `${sb.url}/snippets/3.git` };
    const inProject = {
      ssh: `git@${host}:group-1/project-1/snippets/4.git`,
      http: `${sb.url}/group-1/project-1/snippets/4.git`,
    };
    const urls = (s: Json | undefined) => ({ ssh: s?.ssh_url_to_repo, http: s?.http_url_to_repo });
    expect(urls((await get(sb, '/snippets/3')).body)).toEqual(personal);
    expect(urls((await get(sb, '/snippets/4')).body)).toEqual(inProject);
    const all = (await get(sb, '/snippets/all?per_page=100')).body;
    expect(urls(all.find((s) => s.id === 3))).toEqual(personal);
    expect(urls(all.find((s) => s.id === 4))).toEqual(inProject);
    expect(urls((await get(sb, '/snippets', { token: ALICE_TOKEN })).body.find((s) => s.id === 4))).toEqual(inProject);
    expect(urls((await get(sb, '/snippets/public')).body.find((s) => s.id === 3))).toEqual(personal);

    const res = await fetch(`${sb.url}/api/v4/snippets/4/repository_storage_moves`, {
      method: 'POST',
      headers: { 'private-token': SANDBOX_ROOT_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ destination_storage_name: 'nfs-2' }),
    });
    const move = (await res.json()) as { id: number; snippet: Json };
    expect(urls(move.snippet)).toEqual(inProject);
    expect(urls((await get(sb, `/snippet_repository_storage_moves/${move.id}`)).body.snippet as Json)).toEqual(
      inProject,
    );
  });
});

describe('GET /snippets on the Community Edition', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed('ce'), moveDurationMs: 60_000 });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('answers on CE and on a release before /snippets/all, never a 404 a client could read as an edition', async () => {
    const root = await get(sb, '/snippets');
    expect(root.status).toBe(200);
    expect(ids(root.body)).toEqual([9, 8]);
    expect(root.body.some((s) => 'repository_storage' in s)).toBe(false);
    expect(ids((await get(sb, '/snippets/public')).body)).toEqual([8, 3]);
  });
});

describe('GET /snippets before 16.3', () => {
  it('is there while /snippets/all is still taken for a snippet id', async () => {
    const s = seed();
    s.instance = { ...s.instance, version: '16.2.0' };
    const sb = await startSandbox({ seed: s, moveDurationMs: 60_000 });
    try {
      expect(ids((await get(sb, '/snippets', { token: ALICE_TOKEN })).body)).toEqual([6, 4, 3, 2, 1]);
      expect(ids((await get(sb, '/snippets/public')).body)).toEqual([8, 3]);
      expect((await get(sb, '/snippets/all')).body).toEqual({ error: 'id is invalid' });
    } finally {
      await sb.close();
    }
  });
});
