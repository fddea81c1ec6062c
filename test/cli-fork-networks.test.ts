/**
 * Fork networks in the orchestrator, judged from the sandbox's own records
 * (where each project is, its size, and its pools per storage): a drain into two destinations keeps
 * every network (a root and its direct forks: a fork of a fork is standalone) on one storage with
 * one pool, and balances what lands (each member with its pool's objects, the pool copies); a
 * network whose root already sits on a destination goes there; a release whose moves drop pool
 * links is warned about before anything moves.
 *
 * On the in-process harness (test/support/sim-harness.ts): each run through the executable's
 * command line against the sandbox on one simulated clock, so its moves and polls cost no real
 * time. The subject is where the orchestrator places networks, not the process boundary.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSandbox, SandboxOptions } from '../src/sandbox/index.js';
import { RunEventSchema } from '../src/events/run-events.js';
import { ADMIN_TOKEN, flat, sandboxEnv, tempDir, writeChangedSeed } from './support/cli-harness.js';
import { startSimulation } from './support/sim-harness.js';
import type { Simulation } from './support/sim-harness.js';

const COUNTS = { projects: 60, snippets: 1, groups: 1 };
import { sandboxProjects, writeProjectsPlan } from './support/projects-plan.js';

interface Pool {
  network: number;
  storage: string;
  bytes: number;
  members: number[];
}

async function poolsOf(url: string): Promise<Pool[]> {
  const res = await fetch(`${url}/-/sandbox/pools`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  expect(res.status).toBe(200);
  return (await res.json()) as Pool[];
}

/** Root 1 (500 MiB, its pool too) and two 300 MiB forks on nfs-1; cluster and nfs-2 hold `roomMib` each. */
function splitSeed(dir: string, roomMib: number): string {
  return writeChangedSeed(dir, COUNTS, (doc) => {
    doc.deleteIn(['inventory', 'generate']);
    doc.setIn(
      ['inventory', 'projects'],
      doc.createNode([
        { id: 1, name: 'root', storage: 'nfs-1', visibility: 'public', size_mb: 500 },
        { id: 2, name: 'fork-a', storage: 'nfs-1', visibility: 'public', size_mb: 300, forked_from: 1 },
        { id: 3, name: 'fork-b', storage: 'nfs-1', visibility: 'public', size_mb: 300, forked_from: 1 },
      ]),
    );
    doc.setIn(['inventory', 'snippets'], doc.createNode([]));
    doc.setIn(['inventory', 'groups'], doc.createNode([{ id: 1, name: 'g1', storage: 'default' }]));
    doc.setIn(
      ['instance', 'storage_capacity'],
      doc.createNode({ cluster: roomMib * 2 ** 20, 'nfs-2': roomMib * 2 ** 20 }),
    );
  });
}

describe('fork networks in the orchestrator', { timeout: 120_000 }, () => {
  let sandbox: RunningSandbox | null = null;
  let sim: Simulation;
  let dir: string;
  /** The sandbox on a simulated clock (closed when the test ends), and the commands on that clock. */
  const startSandbox = async (options: Omit<SandboxOptions, 'clock'>): Promise<RunningSandbox> => {
    sim = await startSimulation(options);
    return sim.sandbox;
  };
  afterEach(() => {
    sandbox = null;
    rmSync(dir, { recursive: true, force: true });
  });

  it('drains into two destinations with equal room: every network on one storage with one pool, landed bytes within 10%', async () => {
    dir = tempDir('forks-balance');
    sandbox = await startSandbox({
      seed: writeChangedSeed(dir, COUNTS, (doc) => {
        doc.setIn(['inventory', 'generate', 'storages'], doc.createNode({ 'nfs-1': 1 }));
        doc.setIn(['inventory', 'generate', 'size_mb'], doc.createNode({ median: 40, max: 200 }));
        doc.setIn(['inventory', 'generate', 'public_fraction'], 1);
        doc.setIn(['inventory', 'generate', 'fork_networks'], doc.createNode({ count: 6, max_forks: 3 }));
      }),
      workers: 6,
      moveDurationMs: 20,
    });
    const before = await poolsOf(sandbox.url);
    const networks = new Map(before.map((p) => [p.network, p.members]));
    expect(networks.size).toBeGreaterThanOrEqual(3);
    const file = writeProjectsPlan(dir, ['cluster', 'nfs-2'], {
      name: 'forks',
      extra: ['capacity:', '  storages: {cluster: {free: 1TiB}, nfs-2: {free: 1TiB}}'],
    });
    const run = await sim.shardmove(['run', file, '--state', join(dir, 'run.db')], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Verification: passed/);

    const after = new Map(sandboxProjects(sandbox).map((p) => [p.id, p.storage]));
    for (const [network, members] of networks) {
      const where = new Set(members.map((id) => after.get(id)));
      expect([...where], `network ${network}`).toHaveLength(1);
    }
    // One pool per network, on the storage its members are on: no split.
    const pools = await poolsOf(sandbox.url);
    for (const network of networks.keys()) {
      const mine = pools.filter((p) => p.network === network);
      expect(mine, `pools of network ${network}`).toHaveLength(1);
      expect(['cluster', 'nfs-2']).toContain(mine[0]!.storage);
    }
    // What landed on each destination, as the sandbox counts it: the projects as they are there now
    // (a moved member carries its pool's objects) and the pools.
    const bytes = new Map<string, number>([
      ['cluster', 0],
      ['nfs-2', 0],
    ]);
    for (const p of sandboxProjects(sandbox))
      if (bytes.has(p.storage)) bytes.set(p.storage, bytes.get(p.storage)! + p.size_mb);
    for (const p of pools) bytes.set(p.storage, bytes.get(p.storage)! + p.bytes / 2 ** 20);
    const [a, b] = [bytes.get('cluster')!, bytes.get('nfs-2')!];
    expect(Math.abs(a - b) / Math.max(a, b)).toBeLessThanOrEqual(0.1);
  });

  it('sends every member of a network whose root already sits on a destination there, keeps a network whose root stays elsewhere together, and places a fork of a fork on its own', async () => {
    dir = tempDir('forks-anchor');
    sandbox = await startSandbox({
      seed: writeChangedSeed(dir, COUNTS, (doc) => {
        doc.deleteIn(['inventory', 'generate']);
        doc.setIn(
          ['inventory', 'projects'],
          doc.createNode([
            // The largest, on cluster (weighted 3:1): without the anchor, the network would go to the emptier nfs-2.
            { id: 1, name: 'big', storage: 'nfs-1', visibility: 'public', size_mb: 500 },
            { id: 2, name: 'root', storage: 'cluster', visibility: 'public', size_mb: 50 },
            { id: 3, name: 'fork-a', storage: 'nfs-1', visibility: 'public', size_mb: 20, forked_from: 2 },
            // A fork of a fork: no pool, so no network to keep it with.
            { id: 4, name: 'fork-of-fork', storage: 'nfs-1', visibility: 'public', size_mb: 10, forked_from: 3 },
            { id: 5, name: 'other', storage: 'nfs-1', visibility: 'public', size_mb: 5 },
            // A second network whose root stays outside the plan (default): its direct forks go together.
            { id: 6, name: 'root-b', storage: 'default', visibility: 'public', size_mb: 30 },
            { id: 8, name: 'fork-b2', storage: 'nfs-1', visibility: 'public', size_mb: 15, forked_from: 6 },
            { id: 9, name: 'fork-b3', storage: 'nfs-1', visibility: 'public', size_mb: 12, forked_from: 6 },
          ]),
        );
        doc.setIn(['inventory', 'snippets'], doc.createNode([]));
        doc.setIn(['inventory', 'groups'], doc.createNode([{ id: 1, name: 'g1', storage: 'nfs-2' }]));
      }),
      workers: 4,
      moveDurationMs: 20,
    });
    // By the weights alone the network would follow project 1's imbalance to nfs-2: the anchor must
    // win. (The anchored network counts on cluster from the first choice on, so project 1 takes
    // cluster only because cluster weighs three times nfs-2.)
    const file = writeProjectsPlan(dir, ['cluster', 'nfs-2'], {
      name: 'forks',
      extra: ['weights: { cluster: 99, nfs-2: 33, nfs-1: 0 }'],
    });
    const run = await sim.shardmove(['run', file, '--state', join(dir, 'run.db')], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const after = new Map(sandboxProjects(sandbox).map((p) => [p.id, p.storage]));
    expect(after.get(1)).toBe('cluster');
    expect(after.get(2)).toBe('cluster');
    expect(after.get(3)).toBe('cluster');
    expect(['cluster', 'nfs-2']).toContain(after.get(4));
    expect(after.get(6)).toBe('default');
    expect(after.get(8)).toBe(after.get(9));
    const pools = await poolsOf(sandbox.url);
    expect(pools.filter((p) => p.network === 2)).toEqual([
      expect.objectContaining({ storage: 'cluster', members: [2, 3] }),
    ]);
    // Network 6: one pool copy, where both forks went; the fork of a fork is in no pool.
    expect(pools.filter((p) => p.network === 6 && p.storage !== 'default')).toEqual([
      expect.objectContaining({ storage: after.get(8), members: [8, 9] }),
    ]);
    expect(pools.flatMap((p) => p.members)).not.toContain(4);
  });

  it("warns before anything moves when the release drops a moved fork's pool link, naming the networks", async () => {
    dir = tempDir('forks-old');
    sandbox = await startSandbox({
      seed: writeChangedSeed(dir, COUNTS, (doc) => {
        doc.setIn(['instance', 'version'], '16.2.0');
        doc.setIn(['inventory', 'generate', 'storages'], doc.createNode({ 'nfs-1': 1 }));
        doc.setIn(['inventory', 'generate', 'public_fraction'], 1);
        doc.setIn(['inventory', 'generate', 'fork_networks'], doc.createNode({ count: 3, max_forks: 2 }));
      }),
      workers: 4,
      moveDurationMs: 20,
    });
    const roots = [...new Set((await poolsOf(sandbox.url)).map((p) => p.network))];
    expect(roots.length).toBeGreaterThan(0);
    const file = writeProjectsPlan(dir, ['cluster'], { name: 'forks' });
    const dry = await sim.shardmove(['run', file, '--dry-run', '--state', join(dir, 'dry.db')], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
    });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const out = flat(dry.stdout + dry.stderr);
    expect(out).toMatch(
      /GitLab 16\.2\.0 drops a moved fork's pool link: \d+ fork\(s\) of \d+ network\(s\) will each carry the pool's objects themselves/,
    );
    for (const r of roots) expect(out).toContain(String(r));
    // Nothing moved: the sandbox has no move.
    expect((sandbox.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number }).n).toBe(0);
  });

  it('charges a split network its pool copy on every destination it lands on: refused before any write when that does not fit', async () => {
    dir = tempDir('forks-split');
    sandbox = await startSandbox({
      // Each destination has 1000 MiB; the root alone lands with 1000 MiB (its 500 and its pool's
      // objects) and brings a 500 MiB pool copy: no destination can take it.
      seed: splitSeed(dir, 1000),
      workers: 1,
      moveDurationMs: 20,
    });
    const settings = () => sandbox!.state.db.prepare("SELECT value FROM meta WHERE key = 'settings'").get();
    const before = settings();
    const file = writeProjectsPlan(dir, ['cluster', 'nfs-2'], {
      name: 'split',
      extra: ['capacity:', '  storages: {cluster: {free: 1000MiB}, nfs-2: {free: 1000MiB}}'],
    });
    const run = await sim.shardmove(['run', file, '--state', join(dir, 'run.db')], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
    });
    const out = flat(run.stdout + run.stderr);
    expect(run.code, out).toBe(1);
    // cluster: the root (500 MiB), its pool's objects (500 MiB), the pool copy (500 MiB) and the
    // root's design repository allowance (1 MiB).
    expect(out).toMatch(/the drain does not fit on cluster: it needs 1573912576 bytes \(1\.5 GiB\)/);
    expect(out).toMatch(
      /that counts a pool copy on each destination of the fork network\(s\) of project\(s\) 1, split because they fit on no single destination/,
    );
    // The sandbox's records: no move, no pool anywhere new, the weights as they were.
    expect((sandbox.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number }).n).toBe(0);
    expect((await poolsOf(sandbox.url)).map((p) => p.storage)).toEqual(['nfs-1']);
    expect(settings()).toEqual(before);
  });

  it('writes network.split to --events, and a split that fits moves, a pool on each destination', async () => {
    dir = tempDir('forks-split-fits');
    // Together the network lands with 3100 MiB (each member with the pool's 500 MiB, one pool
    // copy), which 2200 MiB cannot take; split, the root lands with 1500 MiB on one destination and
    // the forks with 2100 MiB on the other, each with its pool copy.
    sandbox = await startSandbox({ seed: splitSeed(dir, 2200), workers: 1, moveDurationMs: 20 });
    const file = writeProjectsPlan(dir, ['cluster', 'nfs-2'], {
      name: 'split',
      extra: ['capacity:', '  storages: {cluster: {free: 2200MiB}, nfs-2: {free: 2200MiB}}'],
    });
    const events = join(dir, 'events.jsonl');
    const run = await sim.shardmove(['run', file, '--state', join(dir, 'run.db'), '--events', events], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const lines = readFileSync(events, 'utf8')
      .trim()
      .split('\n')
      .map((l) => RunEventSchema.parse(JSON.parse(l)));
    expect(lines.filter((l) => l.type === 'network.split')).toEqual([
      expect.objectContaining({ network: 1, bytes: 3100 * 2 ** 20, extraBytes: 500 * 2 ** 20 }),
    ]);
    // The sandbox's records: the network's members on both destinations, a pool on each, no move
    // that ran out of room.
    const pools = (await poolsOf(sandbox.url)).filter((p) => p.network === 1).map((p) => p.storage);
    expect(pools.sort()).toEqual(['cluster', 'nfs-2']);
    const moves = sandbox.state.db.prepare('SELECT state, fate FROM moves').all() as { state: string; fate: string }[];
    expect(moves.map((m) => `${m.state} ${m.fate}`)).toEqual(['finished ok', 'finished ok', 'finished ok']);
  });
});
