// Releases and tiers in the sandbox (docs/gitlab-behaviour.md §3.1, §3.5, §3.6, §1.5): what a
// move record, the move worker, Gitaly's messages, object pools and the project entity look like
// on the GitLab release the seed names. Judged from the sandbox's own API and records.
import { describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { startManualSandbox } from './support/manual-sandbox.js';
import { callSandbox } from './support/sandbox-call.js';
import { SANDBOX_ROOT_TOKEN } from './support/sandbox-call.js';

const MIB = 1024 * 1024;
const MOVE_MS = 1000;
const ALICE = 'glpat-sandbox-alice-api-00000006';

/**
 * Project 1 (public, 100 MiB, on nfs-1) is a network's root: 2 forks it, 3 forks 2 (a fork of a
 * fork). 4 stands alone. On `version`.
 */
function seed(version: string, change: (s: Seed) => void = () => {}): Seed {
  const s = structuredClone(loadSeed());
  s.instance.version = version;
  s.inventory = {
    projects: [
      { id: 1, storage: 'nfs-1', size_mb: 100, visibility: 'public' },
      { id: 2, storage: 'nfs-1', size_mb: 2, visibility: 'public', forked_from: 1 },
      { id: 3, storage: 'nfs-1', size_mb: 3, visibility: 'public', forked_from: 2 },
      { id: 4, storage: 'nfs-1', size_mb: 4, visibility: 'public' },
    ],
    groups: [{ id: 1, storage: 'nfs-1' }],
  };
  change(s);
  return s;
}

async function schedule(sb: RunningSandbox, id: number, destination: string) {
  const r = await callSandbox(sb, 'POST', `/projects/${id}/repository_storage_moves`, {
    destination_storage_name: destination,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id as number;
}

const move = async (sb: RunningSandbox, id: number) =>
  (await callSandbox(sb, 'GET', `/project_repository_storage_moves/${id}`)).body;

/** What the move's Sidekiq job logged (sandbox-only). */
async function logged(sb: RunningSandbox, id: number): Promise<{ state: string; exception: string | null }> {
  const res = await fetch(`${sb.url}/-/sandbox/moves/project/${id}`, {
    headers: { 'private-token': SANDBOX_ROOT_TOKEN },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { state: string; exception: string | null };
}

async function pools(sb: RunningSandbox) {
  const res = await fetch(`${sb.url}/-/sandbox/pools`, { headers: { 'private-token': SANDBOX_ROOT_TOKEN } });
  return (await res.json()) as { network: number; storage: string; members: number[] }[];
}

const TAR_16_1 =
  '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar: exit status 2.';

describe('error_message on move records', () => {
  it('is absent before 16.7: the reason reaches only the Sidekiq log', async () => {
    for (const version of ['16.0.0', '16.5.1', '16.6.0']) {
      const { sb, advance } = await startManualSandbox(seed(version), MOVE_MS, { moveFailures: { checksum: 1 } });
      const id = await schedule(sb, 4, 'nfs-2');
      await advance(10);
      await advance(MOVE_MS);
      const record = await move(sb, id);
      expect(record.state, version).toBe('failed');
      expect(record, version).not.toHaveProperty('error_message');
      // Lists render the same entity.
      const list = (await callSandbox(sb, 'GET', '/projects/4/repository_storage_moves')).body;
      expect(list[0], version).not.toHaveProperty('error_message');
      expect((await logged(sb, id)).exception).toMatch(/^Failed to verify project repository checksum from \w+ to 0+$/);
    }
  });

  it('is there from 16.7, truncated as ActiveSupport truncates: 253 characters and ...', async () => {
    const long = `gitaly-${'x'.repeat(120)}`;
    const { sb, advance } = await startManualSandbox(
      seed('16.7.0', (s) => {
        s.instance.storages.push(long);
        s.instance.unreachable = [long];
      }),
      MOVE_MS,
    );
    const id = await schedule(sb, 4, long);
    await advance(10);
    await advance(MOVE_MS);
    const record = await move(sb, id);
    const full = (await logged(sb, id)).exception as string;
    expect(full.length).toBeGreaterThan(256);
    expect(record.state).toBe('failed');
    expect(record.error_message).toBe(`${full.slice(0, 253)}...`);
    expect(record.error_message as string).toHaveLength(256);
  });

  it('is null for a move that failed without a reason (16.7+)', async () => {
    const { sb, advance } = await startManualSandbox(seed('17.11.0'), MOVE_MS, { moveFailures: { 'lease-held': 1 } });
    const id = await schedule(sb, 4, 'nfs-2');
    await advance(10);
    await advance(MOVE_MS);
    expect(await move(sb, id)).toMatchObject({ state: 'failed', error_message: null });
  });
});

describe("Gitaly's tar failure, per release", () => {
  it("16.0 quotes tar's stderr in the text; 16.1 and later keep it out", async () => {
    const old = await startManualSandbox(seed('16.0.0'), MOVE_MS, { moveFailures: { 'no-space': 1 } });
    const a = await schedule(old.sb, 4, 'nfs-2');
    await old.advance(10);
    await old.advance(MOVE_MS);
    const text = (await logged(old.sb, a)).exception as string;
    expect(text).toMatch(
      /^13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar, stderr: "tar: .*No space left on device\\ntar: Exiting with failure status due to previous errors\\n", err: exit status 2\.$/,
    );
    for (const version of ['16.1.0', '17.11.0']) {
      const { sb, advance } = await startManualSandbox(seed(version), MOVE_MS, { moveFailures: { 'no-space': 1 } });
      const id = await schedule(sb, 4, 'nfs-2');
      await advance(10);
      await advance(MOVE_MS);
      expect((await logged(sb, id)).exception, version).toBe(TAR_16_1);
    }
    const { sb, advance } = await startManualSandbox(seed('17.11.0'), MOVE_MS, { moveFailures: { 'no-space': 1 } });
    const id = await schedule(sb, 4, 'nfs-2');
    await advance(10);
    await advance(MOVE_MS);
    expect((await move(sb, id)).error_message).toBe(TAR_16_1);
  });

  it('a snapshot stream cut short ends with the same text from 16.1, and the 6-hour timeout as 4:Deadline Exceeded.', async () => {
    const cut = await startManualSandbox(seed('17.11.0'), MOVE_MS, { moveFailures: { 'tar-failed': 1 } });
    const a = await schedule(cut.sb, 4, 'nfs-2');
    await cut.advance(10);
    await cut.advance(MOVE_MS);
    expect(await move(cut.sb, a)).toMatchObject({ state: 'failed', error_message: TAR_16_1 });
    const late = await startManualSandbox(seed('17.11.0'), MOVE_MS, { moveFailures: { timeout: 1 } });
    const b = await schedule(late.sb, 4, 'nfs-2');
    await late.advance(10);
    await late.advance(MOVE_MS);
    expect(await move(late.sb, b)).toMatchObject({ state: 'failed', error_message: '4:Deadline Exceeded.' });
  });

  it('names a group move\'s checksum failure after its repository type, "wiki"', async () => {
    const { sb, advance } = await startManualSandbox(seed('17.11.0'), MOVE_MS, { moveFailures: { checksum: 1 } });
    const r = await callSandbox(sb, 'POST', '/groups/1/repository_storage_moves', {
      destination_storage_name: 'nfs-2',
    });
    expect(r.status).toBe(201);
    await advance(10);
    await advance(MOVE_MS);
    const record = (await callSandbox(sb, 'GET', `/group_repository_storage_moves/${r.body.id as number}`)).body;
    expect(record.error_message).toMatch(/^Failed to verify wiki repository checksum from \w+ to 0+$/);
  });
});

describe("the move worker's lease", () => {
  /** Moves 4 to nfs-2, then, during that move's cleanup, schedules its move on to cluster. */
  async function secondMoveDuringCleanup(version: string) {
    const { sb, advance } = await startManualSandbox(seed(version), MOVE_MS);
    const first = await schedule(sb, 4, 'nfs-2');
    await advance(10);
    await advance(MOVE_MS * 0.95);
    expect((await move(sb, first)).state).toBe('replicated');
    const second = await schedule(sb, 4, 'cluster');
    await advance(10);
    const early = await move(sb, second);
    await advance(MOVE_MS * 2);
    return { sb, early, first: await move(sb, first), second: await move(sb, second) };
  }

  it('from 16.6 refuses a second job for the same container (failed, no message, read-only left)', async () => {
    const { sb, early, first } = await secondMoveDuringCleanup('16.6.0');
    expect(early.state).toBe('failed');
    expect(first.state).toBe('finished');
    const item = await fetch(`${sb.url}/-/sandbox/items/project/4`, {
      headers: { 'private-token': SANDBOX_ROOT_TOKEN },
    });
    expect(await item.json()).toMatchObject({ storage: 'nfs-2', read_only: true });
  });

  it('before 16.6 runs it: both moves finish and the item ends where the second sent it', async () => {
    const { sb, first, second } = await secondMoveDuringCleanup('16.5.0');
    expect([first.state, second.state]).toEqual(['finished', 'finished']);
    const item = await fetch(`${sb.url}/-/sandbox/items/project/4`, {
      headers: { 'private-token': SANDBOX_ROOT_TOKEN },
    });
    expect(await item.json()).toMatchObject({ storage: 'cluster', read_only: false });
  });

  it('before 16.6 a rerun of an interrupted job does nothing: the move stays started, the item read-only', async () => {
    const { sb, advance } = await startManualSandbox(seed('16.5.0'), MOVE_MS, { moveFailures: { 'lease-held': 1 } });
    const id = await schedule(sb, 4, 'nfs-2');
    await advance(10);
    await advance(MOVE_MS * 3);
    expect((await move(sb, id)).state).toBe('started');
    const item = await fetch(`${sb.url}/-/sandbox/items/project/4`, {
      headers: { 'private-token': SANDBOX_ROOT_TOKEN },
    });
    expect(await item.json()).toMatchObject({ storage: 'nfs-1', read_only: true });
  });
});

describe('a job killed after the switch, per release', () => {
  it('from 16.6 the rerun fails the move; before, it does nothing: started, read-only, on the destination', async () => {
    for (const [version, state, readOnly] of [
      ['17.11.0', 'failed', false],
      ['16.5.0', 'started', true],
    ] as const) {
      const { sb, advance } = await startManualSandbox(seed(version), MOVE_MS, { failAfterSwitchRate: 1 });
      const id = await schedule(sb, 4, 'nfs-2');
      await advance(10);
      await advance(MOVE_MS * 3);
      expect((await move(sb, id)).state, version).toBe(state);
      const item = await fetch(`${sb.url}/-/sandbox/items/project/4`, {
        headers: { 'private-token': SANDBOX_ROOT_TOKEN },
      });
      expect(await item.json(), version).toMatchObject({
        storage: 'nfs-2',
        read_only: readOnly,
        stale_copies: ['nfs-1'],
      });
    }
  });
});

describe('object pools and the bytes a moved member lands with', () => {
  it('links only the root and its direct forks, on every release', async () => {
    for (const version of ['15.11.0', '16.2.0', '16.6.0', '17.11.0']) {
      const { sb } = await startManualSandbox(seed(version), MOVE_MS);
      expect(await pools(sb), version).toEqual([{ network: 1, storage: 'nfs-1', bytes: 100 * MIB, members: [1, 2] }]);
    }
  });

  it("counts the pool's objects in a moved member's copy, beside the pool copy: a destination with room for less fails the move", async () => {
    // nfs-2 has 150 MiB: member 2 (2 MiB) and a pool copy (100 MiB) would fit, but the member's
    // copy carries the pool's objects too (202 MiB in all).
    const { sb, advance } = await startManualSandbox(
      seed('17.11.0', (s) => {
        s.instance.storage_capacity = { 'nfs-2': 150 * MIB };
      }),
      MOVE_MS,
    );
    const id = await schedule(sb, 2, 'nfs-2');
    await advance(10);
    await advance(MOVE_MS);
    expect(await move(sb, id)).toMatchObject({ state: 'failed', error_message: TAR_16_1 });
    // With room, the member lands with 102 MiB beside a 100 MiB pool copy.
    const roomy = await startManualSandbox(
      seed('17.11.0', (s) => {
        s.instance.storage_capacity = { 'nfs-2': 250 * MIB };
      }),
      MOVE_MS,
    );
    const ok = await schedule(roomy.sb, 2, 'nfs-2');
    await roomy.advance(10);
    await roomy.advance(MOVE_MS);
    expect((await move(roomy.sb, ok)).state).toBe('finished');
    const gauge = roomy.sb.state.engine.load().storages.find((g) => g.storage === 'nfs-2');
    expect(gauge?.usedBytes).toBe(202 * MIB);
  });

  it('moves a fork of a fork alone: its copy is its own bytes', async () => {
    const { sb, advance } = await startManualSandbox(
      seed('17.11.0', (s) => {
        s.instance.storage_capacity = { 'nfs-2': 1024 * MIB };
      }),
      MOVE_MS,
    );
    const id = await schedule(sb, 3, 'nfs-2');
    await advance(10);
    await advance(MOVE_MS);
    expect((await move(sb, id)).state).toBe('finished');
    expect(sb.state.engine.load().storages.find((g) => g.storage === 'nfs-2')?.usedBytes).toBe(3 * MIB);
    expect((await pools(sb)).map((p) => p.storage)).toEqual(['nfs-1']);
  });
});

describe('project entities per release and caller', () => {
  it("shows administrators the nested parent's repository_storage from 16.5 (taken boundary), never others", async () => {
    const before = await startManualSandbox(seed('16.4.0'), MOVE_MS);
    const p4 = (await callSandbox(before.sb, 'GET', '/projects/2')).body;
    expect(p4.forked_from_project).not.toHaveProperty('repository_storage');
    const after = await startManualSandbox(seed('16.5.0'), MOVE_MS);
    expect((await callSandbox(after.sb, 'GET', '/projects/2')).body.forked_from_project).toMatchObject({
      id: 1,
      repository_storage: 'nfs-1',
    });
    const listed = (await callSandbox(after.sb, 'GET', '/projects?repository_storage=nfs-1&per_page=100')).body;
    expect(listed.find((p) => p.id === 2)?.forked_from_project).toMatchObject({ repository_storage: 'nfs-1' });
    const asAlice = (await callSandbox(after.sb, 'GET', '/projects/2', undefined, ALICE)).body;
    expect(asAlice.forked_from_project).toMatchObject({ id: 1 });
    expect(asAlice.forked_from_project).not.toHaveProperty('repository_storage');
  });

  it('leaves forks_count, readme_url and default_branch out, not 0, for a caller without read_code', async () => {
    const { sb } = await startManualSandbox(
      seed('17.11.0', (s) => {
        const projects = s.inventory.projects!;
        projects[0] = { ...projects[0]!, repository_access_level: 'private' };
        projects[3] = { ...projects[3]!, repository_access_level: 'disabled' };
      }),
      MOVE_MS,
    );
    // A disabled repository feature takes read_code from everyone, administrators included.
    const admin4 = (await callSandbox(sb, 'GET', '/projects/4')).body;
    for (const f of ['forks_count', 'readme_url', 'default_branch']) expect(admin4).not.toHaveProperty(f);
    // Members-only: administrators keep it, Alice (no member) loses it, in the entity and nested.
    expect((await callSandbox(sb, 'GET', '/projects/1')).body.forks_count).toBe(1);
    const alice1 = (await callSandbox(sb, 'GET', '/projects/1', undefined, ALICE)).body;
    expect(alice1.id).toBe(1);
    expect(alice1).not.toHaveProperty('forks_count');
    const alice2 = (await callSandbox(sb, 'GET', '/projects/2', undefined, ALICE)).body;
    expect(alice2.forks_count).toBe(1);
    expect(alice2.forked_from_project).toMatchObject({ id: 1 });
    expect(alice2.forked_from_project).not.toHaveProperty('forks_count');
    const listed = (await callSandbox(sb, 'GET', '/projects?per_page=100', undefined, ALICE)).body;
    expect(listed.find((p) => p.id === 1)).not.toHaveProperty('forks_count');
    expect(listed.find((p) => p.id === 2)?.forks_count).toBe(1);
    const adminList = (await callSandbox(sb, 'GET', '/projects?per_page=100')).body;
    expect(adminList.find((p) => p.id === 4)).not.toHaveProperty('forks_count');
    expect(adminList.find((p) => p.id === 1)?.forks_count).toBe(1);
    // Its repository members-only, root 1 is not poolable: no pool.
    expect(await pools(sb)).toEqual([]);
  });
});
