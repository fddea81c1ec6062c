/**
 * `shardmove weights restore` against the sandbox after a real run: refused while the
 * run holds the checkpoint, puts back the weights recorded before the run's first write, and a
 * second call changes nothing. The commands and the sandbox are in this process on one simulated
 * clock (./support/sim-harness.ts); the clock is held while the run is caught mid-drain, and the
 * restore refused meanwhile is a process of its own (the lock is held by a process).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { restoreTarget } from '../src/actors/weight-changes.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { ADMIN_TOKEN, movesOf, runCli, writePlan } from './support/cli-harness.js';
import type { SimResult } from './support/sim-harness.js';
import { seededSimulation } from './support/sim-speeda.js';
import { stepClockUntil } from './support/sim-speedc.js';

async function weightsOf(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}

/** Every file in `dir` with a digest of its bytes. */
const filesOf = (dir: string) =>
  Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((n) => [
        n,
        createHash('sha256')
          .update(readFileSync(join(dir, n)))
          .digest('hex'),
      ]),
  );

/** Weights as GitLab weighs them: a storage absent from the hash weighs 0. */
const positive = (w: Record<string, number>) => Object.fromEntries(Object.entries(w).filter(([, v]) => v > 0));

describe('restoreTarget', () => {
  it('puts back the recorded weights and zeroes storages the record did not name', () => {
    expect(restoreTarget({ default: 100 }, { default: 0, cluster: 100 })).toEqual({
      target: { default: 100, cluster: 0 },
      changes: [
        { storage: 'cluster', from: 100, to: 0 },
        { storage: 'default', from: 0, to: 100 },
      ],
    });
    expect(restoreTarget({ default: 100, cluster: 0 }, { default: 100 }).changes).toEqual([]);
  });
});

/** `done`'s value, the clock moved a little at a time (it is held) until it settles. */
async function heldUntil(clock: Parameters<typeof stepClockUntil>[0], done: Promise<SimResult>): Promise<SimResult> {
  let result: SimResult | null = null;
  void done.then((r) => (result = r));
  return (await stepClockUntil(
    clock,
    () => result,
    (r) => r !== null,
    3_600_000,
  )) as SimResult;
}

describe('shardmove weights restore (one simulated clock, real HTTP)', () => {
  it('refuses during a run, restores after it, and a second call changes nothing', async () => {
    const { dir, sim, env } = await seededSimulation(
      'weights',
      { projects: 30, snippets: 3, groups: 2 },
      // The clock starts at the real time: the run's lease, read by the process below, is fresh.
      { moveDurationMs: 100, workers: 10, start: Date.now() },
    );
    const sandbox = sim;
    const plan = writePlan(dir, { concurrency: 3 });
    const before = await weightsOf(sandbox.url);
    const restore = (...args: string[]) => sim.shardmove(['weights', 'restore', plan, ...args], { cwd: dir, env });

    const nothing = await restore('--yes');
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('no checkpoint at');

    // The clock held (moved only by the test) from the run's start: caught mid-drain by construction.
    sim.clock.autoAdvance = false;
    const run = sim.start(['run', plan], { cwd: dir, env }).done;
    await stepClockUntil(
      sim.clock,
      async () => (await movesOf(sandbox.url, 'project')).length,
      (n) => n >= 3,
    );
    // Another process: the lock is a process's (this one's pid would be the run's own).
    const during = await runCli(['weights', 'restore', plan, '--yes'], { cwd: dir, env });
    expect(during.code, during.stderr).toBe(4);
    expect(during.stderr).toMatch(/locked by pid \d+/);
    const ended = await heldUntil(sim.clock, run);
    sim.clock.autoAdvance = true;
    expect(ended.code, ended.stderr).toBe(0);
    // The printed command names this plan and checkpoint, pasteable as it is.
    expect(ended.stdout).toMatch(/shardmove weights restore \S*plan\.yaml --state \S+\.db\)/);
    const after = await weightsOf(sandbox.url);
    expect(positive(after)).toEqual({ cluster: 100 });
    expect(positive(before)).not.toEqual(positive(after));

    // No terminal to ask and no --yes: refused, nothing written, not even to the checkpoint or
    // beside it (the preview takes no lock and opens no log).
    const state = filesOf(join(dir, 'state'));
    const unasked = await restore();
    expect(unasked.code).toBe(2);
    expect(unasked.stdout).toMatch(/storage\s+now\s+restored/);
    expect(unasked.stderr).toContain('pass --yes');
    expect(await weightsOf(sandbox.url)).toEqual(after);
    expect(filesOf(join(dir, 'state'))).toEqual(state);

    const restored = await restore('--yes');
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toMatch(/cluster\s+100\s+->\s+0/);
    expect(restored.stdout).toContain('restored: repository_storages_weighted is');
    const back = await weightsOf(sandbox.url);
    expect(positive(back)).toEqual(positive(before));

    const again = await restore('--yes');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('nothing to change');
    expect(await weightsOf(sandbox.url)).toEqual(back);

    const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
    const events = store.readEvents(0, 100_000);
    store.close();
    expect(events.filter((e) => e.type === 'weights.restored')).toHaveLength(1);
    expect(
      events.filter((e) => e.type === 'http.mutating' && (e.data as { method?: string }).method === 'PUT'),
    ).toHaveLength(2);
  });
});
