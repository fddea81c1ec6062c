/**
 * Additions to the in-process harness (./sim-harness.ts) for the tests of reviewed lists and the
 * twin that moved onto it from sandbox processes: the sandbox of a simulation started again on its
 * address, its database and its clock with other options (as a test stopped a sandbox process and
 * started another with `--broken-items` on the same `--port` and `--db`), and a wait for something
 * the sandbox does by itself (a move someone else asked for) that moves the simulated clock on.
 */
import { rmSync } from 'node:fs';
import { expect, onTestFinished, vi } from 'vitest';
import type { Document } from 'yaml';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox, SandboxOptions } from '../../src/sandbox/index.js';
import { sandboxEnv, tempDir, writeChangedSeed } from './cli-harness.js';
import { runToEnd, startSimulation } from './sim-harness.js';
import type { SimCommand, SimResult, Simulation } from './sim-harness.js';

/**
 * Closes `current` (the simulation's sandbox or one this started before) and starts a sandbox on
 * its port and the simulation's clock with `options` (seed, database, faults): the same instance
 * at the same address, as a sandbox process stopped and started again with other flags. Closed
 * when the test ends.
 */
export async function restartSandbox(
  sim: Simulation,
  current: RunningSandbox,
  options: Omit<SandboxOptions, 'clock' | 'port'>,
): Promise<RunningSandbox> {
  const port = Number(new URL(current.url).port);
  await current.close();
  const sandbox = await startSandbox({ ...options, port, clock: sim.clock });
  onTestFinished(() => sandbox.close());
  return sandbox;
}

/**
 * Moves the simulation's clock on `stepMs` at a time (firing what falls due) until `done()` holds
 * or `steps` steps have passed: for what the sandbox does on its own clock while no command runs.
 */
export async function advanceUntil(sim: Simulation, done: () => boolean, stepMs = 25, steps = 200): Promise<void> {
  for (let i = 0; i < steps && !done(); i++) await sim.clock.advanceAsync(stepMs);
}

/**
 * Starts `shardmove ARGS` on the simulation with the clock held below `moveMs` (the sandbox's move
 * duration) from the start, firing each timer due before that as soon as the work before it is
 * done, so no move the command starts can end before `ready()` is seen; then calls `then` with the
 * command going on (to interrupt it, or to change the instance under it), and lets the clock run
 * by itself again until the command ends.
 */
export async function holdUntilSim(
  sim: Simulation,
  args: string[],
  opts: { cwd: string; env: Record<string, string> },
  ready: () => Promise<boolean>,
  moveMs: number,
  then: (run: SimCommand) => void,
): Promise<SimResult> {
  const { clock } = sim;
  const holdAt = clock.now() + moveMs - 1;
  clock.autoAdvance = false;
  try {
    const run = sim.start(args, opts);
    await vi.waitFor(
      async () => {
        const due = clock.nextDue();
        if (due !== null && due <= holdAt) {
          await clock.advanceTo(due);
          throw new Error('the clock is still moving towards the first move that could end');
        }
        expect(await ready()).toBe(true);
      },
      { timeout: 30_000, interval: 1 },
    );
    then(run);
    clock.autoAdvance = true;
    return await runToEnd(clock, run);
  } finally {
    clock.autoAdvance = true;
  }
}

/**
 * As `holdUntilSim`, interrupting the command (as Ctrl-C does) once `ready()` holds: as a test
 * sends SIGINT to a process once the sandbox's records show what it waited for.
 */
export function interruptWhenSim(
  sim: Simulation,
  args: string[],
  opts: { cwd: string; env: Record<string, string> },
  ready: () => Promise<boolean>,
  moveMs: number,
): Promise<SimResult> {
  return holdUntilSim(sim, args, opts, ready, moveMs, (run) => run.interrupt());
}

/**
 * A simulation on a seed of the test's own (the small seed changed by `change`, as
 * `startSeededSandbox` of ./cli-harness.ts makes it) in a fresh temporary directory (removed when
 * the test ends), with the sandbox's `options`, and the environment a run against it takes.
 */
export async function changedSimulationWith(
  name: string,
  counts: { projects: number; snippets: number; groups: number },
  change: (seed: Document) => void,
  options: Omit<SandboxOptions, 'clock' | 'seed'>,
): Promise<{ sim: Simulation; dir: string; env: Record<string, string> }> {
  const dir = tempDir(name);
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const sim = await startSimulation({ ...options, seed: writeChangedSeed(dir, counts, change) });
  return { sim, dir, env: sandboxEnv(sim.url) };
}
