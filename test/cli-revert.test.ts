/**
 * `shardmove revert` end to end: a forward run, then a revert, over real HTTP. Judged from the
 * sandbox's own records (where each item is, its checksum, the weights, the moves it recorded), not
 * from what shardmove prints.
 *
 * On the in-process harness (test/support/sim-harness.ts): every command through the executable's
 * command line against a sandbox on one simulated clock, so the moves, the polls and a move made by
 * hand cost no real time; the sandbox "restarted" on the same port and database is a new sandbox
 * on the same clock. The subject is what the revert does, not the process boundary.
 */
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { ADMIN_TOKEN, flat, movesOf, sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import type { FakeClock } from './support/fake-clock.js';
import { startSimulation } from './support/sim-harness.js';
import type { Simulation } from './support/sim-harness.js';
import { sandboxBeside, seededSimulation } from './support/sim-speeda.js';

type Kind = 'project' | 'snippet' | 'group';
const KINDS: readonly Kind[] = ['project', 'snippet', 'group'];
const PLURAL = { project: 'projects', snippet: 'snippets', group: 'groups' } as const;

/** One item as the sandbox itself sees it (hidden projects included). */
interface SandboxItem {
  storage: string;
  checksum: string;
}

async function itemOf(url: string, kind: Kind, id: number): Promise<SandboxItem> {
  const res = await fetch(`${url}/-/sandbox/items/${kind}/${id}`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  if (!res.ok) throw new Error(`${kind} ${id}: ${res.status}`);
  return (await res.json()) as SandboxItem;
}

/** Every item of every kind, by the ids the sandbox's move-free listing gives, with storage and checksum. */
async function inventoryOf(url: string): Promise<Map<string, SandboxItem>> {
  const out = new Map<string, SandboxItem>();
  const paths = { project: '/projects', snippet: '/snippets/all', group: '/groups' } as const;
  for (const kind of KINDS) {
    for (let page = 1; ; page++) {
      const res = await fetch(`${url}/api/v4${paths[kind]}?per_page=100&page=${page}`, {
        headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN },
      });
      const body = (await res.json()) as { id: number }[];
      for (const it of body) out.set(`${kind}:${it.id}`, await itemOf(url, kind, it.id));
      if (body.length < 100) break;
    }
  }
  return out;
}

async function weightsOf(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}

/** Weights as GitLab weighs them: a storage absent from the hash weighs 0. */
const positive = (w: Record<string, number>) => Object.fromEntries(Object.entries(w).filter(([, v]) => v > 0));

/**
 * Moves one item by hand, through the API, and lets the sandbox's clock run until the item is there
 * and its move finished (nothing else runs on that clock meanwhile).
 */
async function moveByHand(clock: FakeClock, url: string, kind: Kind, id: number, to: string): Promise<void> {
  const res = await fetch(`${url}/api/v4/${PLURAL[kind]}/${id}/repository_storage_moves`, {
    method: 'POST',
    headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify({ destination_storage_name: to }),
  });
  expect(res.status, await res.text()).toBe(201);
  const until = Date.now() + 20_000;
  const finished = async () =>
    (await itemOf(url, kind, id)).storage === to &&
    (await movesOf(url, kind)).filter((m) => m.itemId === id).at(-1)?.state === 'finished';
  while (!(await finished())) {
    if (Date.now() > until) throw new Error(`${kind} ${id} never reached ${to}`);
    const due = clock.nextDue();
    await (due === null ? new Promise((r) => setTimeout(r, 2)) : clock.advanceTo(due));
  }
}

async function setup(
  name: string,
  options: { moveDurationMs: number; workers: number },
  seed: Parameters<typeof writeSeed>[1],
): Promise<{ sandbox: RunningSandbox; dir: string; sim: Simulation; runCli: Simulation['shardmove'] }> {
  const { dir, sim } = await seededSimulation(name, seed, options);
  return { sandbox: sim.sandbox, dir, sim, runCli: sim.shardmove };
}

/** The revert checkpoint's rows in a state, as `kind:id`. */
function rowsIn(file: string, state: string): string[] {
  const store = openCheckpoint(file, { readOnly: true });
  try {
    return (['projects', 'snippets', 'groups'] as const).flatMap((k) =>
      store.itemsInState(k, null, state as 'left', 1_000_000).map((r) => `${k.slice(0, -1)}:${r.id}`),
    );
  } finally {
    store.close();
  }
}

/** A port free now (the sandbox is restarted on it: the plan's URL, which its hash covers, stays the same). */
async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('shardmove revert (in process, one simulated clock, real HTTP)', { timeout: 120_000 }, () => {
  it('a forward run, then a revert: every item is back on its storage with its checksum, and the weights are those of before', async () => {
    const { sandbox, dir, sim, runCli } = await setup(
      'revert',
      { moveDurationMs: 30, workers: 10 },
      {
        projects: 30,
        snippets: 6,
        groups: 4,
      },
    );
    // Three sources, one destination: the revert sends each item back to its own storage.
    const plan = writePlan(dir, { concurrency: 5 });
    const env = sandboxEnv(sandbox.url);
    // Items already on the forward run's destination before it: the revert must leave them there.
    const start = await inventoryOf(sandbox.url);
    const settled = [...start]
      .filter(([k, it]) => k.startsWith('project:') && it.storage === 'nfs-2')
      .slice(0, 2)
      .map(([k]) => Number(k.split(':')[1]));
    expect(settled).toHaveLength(2);
    for (const id of settled) await moveByHand(sim.clock, sandbox.url, 'project', id, 'cluster');
    const before = await inventoryOf(sandbox.url);
    const weightsBefore = await weightsOf(sandbox.url);
    const moved = [...before].filter(([, it]) => it.storage !== 'cluster').map(([k]) => k);
    expect(new Set(moved.map((k) => before.get(k)?.storage))).toEqual(new Set(['nfs-1', 'nfs-2', 'default']));

    const forward = await runCli(['run', plan], { cwd: dir, env });
    expect(forward.code, forward.stderr).toBe(0);
    expect(forward.stdout).toMatch(/shardmove revert \S*plan\.yaml --state \S+\.db\)/);
    const middle = await inventoryOf(sandbox.url);
    for (const key of moved) expect(middle.get(key)?.storage, key).toBe('cluster');
    expect(positive(await weightsOf(sandbox.url))).not.toEqual(positive(weightsBefore));
    const forwardMoves = new Map(
      await Promise.all(KINDS.map(async (k) => [k, (await movesOf(sandbox.url, k)).length] as const)),
    );
    for (const id of settled) expect(middle.get(`project:${id}`)?.storage).toBe('cluster');

    const revert = await runCli(['revert', plan, '--yes'], { cwd: dir, env });
    expect(revert.code, revert.stderr).toBe(0);
    expect(revert.stdout).toMatch(/move \d+ projects back from cluster to nfs-1/);
    expect(revert.stdout).toContain('REVERTED: every item the run moved is back where it came from, verified');

    const after = await inventoryOf(sandbox.url);
    expect(after).toEqual(before);
    expect(positive(await weightsOf(sandbox.url))).toEqual(positive(weightsBefore));
    // One move back per item the forward run moved, and nothing else: items that were on cluster
    // or elsewhere before the forward run were never touched.
    for (const kind of KINDS) {
      const back = (await movesOf(sandbox.url, kind)).slice(forwardMoves.get(kind));
      expect(
        back.filter(
          (m) =>
            m.source !== 'cluster' ||
            m.destination !== before.get(`${kind}:${m.itemId}`)?.storage ||
            m.state !== 'finished',
        ),
        kind,
      ).toEqual([]);
      expect(back.map((m) => `${kind}:${m.itemId}`).sort()).toEqual(
        moved.filter((k) => k.startsWith(`${kind}:`)).sort(),
      );
    }

    // Again: nothing left to do, nothing moved.
    const again = await runCli(['revert', plan, '--yes'], { cwd: dir, env });
    expect(again.code, again.stderr).toBe(0);
    for (const kind of KINDS)
      expect((await movesOf(sandbox.url, kind)).length - (forwardMoves.get(kind) ?? 0)).toBe(
        moved.filter((k) => k.startsWith(`${kind}:`)).length,
      );

    // `run` on the reverted drain's checkpoint is refused (exit 4), before anything is written: it
    // would move the items off the sources again. Nothing moves; the items stay home.
    const rerun = await runCli(['run', plan], { cwd: dir, env });
    expect(rerun.code, rerun.stdout + rerun.stderr).toBe(4);
    expect(rerun.stderr).toMatch(/refusing: this drain was reverted \(.*it\.revert\.db holds its revert\)/);
    for (const kind of KINDS)
      expect((await movesOf(sandbox.url, kind)).length - (forwardMoves.get(kind) ?? 0)).toBe(
        moved.filter((k) => k.startsWith(`${kind}:`)).length,
      );
    expect(await inventoryOf(sandbox.url)).toEqual(before);
  });

  it('an item whose move back keeps failing is quarantined (exit 3); once fixed, --retry-quarantined takes it home', async () => {
    const dir = tempDir('revert-quarantine');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    const db = join(dir, 'sandbox.db');
    const seed = writeSeed(dir, { projects: 12, snippets: 2, groups: 2 });
    const options = { port, db, seed, moveDurationMs: 30 };
    const sim = await startSimulation(options);
    const runCli = sim.shardmove;
    /** The same instance started again on the same port and database (and clock), `brokenItems` failing. */
    const restart = async (brokenItems: string[]) => {
      await sandbox.close();
      return sandboxBeside(sim, { ...options, faults: { brokenItems } });
    };
    let sandbox = sim.sandbox;
    const plan = writePlan(dir, { concurrency: 4, from: ['nfs-1'] });
    const env = sandboxEnv(sandbox.url);
    const before = await inventoryOf(sandbox.url);
    const forward = await runCli(['run', plan], { cwd: dir, env });
    expect(forward.code, forward.stderr).toBe(0);
    const broken = [...before].find(([k, it]) => k.startsWith('project:') && it.storage === 'nfs-1')![0].split(':')[1]!;

    // The same instance, where that project's moves now always fail.
    sandbox = await restart([`project:${broken}`]);
    const first = await runCli(['revert', plan, '--yes'], { cwd: dir, env });
    expect(first.code, `${first.stdout}${first.stderr}`).toBe(3);
    expect(first.stdout).toContain('Quarantined (1)');
    // Every hint of a revert names the revert: `run` on this plan would be refused.
    expect(flat(first.stdout)).toMatch(/once fixed: shardmove revert \S*plan\.yaml --retry-quarantined/);
    expect(first.stdout).not.toMatch(/\brun again\b/);
    expect((await itemOf(sandbox.url, 'project', Number(broken))).storage).toBe('cluster');

    // Fixed; a plain revert leaves it quarantined, --retry-quarantined moves it back.
    sandbox = await restart([]);
    const plain = await runCli(['revert', plan, '--yes'], { cwd: dir, env });
    expect(plain.code, plain.stderr).toBe(3);
    const retried = await runCli(['revert', plan, '--yes', '--retry-quarantined'], { cwd: dir, env });
    expect(retried.code, `${retried.stdout}${retried.stderr}`).toBe(0);
    expect(await inventoryOf(sandbox.url)).toEqual(before);
  });

  it('items moved again by hand between the forward run and the revert are skipped and listed, the rest go back', async () => {
    const { sandbox, dir, sim, runCli } = await setup(
      'revert-skip',
      { moveDurationMs: 30, workers: 10 },
      {
        projects: 20,
        snippets: 4,
        groups: 3,
      },
    );
    const plan = writePlan(dir, { concurrency: 5, from: ['nfs-1'] });
    const env = sandboxEnv(sandbox.url);
    const before = await inventoryOf(sandbox.url);
    const forward = await runCli(['run', plan], { cwd: dir, env });
    expect(forward.code, forward.stderr).toBe(0);
    const moved = [...before].filter(([, it]) => it.storage === 'nfs-1').map(([k]) => k);
    const projects = moved.filter((k) => k.startsWith('project:')).map((k) => Number(k.split(':')[1]));
    expect(projects.length).toBeGreaterThanOrEqual(3);
    // One moved on to another storage, one put back by hand already.
    const [again, home] = projects as [number, number];
    await moveByHand(sim.clock, sandbox.url, 'project', again, 'nfs-2');
    await moveByHand(sim.clock, sandbox.url, 'project', home, 'nfs-1');
    const handMoves = (await movesOf(sandbox.url, 'project')).length;

    const preview = await runCli(['revert', plan, '--dry-run'], { cwd: dir, env });
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.stdout).toContain(`project ${again} `);
    expect(preview.stdout).toContain('now on nfs-2');
    expect(preview.stdout).toContain(`project ${home} `);
    expect(preview.stdout).toContain('already back on nfs-1');
    expect((await movesOf(sandbox.url, 'project')).length).toBe(handMoves);

    const revert = await runCli(['revert', plan, '--yes'], { cwd: dir, env });
    expect(revert.code, revert.stderr).toBe(0);
    expect(revert.stdout).toMatch(/skipped 2 item\(s\)/);
    expect(revert.stdout).toContain(`project ${again} `);
    const after = await inventoryOf(sandbox.url);
    for (const key of moved) expect(after.get(key)?.storage, key).toBe(key === `project:${again}` ? 'nfs-2' : 'nfs-1');
    // Neither skipped item got a move from the revert.
    const revertMoves = (await movesOf(sandbox.url, 'project')).slice(handMoves);
    expect(revertMoves.map((m) => m.itemId)).not.toContain(again);
    expect(revertMoves.map((m) => m.itemId)).not.toContain(home);
    expect(rowsIn(join(dir, 'state', 'it.revert.db'), 'left').sort()).toEqual(
      [`project:${again}`, `project:${home}`].sort(),
    );
  });
});
