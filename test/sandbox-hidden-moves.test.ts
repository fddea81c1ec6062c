// The per-item project move routes and hidden or pending-delete projects, per release
// (docs/gitlab-behaviour.md §1.3, "Move API finds them"): before GitLab let those routes find
// them, both answer 404 as `GET /projects/:id` does; the bulk move reaches them on every release.
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import { loadSeed } from '../src/sandbox/seed.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { until } from './support/until.js';

const ADMIN = 'glpat-sandbox-root-api-sudo-0001';
const HIDDEN = 3;
const PENDING = 4;

function seedAt(version: string): Seed {
  const seed = loadSeed();
  Object.assign(seed.instance, { version, edition: 'ee' });
  seed.inventory = {
    generate: { ...seed.inventory.generate!, projects: 6, snippets: 0, groups: 2, storages: { 'nfs-1': 1 } },
    projects: [
      { id: HIDDEN, storage: 'nfs-1', hidden: true },
      { id: PENDING, storage: 'nfs-1', pending_delete: true },
    ],
  };
  return seed;
}

let sb: RunningSandbox | null = null;
afterEach(async () => {
  await sb?.close();
  sb = null;
});

async function call(path: string, method = 'GET', body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${sb!.url}${path}`, {
    method,
    headers: { 'private-token': ADMIN, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

const storageOf = async (id: number) =>
  ((await call(`/-/sandbox/items/project/${id}`)).body as { storage: string }).storage;

describe('hidden and pending-delete projects on the per-item move routes', () => {
  it('16.2: both routes answer 404 Project Not Found for them; other projects and the bulk move are unchanged', async () => {
    sb = await startSandbox({ seed: seedAt('16.2.0'), moveDurationMs: 10 });
    for (const id of [HIDDEN, PENDING]) {
      expect(await call(`/api/v4/projects/${id}/repository_storage_moves`), `GET ${id}`).toEqual({
        status: 404,
        body: { message: '404 Project Not Found' },
      });
      expect(
        await call(`/api/v4/projects/${id}/repository_storage_moves`, 'POST', { destination_storage_name: 'cluster' }),
        `POST ${id}`,
      ).toEqual({ status: 404, body: { message: '404 Project Not Found' } });
      expect((await call(`/api/v4/projects/${id}/repository_storage_moves/1`)).status).toBe(404);
    }
    // A project in the default scope is moved as before.
    expect(
      (await call('/api/v4/projects/1/repository_storage_moves', 'POST', { destination_storage_name: 'cluster' }))
        .status,
    ).toBe(201);
    // Only the bulk service reaches them, and its records list them.
    expect(
      (
        await call('/api/v4/project_repository_storage_moves', 'POST', {
          source_storage_name: 'nfs-1',
          destination_storage_name: 'cluster',
        })
      ).status,
    ).toBe(202);
    for (const id of [HIDDEN, PENDING])
      await until(
        () => storageOf(id),
        (s) => s === 'cluster',
      );
    const records = (await call('/api/v4/project_repository_storage_moves?per_page=100')).body as {
      project: { id: number };
    }[];
    expect(records.map((m) => m.project.id)).toEqual(expect.arrayContaining([HIDDEN, PENDING]));
  });

  it('16.6 (the bound is taken as 16.7) still answers 404; 16.7 and later find and move them', async () => {
    sb = await startSandbox({ seed: seedAt('16.6.0'), moveDurationMs: 10 });
    expect((await call(`/api/v4/projects/${HIDDEN}/repository_storage_moves`)).status).toBe(404);
    await sb.close();
    sb = await startSandbox({ seed: seedAt('16.7.0'), moveDurationMs: 10 });
    for (const id of [HIDDEN, PENDING]) {
      expect(await call(`/api/v4/projects/${id}/repository_storage_moves`)).toEqual({ status: 200, body: [] });
      expect(
        (await call(`/api/v4/projects/${id}/repository_storage_moves`, 'POST', { destination_storage_name: 'cluster' }))
          .status,
      ).toBe(201);
      await until(
        () => storageOf(id),
        (s) => s === 'cluster',
      );
    }
    // GET /projects/:id stays 404 for them on every release.
    expect((await call(`/api/v4/projects/${HIDDEN}`)).status).toBe(404);
  });
});
