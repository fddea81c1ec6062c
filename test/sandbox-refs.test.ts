// A project's refs through the Branches and Tags APIs (lib/api/branches.rb, lib/api/tags.rb): offset
// pages whose X-Total counts the refs (Gitaly's branch_count for the first branches page), the
// default branch's commit as HEAD, GitLab's 404 and 403; and the seeded content_drift fault, which
// loses the newest commit and tag on the destination of the project's next move.
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { callSandbox } from './support/sandbox-call.js';
import { until } from './support/until.js';

const running: RunningSandbox[] = [];
afterEach(async () => {
  for (const sb of running.splice(0)) await sb.close();
});

const ALICE = 'glpat-sandbox-alice-api-00000006';

async function start(): Promise<RunningSandbox> {
  const seed = structuredClone(loadSeed());
  seed.inventory = {
    projects: [
      { id: 1, storage: 'nfs-1', branches: 3, tags: 2, commit_count: 12 },
      { id: 2, storage: 'nfs-1', branches: 1, tags: 4, content_drift: true },
      { id: 3, storage: 'nfs-1', commit_count: 0 },
      { id: 4, storage: 'nfs-1', visibility: 'public', repository_access_level: 'private' },
      { id: 5, storage: 'nfs-1', visibility: 'private' },
    ],
  };
  const sb = await startSandbox({ seed, moveDurationMs: 20 });
  running.push(sb);
  return sb;
}

async function fingerprint(sb: RunningSandbox, id: number) {
  const branches = await callSandbox(sb, 'GET', `/projects/${id}/repository/branches?per_page=1`);
  const tags = await callSandbox(sb, 'GET', `/projects/${id}/repository/tags?per_page=1`);
  const main = await callSandbox(sb, 'GET', `/projects/${id}/repository/branches/main`);
  return {
    branches: Number(branches.headers.get('x-total')),
    tags: Number(tags.headers.get('x-total')),
    head: main.status === 200 ? (main.body.commit as { id: string }).id : null,
  };
}

async function allFinished(sb: RunningSandbox): Promise<void> {
  const moves = await until(
    () => callSandbox(sb, 'GET', '/project_repository_storage_moves'),
    (r) => r.body.every((m) => m.state === 'finished'),
  );
  expect(moves.body.map((m) => m.state)).not.toContain('started');
}

describe('the Branches and Tags APIs', () => {
  it('count the refs in X-Total, page them, and show the default branch with its commit', async () => {
    const sb = await start();
    const all = await callSandbox(sb, 'GET', '/projects/1/repository/branches');
    expect(all.body.map((b) => b.name)).toEqual(['feature-1', 'feature-2', 'main']);
    expect(all.headers.get('x-total')).toBe('3');
    const one = await callSandbox(sb, 'GET', '/projects/1/repository/branches?per_page=1&page=2');
    expect([one.body.length, one.body[0]?.name, one.headers.get('x-next-page')]).toEqual([1, 'feature-2', '3']);
    const main = await callSandbox(sb, 'GET', '/projects/1/repository/branches/main');
    expect(main.body).toMatchObject({ name: 'main', default: true, protected: true });
    expect((main.body.commit as { id: string }).id).toMatch(/^[0-9a-f]{40}$/);
    const tags = await callSandbox(sb, 'GET', '/projects/1/repository/tags');
    expect(tags.body.map((t) => t.name)).toEqual(['v2.0.0', 'v1.0.0']);
    expect(tags.headers.get('x-total')).toBe('2');
    // Also by full path, as every :id route.
    expect((await callSandbox(sb, 'GET', '/projects/group-1%2Fproject-1/repository/branches')).status).toBe(200);
  });

  it("answers GitLab's errors: no such branch, an empty repository, no read_code, a project one cannot see", async () => {
    const sb = await start();
    expect(await callSandbox(sb, 'GET', '/projects/1/repository/branches/nope')).toMatchObject({
      status: 404,
      body: { message: '404 Branch Not Found' },
    });
    const empty = await callSandbox(sb, 'GET', '/projects/3/repository/branches');
    expect([empty.status, empty.body, empty.headers.get('x-total')]).toEqual([200, [], '0']);
    expect((await callSandbox(sb, 'GET', '/projects/3/repository/branches/main')).status).toBe(404);
    expect((await callSandbox(sb, 'GET', '/projects/4/repository/tags', undefined, ALICE)).status).toBe(403);
    expect(await callSandbox(sb, 'GET', '/projects/5/repository/branches', undefined, ALICE)).toMatchObject({
      status: 404,
      body: { message: '404 Project Not Found' },
    });
    expect((await callSandbox(sb, 'GET', '/projects/99/repository/branches')).status).toBe(404);
  });

  it('a move keeps the refs; a commit changes HEAD; content_drift loses a commit and a tag on the destination', async () => {
    const sb = await start();
    const before1 = await fingerprint(sb, 1);
    const before2 = await fingerprint(sb, 2);
    for (const id of [1, 2]) {
      const r = await callSandbox(sb, 'POST', `/projects/${id}/repository_storage_moves`, {
        destination_storage_name: 'cluster',
      });
      expect(r.status).toBe(201);
    }
    await allFinished(sb);
    expect(await fingerprint(sb, 1)).toEqual(before1);
    const after2 = await fingerprint(sb, 2);
    expect(after2.branches).toBe(before2.branches);
    expect(after2.tags).toBe(before2.tags - 1);
    expect(after2.head).not.toBe(before2.head);
    // Once: the next move of project 2 keeps what it has now.
    const back = await callSandbox(sb, 'POST', '/projects/2/repository_storage_moves', {
      destination_storage_name: 'nfs-1',
    });
    expect(back.status).toBe(201);
    await allFinished(sb);
    expect(await fingerprint(sb, 2)).toEqual(after2);
    const commit = await callSandbox(sb, 'POST', '/projects/1/repository/commits', {
      branch: 'main',
      commit_message: 'one more',
      actions: [{ action: 'create', file_path: 'a.txt', content: 'a' }],
    });
    expect(commit.status).toBe(201);
    expect((await fingerprint(sb, 1)).head).toBe(commit.body.id);
  });
});
