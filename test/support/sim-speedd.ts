/**
 * Additions to the in-process harness (./sim-harness.ts) for the tests of reviewed lists and the
 * twin that moved onto it from sandbox processes: the sandbox of a simulation started again on its
 * address, its database and its clock with other options (as a test stopped a sandbox process and
 * started another with `--broken-items` on the same `--port` and `--db`), and a wait for something
 * the sandbox does by itself (a move someone else asked for) that moves the simulated clock on.
 */
import { onTestFinished } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox, SandboxOptions } from '../../src/sandbox/index.js';
import type { Simulation } from './sim-harness.js';

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
