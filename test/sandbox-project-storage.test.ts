/**
 * `GET /projects/:id/storage` in the sandbox, as GitLab's `lib/api/projects.rb` serves it:
 * administrators only, the `ProjectRepositoryStorage` entity, hidden and pending-delete projects
 * not found (`user_project`). Its `disk_path` is where shardmove's reports say a copy left behind is
 * (src/report/disk-paths.ts, with `.git`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diskPaths } from '../src/report/disk-paths.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import { loadSeed } from '../src/sandbox/seed.js';

const ADMIN = 'glpat-sandbox-root-api-sudo-0001';
const ALICE = 'glpat-sandbox-alice-api-00000006';

describe('GET /projects/:id/storage', () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    const seed = loadSeed();
    seed.inventory = {
      projects: [
        { id: 1, name: 'p1', storage: 'nfs-1', visibility: 'public' },
        { id: 2, name: 'p2', storage: 'cluster', visibility: 'public', hidden: true },
        { id: 3, name: 'p3', storage: 'nfs-2', visibility: 'public', pending_delete: true },
      ],
    };
    sandbox = await startSandbox({ seed });
  });
  afterAll(() => sandbox.close());

  const get = async (path: string, token?: string) => {
    const res = await fetch(`${sandbox.url}/api/v4${path}`, { headers: token ? { 'private-token': token } : {} });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it("answers administrators with the ProjectRepositoryStorage entity, its disk_path the hashed path shardmove's reports print", async () => {
    const r = await get('/projects/1/storage', ADMIN);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['created_at', 'disk_path', 'project_id', 'repository_storage']);
    expect(r.body).toMatchObject({ project_id: 1, repository_storage: 'nfs-1' });
    expect(`${String(r.body.disk_path)}.git`).toBe(diskPaths('projects', 1)[0]);
    expect(r.body.disk_path).toMatch(/^@hashed\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}$/);
  });

  it('refuses everyone else, and does not find hidden or pending-delete projects', async () => {
    expect((await get('/projects/1/storage')).status).toBe(401);
    expect((await get('/projects/1/storage', ALICE)).status).toBe(403);
    for (const id of [2, 3, 99]) {
      const r = await get(`/projects/${id}/storage`, ADMIN);
      expect(r).toEqual({ status: 404, body: { message: '404 Project Not Found' } });
    }
  });
});
