// Over real HTTP: move lists ordered by created_at (not id), a second move
// whose worker finds the container lease held (GitLab's do_fail!), and group moves absent on CE.
import { startManualSandbox } from './support/manual-sandbox.js';
import { describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { callSandbox } from './support/sandbox-call.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';

const ROOT = 'glpat-sandbox-root-api-sudo-0001';
const MOVE_MS = 1000;

function seed(change: (s: Seed) => void = () => {}): Seed {
  const s = structuredClone(loadSeed());
  s.inventory = {
    projects: [1, 2, 3].map((id) => ({ id, storage: 'nfs-1', commit_count: 5 })),
    snippets: [{ id: 1, storage: 'nfs-1' }],
    groups: [{ id: 1, storage: 'nfs-1' }],
  };
  change(s);
  return s;
}

/** Status and body only: some cases compare the whole answer. */
async function call(sb: RunningSandbox, method: string, path: string, body?: unknown, token: string | null = ROOT) {
  const { status, body: json } = await callSandbox(sb, method, path, body, token);
  return { status, body: json };
}

/** A sandbox on a manual clock (test/support/manual-sandbox.ts), closed after the test. */
const startManual = (s: Seed = seed()) => startManualSandbox(s, MOVE_MS);

describe('move lists: order', () => {
  it('orders by created_at descending, not by id, in both list kinds', async () => {
    const { sb, advance } = await startManual();
    for (const id of [1, 2, 3]) {
      expect(
        (await call(sb, 'POST', `/projects/${id}/repository_storage_moves`, { destination_storage_name: 'cluster' }))
          .status,
      ).toBe(201);
      await advance(10);
    }
    // Give move 3 (the highest id) the oldest created_at: GitLab sorts by created_at only.
    sb.state.db.prepare("UPDATE moves SET created_at = '2020-01-01T00:00:00.000Z' WHERE id = 3").run();
    const all = await call(sb, 'GET', '/project_repository_storage_moves');
    expect(all.body.map((m) => m.id)).toEqual([2, 1, 3]);
    expect(all.body.map((m) => m.created_at)).toEqual(
      [...all.body.map((m) => m.created_at as string)].sort().reverse(),
    );
    await advance(MOVE_MS);
    expect(
      (await call(sb, 'POST', '/projects/3/repository_storage_moves', { destination_storage_name: 'nfs-1' })).status,
    ).toBe(201);
    const mine = await call(sb, 'GET', '/projects/3/repository_storage_moves');
    expect(mine.body.map((m) => m.id)).toEqual([4, 3]);
    sb.state.db.prepare("UPDATE moves SET created_at = '2030-01-01T00:00:00.000Z' WHERE id = 3").run();
    expect((await call(sb, 'GET', '/projects/3/repository_storage_moves')).body.map((m) => m.id)).toEqual([3, 4]);
  });
});

describe("a second move while the first one's worker holds the lease", () => {
  it('fails scheduled -> failed with a null error_message and leaves the repository read-only for good', async () => {
    const { sb, advance } = await startManual();
    const first = await call(sb, 'POST', '/projects/1/repository_storage_moves', {
      destination_storage_name: 'cluster',
    });
    await advance(0);
    await advance(MOVE_MS * 0.95);
    expect((await call(sb, 'GET', `/project_repository_storage_moves/${first.body.id}`)).body.state).toBe('replicated');
    // Writable during the cleanup, so GitLab accepts a new move...
    const second = await call(sb, 'POST', '/projects/1/repository_storage_moves', {
      destination_storage_name: 'default',
    });
    expect(second.status).toBe(201);
    expect(second.body.state).toBe('scheduled');
    await advance(0);
    // ...whose worker cannot take the lease: failed without a message.
    const failed = await call(sb, 'GET', `/projects/1/repository_storage_moves/${second.body.id}`);
    expect(failed.body).toMatchObject({
      state: 'failed',
      error_message: null,
      source_storage_name: 'cluster',
      destination_storage_name: 'default',
    });
    await advance(MOVE_MS);
    expect((await call(sb, 'GET', `/project_repository_storage_moves/${first.body.id}`)).body.state).toBe('finished');
    // Nothing resets the flag the failed move set: writes and new moves are refused.
    const row = sb.state.db
      .prepare("SELECT storage, read_only, commit_count FROM items WHERE kind = 'project' AND id = 1")
      .get();
    expect(row).toEqual({ storage: 'cluster', read_only: 1, commit_count: 5 });
    const commit = await call(sb, 'POST', '/projects/1/repository/commits', {
      branch: 'main',
      commit_message: 'c',
      actions: [{ action: 'create', file_path: 'f', content: 'x' }],
    });
    expect(commit.status).toBe(400);
    expect(
      (await call(sb, 'POST', '/projects/1/repository_storage_moves', { destination_storage_name: 'default' })).body,
    ).toEqual({ message: { project: ['is read-only'] } });
    expect(
      sb.state.db
        .prepare("SELECT id, state, error_message FROM moves WHERE kind = 'project' AND item_id = 1 ORDER BY id")
        .all(),
    ).toEqual([
      { id: first.body.id, state: 'finished', error_message: null },
      { id: second.body.id, state: 'failed', error_message: null },
    ]);
  });
});

describe('group moves on the Community Edition', () => {
  it('do not exist: 404 {"error":"404 Not Found"} before authentication; project and snippet moves do', async () => {
    // The parsed seed carries `instance.edition` already.
    const { sb } = await startManual(
      seed((s) => {
        Object.assign(s.instance, { edition: 'ce' });
      }),
    );
    const absent = { status: 404, body: { error: '404 Not Found' } };
    expect(await call(sb, 'GET', '/group_repository_storage_moves')).toEqual(absent);
    expect(await call(sb, 'GET', '/group_repository_storage_moves', undefined, null)).toEqual(absent);
    expect(await call(sb, 'GET', '/group_repository_storage_moves/1')).toEqual(absent);
    expect(await call(sb, 'POST', '/group_repository_storage_moves', { source_storage_name: 'nfs-1' })).toEqual(absent);
    expect(await call(sb, 'GET', '/groups/1/repository_storage_moves')).toEqual(absent);
    expect(
      await call(sb, 'POST', '/groups/1/repository_storage_moves', { destination_storage_name: 'cluster' }),
    ).toEqual(absent);
    expect((await call(sb, 'GET', '/project_repository_storage_moves')).status).toBe(200);
    expect((await call(sb, 'GET', '/snippet_repository_storage_moves')).status).toBe(200);
  });

  it('exist on EE (edition absent or ee), admin only', async () => {
    const { sb } = await startManual();
    expect((await call(sb, 'GET', '/group_repository_storage_moves')).status).toBe(200);
    expect((await call(sb, 'GET', '/group_repository_storage_moves', undefined, null)).status).toBe(401);
    expect(
      (await call(sb, 'GET', '/group_repository_storage_moves', undefined, 'glpat-sandbox-alice-api-00000006')).status,
    ).toBe(403);
    expect(
      (await call(sb, 'POST', '/groups/1/repository_storage_moves', { destination_storage_name: 'cluster' })).status,
    ).toBe(201);
  });
});
