/**
 * The weights of before a run are not written back over a later change: when another run (or an
 * operator) set the instance's weights after the forward run ended, `revert` and `weights restore`
 * show the difference (what the run left, what the instance has, what they would write) and refuse
 * without `--overwrite-weights`. Judged from the sandbox's own weights and moves.
 *
 * On the in-process harness (test/support/sim-harness.ts): each command through the executable's
 * command line against the sandbox on one simulated clock (real HTTP), so the moves and polls cost
 * no real time. The subject is what revert and restore write, not the process boundary.
 */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { laterWeightChange } from '../src/actors/weight-changes.js';
import { ADMIN_TOKEN, moveTotal, storagesOf, writePlan } from './support/cli-harness.js';
import { seededSimulation } from './support/sim-speeda.js';

/** Revert checkpoints anywhere under `dir` (wherever the default checkpoint lives): a refused revert writes none. */
function revertFilesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.revert.db'));
}

async function weightsOf(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}

/** What another run does to the weights: one PUT. */
async function setWeights(url: string, weights: Record<string, number>): Promise<void> {
  const res = await fetch(`${url}/api/v4/application/settings`, {
    method: 'PUT',
    headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify({ repository_storages_weighted: weights }),
  });
  expect(res.status).toBe(200);
}

const positive = (w: Record<string, number>) => Object.fromEntries(Object.entries(w).filter(([, v]) => v > 0));

async function forwardThenLaterChange(name: string) {
  const { dir, sim, env } = await seededSimulation(
    name,
    { projects: 10, snippets: 2, groups: 2 },
    { moveDurationMs: 30, workers: 10 },
  );
  const sandbox = sim.sandbox;
  const plan = writePlan(dir, { concurrency: 4 });
  const before = { weights: await weightsOf(sandbox.url), projects: await storagesOf(sandbox.url, 'projects') };
  const forward = await sim.shardmove(['run', plan], { cwd: dir, env });
  expect(forward.code, forward.stderr).toBe(0);
  expect(positive(await weightsOf(sandbox.url))).toEqual({ cluster: 100 });
  // Another run, later: new projects go to nfs-2 now.
  await setWeights(sandbox.url, { default: 0, 'nfs-1': 0, 'nfs-2': 100, cluster: 0 });
  return {
    dir,
    sim,
    sandbox,
    plan,
    env,
    before,
    later: await weightsOf(sandbox.url),
    moves: await moveTotal(sandbox.url),
  };
}

describe('laterWeightChange', () => {
  it('is null while the weights are those the run left, or already those of before; else names each storage', () => {
    const before = { default: 100 };
    const left = [{ default: 0, cluster: 100 }];
    expect(laterWeightChange(before, left, { default: 0, cluster: 100 })).toBeNull();
    expect(laterWeightChange(before, left, { cluster: 100 })).toBeNull();
    expect(laterWeightChange(before, left, { default: 100, cluster: 0 })).toBeNull();
    expect(laterWeightChange(before, left, { default: 0, cluster: 50, 'nfs-2': 50 })).toEqual([
      { storage: 'cluster', left: 100, now: 50, write: 0 },
      { storage: 'default', left: 0, now: 0, write: 100 },
      { storage: 'nfs-2', left: 0, now: 50, write: 0 },
    ]);
  });
});

describe('the weights of before, over a later change (real HTTP)', { timeout: 120_000 }, () => {
  it('revert shows the change and refuses it; --overwrite-weights writes the weights of before and reverts', async () => {
    const { dir, sim, sandbox, plan, env, before, later, moves } = await forwardThenLaterChange('revert-weights');

    const dry = await sim.shardmove(['revert', plan, '--dry-run'], { cwd: dir, env });
    expect(dry.code, dry.stderr).toBe(4);
    expect(dry.stdout).toContain('the weights changed since the forward run left them');
    expect(dry.stdout).toMatch(/storage\s+forward left\s+now\s+revert writes/);
    expect(dry.stdout).toMatch(/cluster\s+100\s+0\s+0/);
    expect(dry.stdout).toMatch(/nfs-2\s+0\s+100\s+0/);
    expect(dry.stderr).toContain("refusing: the instance's weights changed since the forward run ended");
    expect(dry.stderr).toContain('nfs-2: the forward run left 0, now 100, would write 0');
    expect(dry.stderr).toMatch(/run again with shardmove revert \S*plan\.yaml --overwrite-weights/);

    const refused = await sim.shardmove(['revert', plan, '--yes'], { cwd: dir, env });
    expect(refused.code, refused.stderr).toBe(4);
    expect(await weightsOf(sandbox.url)).toEqual(later);
    expect(await moveTotal(sandbox.url)).toBe(moves);
    expect(revertFilesUnder(dir)).toEqual([]);

    const overwritten = await sim.shardmove(['revert', plan, '--yes', '--overwrite-weights'], { cwd: dir, env });
    expect(overwritten.code, `${overwritten.stdout}${overwritten.stderr}`).toBe(0);
    expect(overwritten.stdout).toContain('the revert overwrites that change (--overwrite-weights)');
    expect(positive(await weightsOf(sandbox.url))).toEqual(positive(before.weights));
    expect(await storagesOf(sandbox.url, 'projects')).toEqual(before.projects);
  });

  it('weights restore refuses the same way; --overwrite-weights restores', async () => {
    const { dir, sim, sandbox, plan, env, before, later } = await forwardThenLaterChange('restore-weights');
    const refused = await sim.shardmove(['weights', 'restore', plan, '--yes'], { cwd: dir, env });
    expect(refused.code, refused.stderr).toBe(4);
    expect(refused.stderr).toContain('nfs-2: the run left 0, now 100, would write 0');
    expect(refused.stderr).toMatch(/run again with shardmove weights restore \S*plan\.yaml --overwrite-weights/);
    expect(await weightsOf(sandbox.url)).toEqual(later);

    const restored = await sim.shardmove(['weights', 'restore', plan, '--yes', '--overwrite-weights'], {
      cwd: dir,
      env,
    });
    expect(restored.code, `${restored.stdout}${restored.stderr}`).toBe(0);
    expect(restored.stdout).toContain('--overwrite-weights undoes that change too');
    expect(positive(await weightsOf(sandbox.url))).toEqual(positive(before.weights));
  });
});
