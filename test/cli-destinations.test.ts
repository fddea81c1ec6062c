/**
 * Many destinations and partial drains end to end, judged from the sandbox's own records: a drain of one
 * source into two destinations with equal room balances the bytes; a partial drain stops at its
 * `moved:` bound and verification reports the rest as expected; a kill mid-placement and a resume
 * change no placement already recorded.
 *
 * The drains run on the in-process harness (test/support/sim-harness.ts): each command through the
 * executable's command line against the sandbox on one simulated clock, so the moves and polls cost
 * no real time. The kill stays a process (`shardmove run` killed with SIGKILL, what only a process
 * shows) against a sandbox on the real clock; the resume after it runs in this process against the
 * same sandbox started again on its database and port, on a simulated clock.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { flat, fromDb, movesOf, runCli, sandboxEnv, tempDir, writeSeed } from './support/cli-harness.js';
import { FakeClock } from './support/fake-clock.js';
import { sandboxProjects, writeProjectsPlan } from './support/projects-plan.js';
import { startSimulation } from './support/sim-harness.js';
import type { Simulation } from './support/sim-harness.js';
import { commandsOn } from './support/sim-harness.js';

const MIB = 2 ** 20;

/** A seed whose projects are small enough that two destinations can be balanced closely. */
function smallSeed(dir: string, projects: number): string {
  const file = writeSeed(dir, { projects, snippets: 1, groups: 1 });
  writeFileSync(file, readFileSync(file, 'utf8').replace(/size_mb: \{[^}]*\}/, 'size_mb: { median: 40, max: 200 }'));
  return file;
}

describe('many destinations and partial drains', { timeout: 120_000 }, () => {
  let sandbox: RunningSandbox;
  let sim: Simulation;
  let dir: string;
  /** The sandbox of the drains, on a simulated clock (closed when the test ends). */
  async function simulate(): Promise<void> {
    dir = tempDir('destinations');
    sim = await startSimulation({ seed: smallSeed(dir, 120), workers: 6, moveDurationMs: 20 });
    sandbox = sim.sandbox;
  }
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('drains one source into two destinations with equal room: bytes within 10%, the placement recorded before each move and shown', async () => {
    await simulate();
    const before = sandboxProjects(sandbox).filter((p) => p.storage === 'nfs-1');
    expect(before.length).toBeGreaterThan(20);
    const plan = writeProjectsPlan(dir, ['cluster', 'nfs-2'], {
      name: 'dest',
      extra: ['capacity:', '  storages:', '    cluster: {free: 1TiB}', '    nfs-2: {free: 1TiB}'],
    });
    const env = sandboxEnv(sandbox.url);

    const dry = await sim.shardmove(['run', plan, '--dry-run', '--state', join(dir, 'dry.db')], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/Placement \(what the run would send where\):\n\s+cluster\s+\d+ item\(s\)/);
    expect(dry.stdout).toMatch(/\n\s+nfs-2\s+\d+ item\(s\)/);
    // Room that fits is information, not a warning.
    expect(dry.stdout).toMatch(/\nRoom \(checked by pre-flight\):\n(\s+room on \S+: needs .*: fits\n){2}/);
    expect(dry.stdout).not.toMatch(/Warnings[^]*fits/);
    expect(await movesOf(sandbox.url, 'project')).toEqual([]);

    const state = join(dir, 'run.db');
    const run = await sim.shardmove(['run', plan, '--state', state], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Verification: passed/);

    // The sandbox's records: where every project that was on nfs-1 is now, and its size.
    const after = new Map(sandboxProjects(sandbox).map((p) => [p.id, p]));
    const bytes = new Map<string, number>([
      ['cluster', 0],
      ['nfs-2', 0],
    ]);
    for (const p of before) {
      const now = after.get(p.id)!;
      expect(['cluster', 'nfs-2']).toContain(now.storage);
      bytes.set(now.storage, bytes.get(now.storage)! + now.size_mb);
    }
    const [a, b] = [bytes.get('cluster')!, bytes.get('nfs-2')!];
    expect(Math.abs(a - b) / Math.max(a, b)).toBeLessThanOrEqual(0.1);

    // Every move went where the checkpoint placed the item, each item moved once.
    const placed = new Map(
      fromDb<{ id: number; destination: string }>(
        state,
        `SELECT id, destination FROM items WHERE kind = 'projects'`,
      ).map((r) => [r.id, r.destination]),
    );
    const moves = await movesOf(sandbox.url, 'project');
    expect(moves.length).toBe(before.length);
    for (const m of moves) expect(m.destination).toBe(placed.get(m.itemId));

    const status = await sim.shardmove(['status', plan, '--state', state, '--json'], { cwd: dir, env });
    const placement = (
      JSON.parse(status.stdout) as { placement: { destination: string; items: number; moved: number }[] }
    ).placement;
    expect(placement.map((p) => p.destination)).toEqual(['cluster', 'nfs-2']);
    expect(placement.reduce((n, p) => n + p.moved, 0)).toBe(before.length);
  });

  it('stops a partial drain at its moved: bound, largest first, and verification reports the rest as expected', async () => {
    await simulate();
    const before = sandboxProjects(sandbox).filter((p) => p.storage === 'nfs-1');
    const total = before.reduce((n, p) => n + p.size_mb, 0);
    const boundMib = Math.floor(total * 0.4);
    const plan = writeProjectsPlan(dir, ['cluster'], {
      name: 'partial',
      moveLines: [`  until: {moved: ${boundMib}MiB}`],
    });
    const state = join(dir, 'partial.db');
    const run = await sim.shardmove(['run', plan, '--state', state], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(flat(run.stdout)).toMatch(/Verification: passed/);
    expect(flat(run.stdout)).toMatch(/projects on nfs-1: \d+ still there, as planned \(move\.until reached\)/);
    expect(flat(run.stdout)).toMatch(/left on the source as planned \(move\.until\)/);

    const after = new Map(sandboxProjects(sandbox).map((p) => [p.id, p]));
    const moved = before.filter((p) => after.get(p.id)!.storage === 'cluster');
    const kept = before.filter((p) => after.get(p.id)!.storage === 'nfs-1');
    expect(kept.length).toBeGreaterThan(0);
    const movedMib = moved.reduce((n, p) => n + p.size_mb, 0);
    // At least the bound left, and without the last item crossing it, less than the bound.
    expect(movedMib).toBeGreaterThanOrEqual(boundMib - 1);
    expect(movedMib - Math.min(...moved.map((p) => p.size_mb))).toBeLessThan(boundMib + 1);
    // Largest first by size class (powers of two): nothing kept is in a larger class than anything moved.
    const sizeClass = (mib: number) => Math.floor(Math.log2(Math.max(1, Math.round(mib * MIB))));
    expect(Math.max(...kept.map((p) => sizeClass(p.size_mb)))).toBeLessThanOrEqual(
      Math.min(...moved.map((p) => sizeClass(p.size_mb))),
    );
    expect((await movesOf(sandbox.url, 'project')).length).toBe(moved.length);
    const bound = fromDb<{ source: string }>(state, 'SELECT source FROM bounds');
    expect(bound).toEqual([{ source: 'nfs-1' }]);
  });

  it('keeps every recorded placement across a kill and a resume', async () => {
    dir = tempDir('destinations');
    // Slow moves, so the kill lands while most items are still to be placed.
    const seed = smallSeed(dir, 120);
    const db = join(dir, 'sb.db');
    const killedUnder = await startSandbox({ seed, workers: 2, moveDurationMs: 400, db });
    onTestFinished(() => killedUnder.close());
    sandbox = killedUnder;
    const plan = writeProjectsPlan(dir, ['cluster', 'nfs-2'], { name: 'resume' });
    const state = join(dir, 'resume.db');
    const env = sandboxEnv(sandbox.url);
    let snapshot: Map<number, string> | null = null;
    const first = await runCli(['run', plan, '--state', state], {
      cwd: dir,
      env,
      onStart: (child) => {
        // Kill once some placements are recorded (by construction: polled from the checkpoint).
        const timer = setInterval(() => {
          try {
            const rows = fromDb<{ id: number; destination: string }>(
              state,
              'SELECT id, destination FROM items WHERE destination IS NOT NULL',
            );
            if (rows.length >= 4) {
              clearInterval(timer);
              child.kill('SIGKILL');
            }
          } catch {
            // not created yet
          }
        }, 20);
        child.once('exit', () => clearInterval(timer));
      },
    });
    expect(first.code).not.toBe(0);
    snapshot = new Map(
      fromDb<{ id: number; destination: string }>(
        state,
        'SELECT id, destination FROM items WHERE destination IS NOT NULL',
      ).map((r) => [r.id, r.destination]),
    );
    expect(snapshot.size).toBeGreaterThanOrEqual(4);

    // The same sandbox (its database, its port, its moves in flight), from now on a simulated clock:
    // the resume's slow moves cost no real time.
    const port = Number(new URL(sandbox.url).port);
    await sandbox.close();
    const clock = new FakeClock(Date.now());
    const resumed = await startSandbox({ seed, workers: 2, moveDurationMs: 400, db, port, clock });
    onTestFinished(() => resumed.close());
    sandbox = resumed;
    const second = await commandsOn(clock).shardmove(['run', plan, '--state', state], { cwd: dir, env });
    expect(second.code, second.stdout + second.stderr).toBe(0);
    const finalPlacement = new Map(
      fromDb<{ id: number; destination: string }>(
        state,
        'SELECT id, destination FROM items WHERE destination IS NOT NULL',
      ).map((r) => [r.id, r.destination]),
    );
    for (const [id, d] of snapshot) expect(finalPlacement.get(id)).toBe(d);
    // The sandbox agrees: every project placed before the kill is on the destination recorded then.
    const after = new Map(sandboxProjects(sandbox).map((p) => [p.id, p.storage]));
    for (const [id, d] of snapshot) expect(after.get(id)).toBe(d);
    // No item was moved twice to different places.
    const moves = await movesOf(sandbox.url, 'project');
    for (const m of moves) expect(m.destination).toBe(finalPlacement.get(m.itemId));
  });
});
