/**
 * A checkpoint holds one kind of run (the hostile probe's worst find). A real run on a dry run's
 * checkpoint said "DRY RUN COMPLETE" and exited 0 with nothing moved; a dry run on an interrupted
 * real checkpoint restored the real snapshot and marked the real run failed. Both are now refused (exit 4) before
 * anything is written, judged from the sandbox's own move records and the checkpoint's rows.
 *
 * On the in-process harness (./support/sim-harness.ts): the sandbox and every command in this
 * process on one simulated clock; the interrupted run is interrupted as Ctrl-C does (the signal of
 * its context, exit 130) once its checkpoint has moves in flight, by construction rather than by a
 * race with real time. Nothing here is about the process boundary.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { allMovesOf, storagesOf, writePlan } from './support/cli-harness.js';
import { interruptAtMovesInFlightSim, seededSimulation } from './support/sim-speeda.js';

async function setup(name: string, options: { moveDurationMs: number; workers?: number }) {
  const { dir, sim, env } = await seededSimulation(name, { projects: 12, snippets: 3, groups: 2 }, options);
  return { sandbox: sim, dir, env, runCli: sim.shardmove };
}

/** Everything of the checkpoint a run could change: its snapshot, its event log, its item rows. */
function checkpointRows(file: string) {
  const store = openCheckpoint(file, { readOnly: true });
  try {
    return { run: store.loadRun(), events: store.readEvents(0, 1_000_000), mode: store.mode() };
  } finally {
    store.close();
  }
}

describe('one kind of run per checkpoint', () => {
  it("a real run on a finished dry run's --state refuses with exit 4, moves nothing and claims no success", async () => {
    const { sandbox, dir, env, runCli } = await setup('kind-dry-real', { moveDurationMs: 20 });
    const plan = writePlan(dir);
    const state = join(dir, 'my state.db');
    const dry = await runCli(['run', plan, '--dry-run', '--state', state], { cwd: dir, env });
    expect(dry.code, dry.stderr).toBe(0);
    const before = checkpointRows(state);
    expect(before.mode).toBe('dry-run');

    const real = await runCli(['run', plan, '--state', state], { cwd: dir, env });
    expect(real.code, real.stdout + real.stderr).toBe(4);
    expect(real.stderr).toContain('holds a dry run');
    expect(real.stdout).not.toContain('DRY RUN');
    expect(await allMovesOf(sandbox.url)).toEqual([]);
    expect(checkpointRows(state)).toEqual(before);

    // The way out the message names: the real run's own checkpoint moves everything.
    const own = await runCli(['run', plan], { cwd: dir, env });
    expect(own.code, own.stderr).toBe(0);
    const left = [...(await storagesOf(sandbox.url, 'projects')).values()].filter((s) => s !== 'cluster');
    expect(left).toEqual([]);
  });

  it(
    "a dry run on an interrupted real run's --state refuses with exit 4 and leaves it as it was; the real run then finishes",
    { timeout: 60_000 },
    async () => {
      const { sandbox, dir, env, runCli } = await setup('kind-real-dry', { moveDurationMs: 400, workers: 4 });
      const plan = writePlan(dir, { concurrency: 2 });
      const state = join(dir, 'state.db');
      // Interrupted once its moves are in flight: the real run is mid-drain.
      const real = await interruptAtMovesInFlightSim(
        sandbox,
        ['run', plan, '--state', state],
        { cwd: dir, env },
        state,
        2,
        400,
      );
      expect(real.code).toBe(130);
      const before = checkpointRows(state);
      expect(before.mode).toBe('run');
      const movesBefore = await allMovesOf(sandbox.url);

      const dry = await runCli(['run', plan, '--dry-run', '--state', state], { cwd: dir, env });
      expect(dry.code, dry.stdout + dry.stderr).toBe(4);
      expect(dry.stderr).toContain('holds a real run');
      expect(checkpointRows(state)).toEqual(before);
      expect((await allMovesOf(sandbox.url)).length).toBe(movesBefore.length);

      const resumed = await runCli(['run', plan, '--state', state], { cwd: dir, env });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).not.toContain('DRY RUN');
    },
  );

  it("weights restore refuses a dry run's checkpoint: a dry run changed no weights", async () => {
    const { dir, env, runCli } = await setup('kind-weights', { moveDurationMs: 20 });
    const plan = writePlan(dir);
    const state = join(dir, 'dry.db');
    expect((await runCli(['run', plan, '--dry-run', '--state', state], { cwd: dir, env })).code).toBe(0);
    const r = await runCli(['weights', 'restore', plan, '--state', state, '--yes'], { cwd: dir, env });
    expect(r.code, r.stdout + r.stderr).toBe(4);
    expect(r.stderr).toContain('holds a dry run');
  });
});
