// Repository storage moves over real HTTP (reference §1-2): lifecycles of each kind, failures,
// read-only refusals and content kept across a move, bulk scheduling, validation, pagination,
// tiers, restart from a --db file, and authorisation.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import { callSandbox } from './support/sandbox-call.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { fakeChecksum } from '../src/sandbox/checksum.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { setMeta } from '../src/sandbox/db.js';
import type { MoveFate } from '../src/sandbox/faults.js';
import type { MoveEngine } from '../src/sandbox/moves/engine.js';
import { createMoveEngine } from '../src/sandbox/moves/engine.js';
import { realTimersAt } from './support/fake-clock.js';

const ROOT = 'glpat-sandbox-root-api-sudo-0001';
const ALICE = 'glpat-sandbox-alice-api-00000006';
const READ_ONLY = { message: 'The repository is temporarily read-only. Please try again later.' };

type Json = Record<string, unknown>;

/** The default users and credentials with a small explicit inventory. */
function seed(change: (s: Seed) => void = () => {}): Seed {
  const s = structuredClone(loadSeed());
  const ids = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
  s.inventory = {
    projects: [...ids(8).map((id) => ({ id, storage: 'nfs-1', commit_count: 10 + id })), { id: 9, storage: 'default' }],
    snippets: ids(4).map((id) => ({ id, storage: 'nfs-1' })),
    groups: ids(4).map((id) => ({ id, storage: 'nfs-1' })),
  };
  change(s);
  return s;
}

const call = (sb: RunningSandbox, method: string, path: string, body?: unknown, token: string | null = ROOT) =>
  callSandbox(sb, method, path, body, token);

async function waitFor<T>(probe: () => Promise<T> | T, ok: (v: T) => boolean, timeoutMs = 4000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out; last value ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const PLURAL = { project: 'projects', snippet: 'snippets', group: 'groups' } as const;

function item(sb: RunningSandbox, kind: string, id: number) {
  return sb.state.db
    .prepare('SELECT storage, read_only, checksum, commit_count FROM items WHERE kind = ? AND id = ?')
    .get(kind, id) as { storage: string; read_only: number; checksum: string; commit_count: number };
}

const moveState = (sb: RunningSandbox, kind: string, id: number) =>
  call(sb, 'GET', `/${kind}_repository_storage_moves/${id}`).then((r) => r.body.state as string);

/** Replaces the sandbox's engine with one whose faults decide fates from `fates` (consumed in order). */
function injectFates(sb: RunningSandbox, fates: Record<string, MoveFate[]>, moveDurationMs: number): MoveEngine {
  sb.state.engine.close();
  const engine = createMoveEngine(
    { ...sb.state, faults: { ...sb.state.faults, moveFate: (kind, id) => fates[`${kind}:${id}`]?.shift() ?? 'ok' } },
    { workers: 10, speed: 1, moveDurationMs },
  );
  sb.state.engine = engine;
  engine.start();
  return engine;
}

describe('repository storage moves', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed(), moveDurationMs: 150 });
  });
  afterAll(async () => {
    await sb.close();
  });

  for (const kind of ['project', 'snippet', 'group'] as const) {
    it(`moves a ${kind} through scheduled, started and replicated to finished`, async () => {
      const before = item(sb, kind, 1);
      const res = await call(sb, 'POST', `/${PLURAL[kind]}/1/repository_storage_moves`, {
        destination_storage_name: 'cluster',
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        state: 'scheduled',
        source_storage_name: 'nfs-1',
        destination_storage_name: 'cluster',
        error_message: null,
      });
      expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect((res.body[kind] as Json).id).toBe(1);
      const id = res.body.id as number;
      const seen = new Set<string>();
      await waitFor(
        () => moveState(sb, kind, id),
        (s) => (seen.add(s), s === 'finished'),
      );
      // Polls can miss the short middle states on a loaded machine; the snapshot proves the start.
      const row = sb.state.db.prepare('SELECT snapshot_checksum, snapshot_commits FROM moves WHERE id = ?').get(id);
      expect(row).toEqual({ snapshot_checksum: before.checksum, snapshot_commits: before.commit_count });
      expect([...seen].every((s) => ['scheduled', 'started', 'replicated', 'finished'].includes(s))).toBe(true);
      const one = await call(sb, 'GET', `/${PLURAL[kind]}/1/repository_storage_moves/${id}`);
      expect(one.body).toMatchObject({ id, state: 'finished' });
      expect(item(sb, kind, 1)).toEqual({ ...before, storage: 'cluster', read_only: 0 });
    });
  }

  it('shows the nested object of each kind', async () => {
    const p = await call(sb, 'GET', '/project_repository_storage_moves?per_page=100');
    const project = p.body.find((m) => (m.project as Json).id === 1)?.project;
    expect(project).toEqual({
      id: 1,
      description: null,
      name: 'project-1',
      name_with_namespace: 'group-1 / project-1',
      path: 'project-1',
      path_with_namespace: 'group-1/project-1',
      created_at: expect.any(String),
    });
    const s = await call(sb, 'GET', '/snippet_repository_storage_moves');
    expect(s.body[0]?.snippet).toMatchObject({
      id: 1,
      title: 'snippet-1',
      web_url: `${sb.url}/-/snippets/1`,
      author: { id: 1, username: 'root' },
    });
    const g = await call(sb, 'GET', '/group_repository_storage_moves');
    expect(g.body[0]?.group).toEqual({ id: 1, web_url: `${sb.url}/groups/group-1`, name: 'group-1' });
  });

  it('finds projects by URL-encoded path and groups by path', async () => {
    expect((await call(sb, 'GET', '/projects/group-1%2Fproject-1/repository_storage_moves')).body).toHaveLength(1);
    expect((await call(sb, 'GET', '/groups/group-1/repository_storage_moves')).body).toHaveLength(1);
  });

  it('validates storages, ids and body types with 4xx JSON', async () => {
    expect(
      await call(sb, 'POST', '/projects/3/repository_storage_moves', { destination_storage_name: 'mars' }),
    ).toMatchObject({ status: 400, body: { message: { destination_storage_name: ['is not included in the list'] } } });
    expect(
      await call(sb, 'POST', '/projects/3/repository_storage_moves', { destination_storage_name: ['cluster'] }),
    ).toMatchObject({ status: 400, body: { error: 'destination_storage_name is invalid' } });
    expect(await call(sb, 'POST', '/project_repository_storage_moves', {})).toMatchObject({
      status: 400,
      body: { error: 'source_storage_name is missing' },
    });
    expect(await call(sb, 'POST', '/project_repository_storage_moves', { source_storage_name: 'mars' })).toMatchObject({
      status: 400,
      body: { error: 'source_storage_name does not have a valid value' },
    });
    expect(
      await call(sb, 'POST', '/snippet_repository_storage_moves', {
        source_storage_name: 'nfs-1',
        destination_storage_name: 'venus',
      }),
    ).toMatchObject({ status: 400, body: { error: 'destination_storage_name does not have a valid value' } });
    expect(await call(sb, 'POST', '/group_repository_storage_moves', { source_storage_name: { a: 1 } })).toMatchObject({
      status: 400,
      body: { error: 'source_storage_name is invalid' },
    });
    expect(await call(sb, 'GET', '/project_repository_storage_moves/abc')).toMatchObject({
      status: 400,
      body: { error: 'repository_storage_move_id is invalid' },
    });
    expect(await call(sb, 'GET', '/project_repository_storage_moves/99999')).toMatchObject({
      status: 404,
      body: { message: '404 Not found' },
    });
    expect(await call(sb, 'GET', '/projects/999/repository_storage_moves')).toMatchObject({
      status: 404,
      body: { message: '404 Project Not Found' },
    });
    expect(await call(sb, 'POST', '/snippets/999/repository_storage_moves', {})).toMatchObject({
      status: 404,
      body: { message: '404 Snippet Not Found' },
    });
    expect(await call(sb, 'GET', '/groups/999/repository_storage_moves')).toMatchObject({
      status: 404,
      body: { message: '404 Group Not Found' },
    });
    // The snippet move routes declare `:id` a String and look it up with Snippet.find_by.
    expect(await call(sb, 'GET', '/snippets/x/repository_storage_moves')).toMatchObject({
      status: 404,
      body: { message: '404 Snippet Not Found' },
    });
    expect(await call(sb, 'GET', '/project_repository_storage_moves?page=0')).toMatchObject({ status: 400 });
    // A move that exists but belongs to another item.
    const mine = (await call(sb, 'GET', '/projects/1/repository_storage_moves')).body[0]?.id as number;
    expect((await call(sb, 'GET', `/projects/3/repository_storage_moves/${mine}`)).status).toBe(404);
    expect(item(sb, 'project', 3).read_only).toBe(0);
  });

  it('admits administrators only', async () => {
    expect(await call(sb, 'GET', '/project_repository_storage_moves', undefined, null)).toMatchObject({
      status: 401,
      body: { message: '401 Unauthorized' },
    });
    expect(await call(sb, 'GET', '/project_repository_storage_moves', undefined, ALICE)).toMatchObject({
      status: 403,
      body: { message: '403 Forbidden' },
    });
    expect((await call(sb, 'POST', '/projects/3/repository_storage_moves', {}, ALICE)).status).toBe(403);
    expect(
      (await call(sb, 'POST', '/group_repository_storage_moves', { source_storage_name: 'nfs-1' }, null)).status,
    ).toBe(401);
    expect(item(sb, 'project', 3).read_only).toBe(0);
  });
});

describe('read-only during a move', () => {
  // Moves take a minute of sandbox time; the test moves the clock forward to finish them, so the
  // refusals never race the move on a slow machine.
  let sb: RunningSandbox;
  let shift = 0;
  const finishAll = () => {
    shift += 61_000;
    sb.state.engine.kick();
  };
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed(), moveDurationMs: 60_000, clock: realTimersAt(() => Date.now() + shift) });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('refuses a second move and every write while the item is read-only; writes before and after are kept', async () => {
    const before = item(sb, 'project', 2);
    const commit = {
      branch: 'main',
      commit_message: 'edit',
      actions: [{ action: 'update', file_path: 'README.md', content: 'x' }],
    };
    expect((await call(sb, 'POST', '/projects/2/repository/commits', commit)).status).toBe(201);
    const move = await call(sb, 'POST', '/projects/2/repository_storage_moves', { destination_storage_name: 'nfs-2' });
    expect(move.status).toBe(201);
    const again = await call(sb, 'POST', '/projects/2/repository_storage_moves', {
      destination_storage_name: 'cluster',
    });
    expect(again).toMatchObject({ status: 400, body: { message: { project: ['is read-only'] } } });
    expect(await call(sb, 'POST', '/projects/2/repository/commits', commit)).toMatchObject({
      status: 400,
      body: READ_ONLY,
    });
    finishAll();
    await waitFor(
      () => moveState(sb, 'project', move.body.id as number),
      (s) => s === 'finished',
    );
    expect((await call(sb, 'POST', '/projects/2/repository/commits', commit)).status).toBe(201);
    const after = item(sb, 'project', 2);
    expect(after).toEqual({
      storage: 'nfs-2',
      read_only: 0,
      commit_count: before.commit_count + 2,
      checksum: fakeChecksum('project', 2, before.commit_count + 2),
    });
    const commits = sb.state.db
      .prepare("SELECT count(*) n FROM commits WHERE kind = 'project' AND item_id = 2")
      .get() as { n: number };
    expect(commits.n).toBe(2);
  });

  it('refuses snippet and group wiki writes during their moves', async () => {
    const s = await call(sb, 'POST', '/snippets/2/repository_storage_moves', { destination_storage_name: 'nfs-2' });
    const g = await call(sb, 'POST', '/groups/2/repository_storage_moves', { destination_storage_name: 'nfs-2' });
    expect(await call(sb, 'POST', '/snippets/2/repository_storage_moves', {})).toMatchObject({
      status: 400,
      body: { message: { snippet: ['is read-only'] } },
    });
    expect(await call(sb, 'POST', '/groups/2/repository_storage_moves', {})).toMatchObject({
      status: 400,
      body: { message: { group: ['is read-only'] } },
    });
    expect(await call(sb, 'PUT', '/snippets/2', { content: 'new' })).toMatchObject({ status: 400, body: READ_ONLY });
    expect(await call(sb, 'POST', '/groups/2/wikis', { title: 'Home', content: 'hi' })).toMatchObject({
      status: 400,
      body: READ_ONLY,
    });
    finishAll();
    await waitFor(
      () => moveState(sb, 'snippet', s.body.id as number),
      (st) => st === 'finished',
    );
    await waitFor(
      () => moveState(sb, 'group', g.body.id as number),
      (st) => st === 'finished',
    );
    expect((await call(sb, 'PUT', '/snippets/2', { content: 'new' })).status).toBe(200);
    expect((await call(sb, 'POST', '/groups/2/wikis', { title: 'Home', content: 'hi' })).status).toBe(201);
    expect(item(sb, 'group', 2)).toMatchObject({ storage: 'nfs-2', commit_count: 11 });
  });
});

describe('bulk scheduling', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed(), moveDurationMs: 100 });
  });
  afterAll(async () => {
    await sb.close();
  });

  const onStorage = (kind: string, storage: string) =>
    (
      sb.state.db.prepare('SELECT id FROM items WHERE kind = ? AND storage = ? ORDER BY id').all(kind, storage) as {
        id: number;
      }[]
    ).map((r) => r.id);

  it('moves every item of a storage to the destination, skipping items already being moved', async () => {
    const single = await call(sb, 'POST', '/projects/4/repository_storage_moves', {
      destination_storage_name: 'nfs-2',
    });
    expect(single.status).toBe(201);
    const res = await call(sb, 'POST', '/project_repository_storage_moves', {
      source_storage_name: 'nfs-1',
      destination_storage_name: 'cluster',
    });
    expect(res).toMatchObject({ status: 202, body: { message: '202 Accepted' } });
    await waitFor(
      () => onStorage('project', 'nfs-1'),
      (ids) => ids.length === 0,
    );
    await waitFor(
      () => item(sb, 'project', 4).storage,
      (s) => s === 'nfs-2',
    );
    expect(onStorage('project', 'cluster')).toEqual([1, 2, 3, 5, 6, 7, 8]);
    const forFour = await call(sb, 'GET', '/projects/4/repository_storage_moves');
    expect(forFour.body).toHaveLength(1);
    expect(onStorage('project', 'default')).toEqual([9]);
  });

  it('picks destinations by weight when none is given', async () => {
    setMeta(sb.state.db, 'settings', { repository_storages_weighted: { 'nfs-2': 100, default: 0 }, admin_mode: false });
    const res = await call(sb, 'POST', '/snippet_repository_storage_moves', { source_storage_name: 'nfs-1' });
    expect(res.status).toBe(202);
    await waitFor(
      () => onStorage('snippet', 'nfs-2'),
      (ids) => ids.length === 4,
    );
    const moves = await call(sb, 'GET', '/snippet_repository_storage_moves');
    expect(moves.body.map((m) => m.destination_storage_name)).toEqual(['nfs-2', 'nfs-2', 'nfs-2', 'nfs-2']);
  });
});

describe('failures, stuck moves and unreachable storages', () => {
  let sb: RunningSandbox;
  let engine: MoveEngine;
  const fates: Record<string, MoveFate[]> = {
    'project:1': ['fail'],
    'snippet:1': ['cleanup_fail'],
    'group:1': ['stuck'],
  };
  beforeAll(async () => {
    sb = await startSandbox({
      seed: seed((s) => {
        s.instance.unreachable = ['nfs-2'];
      }),
      moveDurationMs: 30,
    });
    engine = injectFates(sb, fates, 30);
  });
  afterAll(async () => {
    engine.close();
    await sb.close();
  });

  it('fails with an error message, makes the item writable, and a new schedule succeeds', async () => {
    const first = await call(sb, 'POST', '/projects/1/repository_storage_moves', {
      destination_storage_name: 'cluster',
    });
    await waitFor(
      () => moveState(sb, 'project', first.body.id as number),
      (s) => s === 'failed',
    );
    const failed = await call(sb, 'GET', `/project_repository_storage_moves/${first.body.id as number}`);
    expect(failed.body.error_message).toEqual(expect.stringMatching(/\S/));
    expect(item(sb, 'project', 1)).toMatchObject({ storage: 'nfs-1', read_only: 0 });
    expect(
      (
        await call(sb, 'POST', '/projects/1/repository/commits', {
          branch: 'main',
          commit_message: 'm',
          actions: [{ action: 'create', file_path: 'f' }],
        })
      ).status,
    ).toBe(201);
    const retry = await call(sb, 'POST', '/projects/1/repository_storage_moves', {
      destination_storage_name: 'cluster',
    });
    await waitFor(
      () => moveState(sb, 'project', retry.body.id as number),
      (s) => s === 'finished',
    );
    expect(item(sb, 'project', 1)).toMatchObject({ storage: 'cluster', commit_count: 12 });
    // Terminal states never change.
    expect(await moveState(sb, 'project', first.body.id as number)).toBe('failed');
  });

  it('ends in cleanup failed with the item on the destination and writable', async () => {
    const res = await call(sb, 'POST', '/snippets/1/repository_storage_moves', { destination_storage_name: 'cluster' });
    await waitFor(
      () => moveState(sb, 'snippet', res.body.id as number),
      (s) => s === 'cleanup failed',
    );
    const rec = await call(sb, 'GET', `/snippet_repository_storage_moves/${res.body.id as number}`);
    expect(rec.body.error_message).toEqual(expect.any(String));
    expect(item(sb, 'snippet', 1)).toMatchObject({ storage: 'cluster', read_only: 0 });
    expect((await call(sb, 'PUT', '/snippets/1', { content: 'after' })).status).toBe(200);
  });

  it('keeps a stuck move in started and its item read-only', async () => {
    const res = await call(sb, 'POST', '/groups/1/repository_storage_moves', { destination_storage_name: 'cluster' });
    await waitFor(
      () => moveState(sb, 'group', res.body.id as number),
      (s) => s === 'started',
    );
    await new Promise((r) => setTimeout(r, 120));
    expect(await moveState(sb, 'group', res.body.id as number)).toBe('started');
    expect((await call(sb, 'POST', '/groups/1/repository_storage_moves', {})).body).toEqual({
      message: { group: ['is read-only'] },
    });
    expect(item(sb, 'group', 1).read_only).toBe(1);
  });

  it('fails moves to an unreachable storage with a Gitaly-like message', async () => {
    const res = await call(sb, 'POST', '/projects/5/repository_storage_moves', { destination_storage_name: 'nfs-2' });
    await waitFor(
      () => moveState(sb, 'project', res.body.id as number),
      (s) => s === 'failed',
    );
    const rec = await call(sb, 'GET', `/project_repository_storage_moves/${res.body.id as number}`);
    expect(rec.body.error_message).toMatch(/UNAVAILABLE/);
    expect((rec.body.error_message as string).length).toBeLessThanOrEqual(256);
    expect(item(sb, 'project', 5)).toMatchObject({ storage: 'nfs-1', read_only: 0 });
  });

  it('finishes a move to the same storage', async () => {
    const res = await call(sb, 'POST', '/projects/9/repository_storage_moves', { destination_storage_name: 'default' });
    await waitFor(
      () => moveState(sb, 'project', res.body.id as number),
      (s) => s === 'finished',
    );
    expect(item(sb, 'project', 9)).toMatchObject({ storage: 'default', read_only: 0 });
  });
});

describe('pagination of move lists', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed(), moveDurationMs: 0 });
    for (const id of [1, 2, 3, 4, 5])
      await call(sb, 'POST', `/projects/${id}/repository_storage_moves`, { destination_storage_name: 'cluster' });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('pages newest first with GitLab headers', async () => {
    const p1 = await call(sb, 'GET', '/project_repository_storage_moves?per_page=2');
    expect(p1.body.map((m) => (m.project as Json).id)).toEqual([5, 4]);
    expect(p1.headers.get('x-total')).toBe('5');
    expect(p1.headers.get('x-total-pages')).toBe('3');
    expect(p1.headers.get('x-next-page')).toBe('2');
    const p3 = await call(sb, 'GET', '/project_repository_storage_moves?per_page=2&page=3');
    expect(p3.body.map((m) => (m.project as Json).id)).toEqual([1]);
    expect(p3.headers.get('x-next-page')).toBe('');
  });

  it("lists one item's moves newest first", async () => {
    await waitFor(
      () => item(sb, 'project', 1).read_only,
      (r) => r === 0,
    );
    const again = await call(sb, 'POST', '/projects/1/repository_storage_moves', { destination_storage_name: 'nfs-2' });
    const list = await call(sb, 'GET', '/projects/1/repository_storage_moves');
    expect(list.body.map((m) => m.id)).toEqual([again.body.id, 1]);
    expect(list.headers.get('x-total')).toBe('2');
  });
});

describe('tiers', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox({
      seed: seed((s) => {
        s.instance.tier = 'free';
        s.instance.weights = { default: 0, 'nfs-2': 100 };
      }),
      moveDurationMs: 0,
    });
  });
  afterAll(async () => {
    await sb.close();
  });

  // ee/lib/api/group_repository_storage_moves.rb checks the admin, never the licence.
  it('answers group moves on the free tier as any admin endpoint', async () => {
    expect(await call(sb, 'GET', '/group_repository_storage_moves')).toMatchObject({ status: 200, body: [] });
    expect(await call(sb, 'GET', '/group_repository_storage_moves', undefined, null)).toMatchObject({
      status: 401,
      body: { message: '401 Unauthorized' },
    });
    expect(await call(sb, 'GET', '/group_repository_storage_moves', undefined, ALICE)).toMatchObject({
      status: 403,
      body: { message: '403 Forbidden' },
    });
    expect(await call(sb, 'GET', '/group_repository_storage_moves/999')).toMatchObject({
      status: 404,
      body: { message: '404 Not found' },
    });
    expect(await call(sb, 'GET', '/groups/1/repository_storage_moves')).toMatchObject({ status: 200, body: [] });
    expect((await call(sb, 'GET', '/project_repository_storage_moves')).status).toBe(200);
    expect((await call(sb, 'POST', '/snippets/1/repository_storage_moves', {})).status).toBe(201);
  });

  // An instance whose licence lapsed keeps its group wiki repositories; the bulk service walks
  // GroupWikiRepository.for_shard with no licence check, so they are moved like any repository.
  it('moves every group wiki of the source in bulk on the free tier (a lapsed licence keeps them)', async () => {
    expect(
      await call(sb, 'POST', '/group_repository_storage_moves', {
        source_storage_name: 'nfs-1',
        destination_storage_name: 'cluster',
      }),
    ).toMatchObject({ status: 202, body: { message: '202 Accepted' } });
    await waitFor(
      () => sb.state.engine.stats().bulkJobs,
      (n) => n === 0,
    );
    const moves = (await call(sb, 'GET', '/group_repository_storage_moves')).body;
    expect(moves.map((m) => (m.group as { id: number }).id).sort()).toEqual([1, 2, 3, 4]);
    for (const m of moves)
      expect(m).toMatchObject({ source_storage_name: 'nfs-1', destination_storage_name: 'cluster' });
    for (const m of moves)
      await waitFor(
        () => moveState(sb, 'group', m.id as number),
        (st) => st === 'finished',
      );
    expect([1, 2, 3, 4].map((id) => item(sb, 'group', id))).toEqual(
      [1, 2, 3, 4].map(() => expect.objectContaining({ storage: 'cluster', read_only: 0 })),
    );
  });

  it("moves one group from its wiki repository's storage on the free tier", async () => {
    const res = await call(sb, 'POST', '/groups/2/repository_storage_moves', { destination_storage_name: 'nfs-2' });
    expect(res).toMatchObject({
      status: 201,
      body: { state: 'scheduled', source_storage_name: 'cluster', destination_storage_name: 'nfs-2', group: { id: 2 } },
    });
    await waitFor(
      () => moveState(sb, 'group', res.body.id as number),
      (st) => st === 'finished',
    );
    expect(item(sb, 'group', 2)).toMatchObject({ storage: 'nfs-2', read_only: 0 });
  });
});

describe('restart with --db', () => {
  it('continues a move that was running when the sandbox stopped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-moves-'));
    const db = join(dir, 'state.db');
    try {
      const first = await startSandbox({ seed: seed(), db, moveDurationMs: 400, workers: 1 });
      const a = await call(first, 'POST', '/projects/1/repository_storage_moves', {
        destination_storage_name: 'cluster',
      });
      const b = await call(first, 'POST', '/snippets/1/repository_storage_moves', {
        destination_storage_name: 'cluster',
      });
      const bulk = await call(first, 'POST', '/group_repository_storage_moves', {
        source_storage_name: 'nfs-1',
        destination_storage_name: 'nfs-2',
      });
      expect(bulk.status).toBe(202);
      await waitFor(
        () => moveState(first, 'project', a.body.id as number),
        (s) => s === 'started',
      );
      await first.close();
      const second = await startSandbox({ seed: seed(), db, moveDurationMs: 20, workers: 10 });
      try {
        expect(await moveState(second, 'project', a.body.id as number)).toMatch(/started|replicated|finished/);
        await waitFor(
          () => moveState(second, 'project', a.body.id as number),
          (s) => s === 'finished',
        );
        await waitFor(
          () => moveState(second, 'snippet', b.body.id as number),
          (s) => s === 'finished',
        );
        await waitFor(
          () =>
            second.state.db
              .prepare("SELECT count(*) n FROM items WHERE kind = 'group' AND storage = 'nfs-2' AND read_only = 0")
              .get() as { n: number },
          (r) => r.n === 4,
        );
        expect(item(second, 'project', 1)).toMatchObject({ storage: 'cluster', read_only: 0, commit_count: 11 });
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
