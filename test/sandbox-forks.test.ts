// Fork networks and object pools in the sandbox. Seeds name networks (generated
// or listed with forked_from); project entities carry forked_from_project where GitLab renders it;
// GET /projects/:id/forks lists direct forks; pools live per network and storage, count in the
// storage's used space, and follow moves as the seeded release does (pool replication on move from
// 16.3 behind replicate_object_pool_on_move, default on in 16.6, flag gone in 16.7).
import { startManualSandbox } from './support/manual-sandbox.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { SeedError, loadSeed, parseSeed } from '../src/sandbox/seed.js';
import { SANDBOX_ROOT_TOKEN, callSandbox } from './support/sandbox-call.js';
import { filesystemValue } from './support/sandbox-exporters.js';
import { realTimersAt } from './support/fake-clock.js';

const MIB = 1024 * 1024;
const MOVE_MS = 1000;
const ALICE = 'glpat-sandbox-alice-api-00000006';

interface Pool {
  network: number;
  storage: string;
  bytes: number;
  members: number[];
}

/**
 * Network 1 (public root 1 on nfs-1, 100 MiB): 2 and 3 fork 1, 4 forks 2 (a fork of a fork, so in
 * no pool); 5 forks 1 but lives on nfs-2. Network 10 has a private root (no pool). Project 20 is in
 * no network.
 */
function seed(change: (s: Seed) => void = () => {}): Seed {
  const s = structuredClone(loadSeed());
  s.instance.storage_capacity = { 'nfs-1': 1024 * MIB, 'nfs-2': 1024 * MIB };
  s.inventory = {
    projects: [
      { id: 1, storage: 'nfs-1', size_mb: 100, visibility: 'public' },
      { id: 2, storage: 'nfs-1', size_mb: 2, visibility: 'public', forked_from: 1 },
      { id: 3, storage: 'nfs-1', size_mb: 3, visibility: 'private', forked_from: 'group-1/project-1' },
      { id: 4, storage: 'nfs-1', size_mb: 4, visibility: 'internal', forked_from: 2 },
      { id: 5, storage: 'nfs-2', size_mb: 5, visibility: 'public', forked_from: 1 },
      { id: 10, storage: 'nfs-1', size_mb: 50, visibility: 'private' },
      { id: 11, storage: 'nfs-1', size_mb: 1, visibility: 'private', forked_from: 10 },
      { id: 20, storage: 'nfs-1', size_mb: 7, visibility: 'public' },
    ],
  };
  change(s);
  return s;
}

/** A sandbox on a manual clock (test/support/manual-sandbox.ts), closed after the test. */
const start = (s: Seed = seed()) => startManualSandbox(s, MOVE_MS);

async function pools(
  sb: RunningSandbox,
  token: string | null = SANDBOX_ROOT_TOKEN,
): Promise<{ status: number; body: Pool[] }> {
  const res = await fetch(`${sb.url}/-/sandbox/pools`, { headers: token ? { 'private-token': token } : {} });
  return { status: res.status, body: (await res.json()) as Pool[] };
}

async function sandboxItem(sb: RunningSandbox, id: number) {
  const res = await fetch(`${sb.url}/-/sandbox/items/project/${id}`, {
    headers: { 'private-token': SANDBOX_ROOT_TOKEN },
  });
  return (await res.json()) as { storage: string; size_mb: number };
}

const avail = (sb: RunningSandbox, storage: string) => filesystemValue(sb, 'node_filesystem_avail_bytes', storage);

/** Moves project `id` to `destination` and runs the move to its end. */
async function moveAndFinish(
  sb: RunningSandbox,
  advance: (ms: number) => Promise<void>,
  id: number,
  destination: string,
) {
  const r = await callSandbox(sb, 'POST', `/projects/${id}/repository_storage_moves`, {
    destination_storage_name: destination,
  });
  expect(r.status).toBe(201);
  await advance(10);
  await advance(MOVE_MS);
  const done = await callSandbox(sb, 'GET', `/project_repository_storage_moves/${r.body.id as number}`);
  expect(done.body.state).toBe('finished');
}

const byId = (list: Record<string, unknown>[]) => new Map(list.map((p) => [p.id as number, p]));

describe('seed: fork networks', () => {
  const base = 'instance: { storages: [default, nfs-1] }\n';

  it('generates count networks of a root and 1..max_forks forks, the same for the same random_seed', async () => {
    const s = seed((x) => {
      x.inventory = parseSeed(
        `${base}inventory:\n  generate: { projects: 40, random_seed: 7, fork_networks: { count: 3, max_forks: 4 } }\n`,
      ).inventory;
    });
    const forks = async () => {
      const { sb } = await start(s);
      const all = await callSandbox(sb, 'GET', '/projects?per_page=100');
      return (all.body as Record<string, unknown>[])
        .filter((p) => p.forked_from_project)
        .map((p) => [p.id, (p.forked_from_project as { id: number }).id])
        .sort();
    };
    const first = await forks();
    expect(first.length).toBeGreaterThanOrEqual(3);
    expect(first.length).toBeLessThanOrEqual(12);
    expect(await forks()).toEqual(first);
  });

  it('names the seed field and its place when networks need more projects than are generated', () => {
    const text = `${base}inventory:\n  generate:\n    projects: 5\n    fork_networks: { count: 2, max_forks: 3 }\n`;
    expect(() => parseSeed(text, 'seed.yaml')).toThrow(SeedError);
    try {
      parseSeed(text, 'seed.yaml');
    } catch (err) {
      expect((err as SeedError).problems).toEqual([
        'seed.yaml:5:20: inventory.generate.fork_networks: 2 networks of up to 4 projects need up to 8 generated projects (generate.projects is 5)',
      ]);
    }
  });

  it('refuses forked_from naming an unknown project, the project itself, or a cycle', () => {
    const text = `${base}inventory:
  projects:
    - { id: 1, storage: nfs-1, forked_from: 9 }
    - { id: 2, storage: nfs-1, forked_from: 2 }
    - { id: 3, storage: nfs-1, forked_from: group-1/project-4 }
    - { id: 4, storage: nfs-1, forked_from: 3 }
    - { id: 5, storage: nfs-1, forked_from: nowhere/project-5 }
    - { id: 6, storage: nfs-1, forked_from: [1] }
`;
    let problems: string[] = [];
    try {
      parseSeed(text, 'seed.yaml');
    } catch (err) {
      problems = (err as SeedError).problems;
    }
    expect(problems).toEqual([
      'seed.yaml:4:45: inventory.projects.0.forked_from: unknown project 9',
      'seed.yaml:5:45: inventory.projects.1.forked_from: a project cannot be a fork of itself',
      'seed.yaml:6:45: inventory.projects.2.forked_from: project 3 would be a fork of its own fork',
      'seed.yaml:7:45: inventory.projects.3.forked_from: project 4 would be a fork of its own fork',
      'seed.yaml:8:45: inventory.projects.4.forked_from: unknown project "nowhere/project-5"',
      'seed.yaml:9:45: inventory.projects.5.forked_from: must be a project id or a full path such as group-1/project-3',
    ]);
  });
});

describe('seed: a listed fork closing a cycle through a generated network', () => {
  it('is refused when the sandbox starts, naming the projects', async () => {
    // Generated with random_seed 7: find a generated fork and its parent, then make the parent a fork of the fork.
    const s = seed((x) => {
      x.inventory = {
        generate: {
          ...parseSeed(
            'inventory:\n  generate: { projects: 40, random_seed: 7, fork_networks: { count: 1, max_forks: 1 } }\n',
          ).inventory.generate!,
        },
      };
    });
    const { sb } = await start(s);
    const fork = ((await callSandbox(sb, 'GET', '/projects?per_page=100')).body as Record<string, unknown>[]).find(
      (p) => p.forked_from_project,
    )!;
    const parent = (fork.forked_from_project as { id: number }).id;
    const cyclic = structuredClone(s);
    cyclic.inventory.projects = [{ id: parent, storage: 'nfs-1', forked_from: fork.id as number }];
    await expect(startSandbox({ seed: cyclic })).rejects.toThrow(
      `inventory.projects.0.forked_from: project ${fork.id as number} would be a fork of its own fork`,
    );
  });
});

describe('project entities: forked_from_project and forks_count', () => {
  it("an administrator's storage listing (the orchestrator's request) carries forked_from_project; simple=true does not", async () => {
    const { sb } = await start();
    const query =
      'repository_storage=nfs-1&statistics=true&include_hidden=true&include_pending_delete=true&pagination=keyset&order_by=id&sort=asc&per_page=100';
    const list = byId((await callSandbox(sb, 'GET', `/projects?${query}`)).body);
    const fork = list.get(4) as Record<string, unknown>;
    const parent = fork.forked_from_project as Record<string, unknown>;
    expect(parent.id).toBe(2);
    expect(parent.path_with_namespace).toBe('group-1/project-2');
    expect(parent.forks_count).toBe(1);
    // The nested entity is BasicProjectDetails: no visibility; an administrator sees its storage
    // on releases whose BasicProjectDetails has it (17.11 here; test/sandbox-releases.test.ts).
    expect(parent.repository_storage).toBe('nfs-1');
    expect(parent).not.toHaveProperty('visibility');
    expect(list.get(1)).not.toHaveProperty('forked_from_project');
    expect(list.get(1)?.forks_count).toBe(3);
    expect(list.get(20)?.forks_count).toBe(0);
    expect((list.get(2)?.forked_from_project as { id: number }).id).toBe(1);
    const simple = byId((await callSandbox(sb, 'GET', `/projects?${query}&simple=true`)).body);
    expect(simple.get(4)).not.toHaveProperty('forked_from_project');
    expect(simple.get(1)?.forks_count).toBe(3);
  });

  it('shows the parent only to callers who may read it, and never in an anonymous listing', async () => {
    const { sb } = await start(
      seed((s) => {
        s.inventory.projects!.push({ id: 30, storage: 'nfs-1', visibility: 'public', forked_from: 3 });
      }),
    );
    const asAlice = byId((await callSandbox(sb, 'GET', '/projects?per_page=100', undefined, ALICE)).body);
    // Project 3 is private and not Alice's: she sees the fork, not where it came from.
    expect(asAlice.get(30)).not.toHaveProperty('forked_from_project');
    expect((asAlice.get(4)?.forked_from_project as { id: number }).id).toBe(2);
    const anonymous = byId((await callSandbox(sb, 'GET', '/projects?per_page=100', undefined, null)).body);
    expect(anonymous.get(2)).toBeDefined();
    expect(anonymous.get(2)).not.toHaveProperty('forked_from_project');
    // GET /projects/:id renders ProjectDetails for an anonymous caller: the public parent is shown.
    const single = await callSandbox(sb, 'GET', '/projects/2', undefined, null);
    expect((single.body.forked_from_project as { id: number }).id).toBe(1);
    const admin = await callSandbox(sb, 'GET', '/projects/30');
    expect((admin.body.forked_from_project as { id: number }).id).toBe(3);
    expect((await callSandbox(sb, 'GET', '/projects/30', undefined, ALICE)).body).not.toHaveProperty(
      'forked_from_project',
    );
  });
});

describe('GET /projects/:id/forks', () => {
  it("lists the direct forks with GitLab's pagination, by id or full path", async () => {
    const { sb } = await start();
    const page1 = await callSandbox(sb, 'GET', '/projects/1/forks?per_page=2&order_by=id&sort=asc');
    expect(page1.status).toBe(200);
    expect(page1.body.map((p) => p.id)).toEqual([2, 3]);
    expect(page1.headers.get('x-total')).toBe('3');
    expect(page1.headers.get('x-next-page')).toBe('2');
    const page2 = await callSandbox(
      sb,
      'GET',
      '/projects/group-1%2Fproject-1/forks?per_page=2&page=2&order_by=id&sort=asc',
    );
    expect(page2.body.map((p) => p.id)).toEqual([5]);
    const keyset = await callSandbox(sb, 'GET', '/projects/1/forks?pagination=keyset&order_by=id&sort=asc&per_page=2');
    expect(keyset.body.map((p) => p.id)).toEqual([2, 3]);
    expect(keyset.headers.get('link')).toContain('id_after=3');
    // Forks of forks are not the root's forks.
    expect((await callSandbox(sb, 'GET', '/projects/2/forks')).body.map((p) => p.id)).toEqual([4]);
    expect((await callSandbox(sb, 'GET', '/projects/20/forks')).body).toEqual([]);
  });

  it('hides forks the caller cannot see and answers 404 for a project they cannot see', async () => {
    const { sb } = await start();
    expect(
      (await callSandbox(sb, 'GET', '/projects/1/forks?order_by=id&sort=asc', undefined, null)).body.map((p) => p.id),
    ).toEqual([2, 5]);
    const hidden = await callSandbox(sb, 'GET', '/projects/10/forks', undefined, ALICE);
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ message: '404 Project Not Found' });
    expect((await callSandbox(sb, 'GET', '/projects/999/forks')).status).toBe(404);
  });
});

describe('object pools', () => {
  it('seeds a pool per network and storage from a public root, none for a private root; only administrators see them', async () => {
    const { sb } = await start();
    expect((await pools(sb)).body).toEqual([
      { network: 1, storage: 'nfs-1', bytes: 100 * MIB, members: [1, 2, 3] },
      { network: 1, storage: 'nfs-2', bytes: 100 * MIB, members: [5] },
    ]);
    expect((await pools(sb, ALICE)).status).toBe(403);
    expect((await pools(sb, null)).status).toBe(401);
    // Used space: items 100+2+3+4+50+1+7 MiB and the pool's 100 on nfs-1; 5 and a pool copy on nfs-2.
    expect(await avail(sb, 'nfs-1')).toBe((1024 - 167 - 100) * MIB);
    expect(await avail(sb, 'nfs-2')).toBe((1024 - 5 - 100) * MIB);
  });

  it('before 16.3 a fork on another storage than its root has no pool (it was moved without one)', async () => {
    const { sb } = await start(
      seed((s) => {
        s.instance.version = '16.2.0';
      }),
    );
    expect((await pools(sb)).body).toEqual([{ network: 1, storage: 'nfs-1', bytes: 100 * MIB, members: [1, 2, 3] }]);
  });

  it('new releases: a member arriving where its network has no pool seeds a copy; the last member to leave removes the pool', async () => {
    const { sb, advance } = await start(
      seed((s) => {
        s.instance.storages.push('nfs-3');
        s.instance.storage_capacity!['nfs-3'] = 1024 * MIB;
      }),
    );
    await moveAndFinish(sb, advance, 2, 'nfs-3');
    expect((await pools(sb)).body).toEqual([
      { network: 1, storage: 'nfs-1', bytes: 100 * MIB, members: [1, 3] },
      { network: 1, storage: 'nfs-2', bytes: 100 * MIB, members: [5] },
      { network: 1, storage: 'nfs-3', bytes: 100 * MIB, members: [2] },
    ]);
    // The member's copy holds its pool's objects too (Gitaly's snapshot adds the alternates),
    // beside the pool copy on the destination.
    expect((await sandboxItem(sb, 2)).size_mb).toBe(102);
    expect(await avail(sb, 'nfs-3')).toBe((1024 - 102 - 100) * MIB);
    // 5 joins the pool already on nfs-1; nfs-2 had no other member, so its pool goes.
    await moveAndFinish(sb, advance, 5, 'nfs-1');
    expect((await pools(sb)).body).toEqual([
      { network: 1, storage: 'nfs-1', bytes: 100 * MIB, members: [1, 3, 5] },
      { network: 1, storage: 'nfs-3', bytes: 100 * MIB, members: [2] },
    ]);
    expect(await avail(sb, 'nfs-2')).toBe(1024 * MIB);
    for (const id of [1, 3]) await moveAndFinish(sb, advance, id, 'nfs-3');
    expect((await pools(sb)).body).toEqual([
      { network: 1, storage: 'nfs-1', bytes: 100 * MIB, members: [5] },
      { network: 1, storage: 'nfs-3', bytes: 100 * MIB, members: [1, 2, 3] },
    ]);
    await moveAndFinish(sb, advance, 5, 'nfs-3');
    expect((await pools(sb)).body).toEqual([{ network: 1, storage: 'nfs-3', bytes: 100 * MIB, members: [1, 2, 3, 5] }]);
    // Left on nfs-1: 4 (a fork of a fork, never pooled), 10, 11 and 20.
    expect(await avail(sb, 'nfs-1')).toBe((1024 - 62) * MIB);
  });

  it("before 16.3 a moved member loses its pool link and carries the pool's objects; the last to leave removes the pool", async () => {
    const { sb, advance } = await start(
      seed((s) => {
        s.instance.version = '16.2.0';
      }),
    );
    await moveAndFinish(sb, advance, 2, 'nfs-2');
    expect((await pools(sb)).body).toEqual([{ network: 1, storage: 'nfs-1', bytes: 100 * MIB, members: [1, 3] }]);
    expect(await sandboxItem(sb, 2)).toMatchObject({ storage: 'nfs-2', size_mb: 102 });
    expect(await avail(sb, 'nfs-2')).toBe((1024 - 5 - 102) * MIB);
    const stats = await callSandbox(sb, 'GET', '/projects/2?statistics=true');
    expect((stats.body.statistics as { repository_size: number }).repository_size).toBe(102 * MIB);
    for (const id of [1, 3]) await moveAndFinish(sb, advance, id, 'nfs-2');
    expect((await pools(sb)).body).toEqual([]);
    expect(await avail(sb, 'nfs-1')).toBe((1024 - 62) * MIB);
    // The network stays a network: only deduplication is lost.
    expect(((await callSandbox(sb, 'GET', '/projects/2')).body.forked_from_project as { id: number }).id).toBe(1);
  });

  it('keeps pools and their room across a restart on the same database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-forks-'));
    try {
      const db = join(dir, 'sandbox.db');
      let now = Date.parse('2026-06-01T00:00:00Z');
      const first = await startSandbox({ seed: seed(), db, moveDurationMs: MOVE_MS, clock: realTimersAt(() => now) });
      await moveAndFinish(
        first,
        async (ms) => {
          now += ms;
          first.state.engine.kick();
          for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
        },
        5,
        'nfs-1',
      );
      const before = {
        pools: (await pools(first)).body,
        nfs1: await avail(first, 'nfs-1'),
        nfs2: await avail(first, 'nfs-2'),
      };
      await first.close();
      const again = await startSandbox({ seed: seed(), db });
      onTestFinished(() => again.close());
      expect({
        pools: (await pools(again)).body,
        nfs1: await avail(again, 'nfs-1'),
        nfs2: await avail(again, 'nfs-2'),
      }).toEqual(before);
      expect(before.pools).toEqual([{ network: 1, storage: 'nfs-1', bytes: 100 * MIB, members: [1, 2, 3, 5] }]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('16.3 to 16.5 follow the feature flag (default off); 16.6 turns it on by default', async () => {
    const on = await start(
      seed((s) => {
        s.instance.version = '16.4.0';
        s.instance.feature_flags = { replicate_object_pool_on_move: true };
      }),
    );
    await moveAndFinish(on.sb, on.advance, 2, 'nfs-2');
    expect((await pools(on.sb)).body.find((p) => p.storage === 'nfs-2')?.members).toEqual([2, 5]);
    const off = await start(
      seed((s) => {
        s.instance.version = '16.5.1';
      }),
    );
    expect((await pools(off.sb)).body.map((p) => p.storage)).toEqual(['nfs-1']);
    await moveAndFinish(off.sb, off.advance, 2, 'nfs-2');
    expect((await pools(off.sb)).body).toEqual([{ network: 1, storage: 'nfs-1', bytes: 100 * MIB, members: [1, 3] }]);
    const later = await start(
      seed((s) => {
        s.instance.version = '16.6.0';
      }),
    );
    // Turned off through the Features API at run time, 16.6 behaves as before.
    expect(
      (await callSandbox(later.sb, 'POST', '/features/replicate_object_pool_on_move', { value: false })).status,
    ).toBe(201);
    await moveAndFinish(later.sb, later.advance, 2, 'nfs-2');
    expect((await sandboxItem(later.sb, 2)).size_mb).toBe(102);
    expect((await pools(later.sb)).body.find((p) => p.storage === 'nfs-2')?.members).toEqual([5]);
  });
});
