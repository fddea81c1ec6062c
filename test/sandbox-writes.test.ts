// Writes that create commits (Commits API, snippet update, group wiki page) over real HTTP:
// parameter validation, response shapes, content bookkeeping, permissions, tiers. Read-only
// refusals during moves are covered in sandbox-moves.test.ts.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import { callSandbox } from './support/sandbox-call.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { fakeChecksum } from '../src/sandbox/checksum.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { assertProperty } from './support/property.js';

const ROOT = 'glpat-sandbox-root-api-sudo-0001';
const ROOT_READ = 'glpat-sandbox-root-read-api-0002';
const ALICE = 'glpat-sandbox-alice-api-00000006';
const READ_ONLY = { message: 'The repository is temporarily read-only. Please try again later.' };

function seed(change: (s: Seed) => void = () => {}): Seed {
  const s = structuredClone(loadSeed());
  s.inventory = {
    projects: [
      { id: 1, storage: 'nfs-1', commit_count: 3, visibility: 'private' },
      { id: 2, storage: 'nfs-1', visibility: 'public' },
      { id: 3, storage: 'nfs-1', visibility: 'private' },
    ],
    snippets: [
      { id: 1, storage: 'nfs-1', commit_count: 1 },
      { id: 2, storage: 'nfs-1', visibility: 'public' },
    ],
    groups: [
      { id: 1, storage: 'nfs-1', commit_count: 4 },
      { id: 2, storage: 'nfs-1', visibility: 'public' },
    ],
  };
  change(s);
  return s;
}

/** Status and body only: the cases compare the whole answer. */
async function call(sb: RunningSandbox, method: string, path: string, body?: unknown, token: string | null = ROOT) {
  const { status, body: json } = await callSandbox(sb, method, path, body, token);
  return { status, body: json };
}

const COMMIT = {
  branch: 'main',
  commit_message: 'Add file\n\nLonger body',
  actions: [{ action: 'create', file_path: 'a.txt', content: 'hello' }],
};

describe('writes that create commits', () => {
  let sb: RunningSandbox;
  const item = (kind: string, id: number) =>
    sb.state.db
      .prepare('SELECT name, visibility, read_only, checksum, commit_count FROM items WHERE kind = ? AND id = ?')
      .get(kind, id) as { name: string; visibility: string; read_only: number; checksum: string; commit_count: number };
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed(), moveDurationMs: 0 });
  });
  afterAll(async () => {
    await sb.close();
  });

  it("creates a project commit with GitLab's commit shape and bumps count and checksum", async () => {
    const first = await call(sb, 'POST', '/projects/1/repository/commits', COMMIT);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      title: 'Add file',
      message: COMMIT.commit_message,
      parent_ids: [],
      project_id: 1,
      author_name: 'Administrator',
    });
    expect(first.body.id).toMatch(/^[0-9a-f]{40}$/);
    expect(first.body.short_id).toBe((first.body.id as string).slice(0, 8));
    const second = await call(sb, 'POST', '/projects/group-1%2Fproject-1/repository/commits', {
      ...COMMIT,
      commit_message: 'Second',
    });
    expect(second.status).toBe(201);
    expect(second.body.parent_ids).toEqual([first.body.id]);
    expect(item('project', 1)).toMatchObject({ commit_count: 5, checksum: fakeChecksum('project', 1, 5) });
  });

  it("validates commit parameters with Grape's messages", async () => {
    const cases: [unknown, string][] = [
      [{}, 'branch is missing, commit_message is missing, actions is missing'],
      [{ ...COMMIT, actions: [] }, 'actions is empty'],
      [{ ...COMMIT, actions: 'create' }, 'actions is invalid'],
      [
        { ...COMMIT, actions: [{ action: 'explode', file_path: 'x' }] },
        'actions[0][action] does not have a valid value',
      ],
      [{ ...COMMIT, actions: [{ action: 'create' }] }, 'actions[0][file_path] is missing'],
      [{ ...COMMIT, branch: { name: 'main' } }, 'branch is invalid'],
    ];
    for (const [body, error] of cases)
      expect(await call(sb, 'POST', '/projects/1/repository/commits', body)).toEqual({ status: 400, body: { error } });
    expect((await call(sb, 'POST', '/projects/1/repository/commits', '{not json')).status).toBe(400);
    expect(await call(sb, 'POST', '/projects/99/repository/commits', COMMIT)).toEqual({
      status: 404,
      body: { message: '404 Project Not Found' },
    });
    expect(item('project', 1).commit_count).toBe(5);
  });

  it('lets admins and owners write; others get 403 on visible items and 404 on private ones', async () => {
    expect(await call(sb, 'POST', '/projects/2/repository/commits', COMMIT, null)).toEqual({
      status: 401,
      body: { message: '401 Unauthorized' },
    });
    expect((await call(sb, 'POST', '/projects/2/repository/commits', COMMIT, ROOT_READ)).body).toMatchObject({
      error: 'insufficient_scope',
    });
    expect(await call(sb, 'POST', '/projects/2/repository/commits', COMMIT, ALICE)).toEqual({
      status: 403,
      body: { message: '403 Forbidden' },
    });
    expect(await call(sb, 'POST', '/projects/3/repository/commits', COMMIT, ALICE)).toEqual({
      status: 404,
      body: { message: '404 Project Not Found' },
    });
    sb.state.db.prepare("UPDATE items SET owner_id = 2 WHERE kind = 'project' AND id = 3").run();
    const own = await call(sb, 'POST', '/projects/3/repository/commits', COMMIT, ALICE);
    expect(own.status).toBe(201);
    expect(own.body.author_name).toBe('Alice Liddell');
    expect(await call(sb, 'PUT', '/snippets/2', { content: 'x' }, ALICE)).toEqual({
      status: 403,
      body: { message: '403 Forbidden' },
    });
    expect(await call(sb, 'POST', '/groups/2/wikis', { title: 'T', content: 'c' }, ALICE)).toEqual({
      status: 403,
      body: { message: '403 Forbidden' },
    });
  });

  it('updates a snippet: a content change is a commit, a title change is not', async () => {
    const titled = await call(sb, 'PUT', '/snippets/1', { title: 'Renamed' });
    expect(titled.status).toBe(200);
    expect(titled.body).toMatchObject({ id: 1, title: 'Renamed', visibility: 'private' });
    expect(item('snippet', 1).commit_count).toBe(1);
    const content = await call(sb, 'PUT', '/snippets/1', { content: 'new body', visibility: 'internal' });
    expect(content.body).toMatchObject({ id: 1, visibility: 'internal', web_url: `${sb.url}/-/snippets/1` });
    expect(item('snippet', 1)).toMatchObject({ commit_count: 2, checksum: fakeChecksum('snippet', 1, 2) });
    const files = await call(sb, 'PUT', '/snippets/1', {
      files: [{ action: 'update', file_path: 'snippet.txt', content: 'x' }],
    });
    expect(files.status).toBe(200);
    expect(item('snippet', 1).commit_count).toBe(3);
  });

  it('validates snippet updates', async () => {
    expect(await call(sb, 'PUT', '/snippets/1', {})).toEqual({
      status: 400,
      body: {
        error:
          'content, description, files, file_name, title, visibility are missing, at least one parameter must be provided',
      },
    });
    expect((await call(sb, 'PUT', '/snippets/1', { content: 'a', files: [] })).body).toEqual({
      error: 'content, files are mutually exclusive',
    });
    expect((await call(sb, 'PUT', '/snippets/1', { visibility: 'secret' })).body).toEqual({
      error: 'visibility does not have a valid value',
    });
    expect((await call(sb, 'PUT', '/snippets/1', { files: [{ action: 'burn' }] })).body).toEqual({
      error: 'files[0][action] does not have a valid value',
    });
    expect(await call(sb, 'PUT', '/snippets/abc', { content: 'a' })).toEqual({
      status: 400,
      body: { error: 'id is invalid' },
    });
    expect(await call(sb, 'PUT', '/snippets/77', { content: 'a' })).toEqual({
      status: 404,
      body: { message: '404 Snippet Not Found' },
    });
    expect(item('snippet', 1).commit_count).toBe(3);
  });

  it('creates a group wiki page as a commit', async () => {
    const page = await call(sb, 'POST', '/groups/1/wikis', { title: 'Getting started', content: '# Hi' });
    expect(page).toEqual({
      status: 201,
      body: {
        content: '# Hi',
        format: 'markdown',
        slug: 'Getting-started',
        title: 'Getting started',
        encoding: 'UTF-8',
      },
    });
    expect(
      (await call(sb, 'POST', '/groups/group-1/wikis', { title: 'Two', content: 'x', format: 'asciidoc' })).body,
    ).toMatchObject({ format: 'asciidoc' });
    expect(item('group', 1)).toMatchObject({ commit_count: 6, checksum: fakeChecksum('group', 1, 6) });
    expect((await call(sb, 'POST', '/groups/1/wikis', {})).body).toEqual({
      error: 'title is missing, content is missing',
    });
    expect((await call(sb, 'POST', '/groups/1/wikis', { title: 'a', content: 'b', format: 'docx' })).body).toEqual({
      error: 'format does not have a valid value',
    });
    expect((await call(sb, 'POST', '/groups/9/wikis', { title: 'a', content: 'b' })).body).toEqual({
      message: '404 Group Not Found',
    });
  });

  it('refuses commits while read-only and allows snippet metadata changes', async () => {
    sb.state.db.prepare('UPDATE items SET read_only = 1 WHERE id = 2').run();
    try {
      expect(await call(sb, 'POST', '/projects/2/repository/commits', COMMIT)).toEqual({
        status: 400,
        body: READ_ONLY,
      });
      expect(await call(sb, 'PUT', '/snippets/2', { file_name: 'b.txt' })).toEqual({ status: 400, body: READ_ONLY });
      expect(await call(sb, 'POST', '/groups/2/wikis', { title: 'a', content: 'b' })).toEqual({
        status: 400,
        body: READ_ONLY,
      });
      expect((await call(sb, 'PUT', '/snippets/2', { title: 'Only metadata' })).status).toBe(200);
      expect(item('project', 2).commit_count).toBe(10);
    } finally {
      sb.state.db.prepare('UPDATE items SET read_only = 0 WHERE id = 2').run();
    }
  });
});

describe('group wikis on the free tier', () => {
  it('do not exist', async () => {
    const sb = await startSandbox({
      seed: seed((s) => {
        s.instance.tier = 'free';
      }),
    });
    try {
      expect(await call(sb, 'POST', '/groups/1/wikis', { title: 'a', content: 'b' })).toEqual({
        status: 404,
        body: { message: '404 Not found' },
      });
      expect((await call(sb, 'POST', '/projects/1/repository/commits', COMMIT)).status).toBe(201);
    } finally {
      await sb.close();
    }
  });
});

describe('arbitrary input to move and write routes', () => {
  it('never answers 5xx', async () => {
    const sb = await startSandbox({ seed: seed(), moveDurationMs: 0 });
    const keys = [
      'branch',
      'commit_message',
      'actions',
      'destination_storage_name',
      'source_storage_name',
      'content',
      'files',
      'title',
      'visibility',
      'format',
      'file_name',
      'page',
      'per_page',
    ];
    const routes = [
      ['POST', '/projects/ID/repository/commits'],
      ['PUT', '/snippets/ID'],
      ['POST', '/groups/ID/wikis'],
      ['POST', '/projects/ID/repository_storage_moves'],
      ['POST', '/snippets/ID/repository_storage_moves'],
      ['POST', '/groups/ID/repository_storage_moves'],
      ['POST', '/project_repository_storage_moves'],
      ['POST', '/snippet_repository_storage_moves'],
      ['POST', '/group_repository_storage_moves'],
      ['GET', '/project_repository_storage_moves/ID'],
      ['GET', '/groups/ID/repository_storage_moves/ID'],
      ['GET', '/snippet_repository_storage_moves'],
    ] as const;
    const id = fc.oneof(
      fc.constantFrom(
        '1',
        '2',
        '0',
        '-1',
        '1.5',
        'group-1',
        'group-1%2Fproject-1',
        '%00',
        '99999999999999999999',
        'abc',
      ),
      fc.nat().map(String),
    );
    try {
      await assertProperty(
        fc.asyncProperty(
          fc.constantFrom(...routes),
          id,
          fc.dictionary(fc.constantFrom(...keys), fc.jsonValue()),
          async ([method, path], ref, body) => {
            const res = await call(sb, method, path.replaceAll('ID', ref), method === 'GET' ? undefined : body);
            expect(res.status).toBeGreaterThanOrEqual(200);
            expect(res.status).toBeLessThan(500);
          },
        ),
        { numRuns: 300 },
      );
    } finally {
      await sb.close();
    }
  });
});
