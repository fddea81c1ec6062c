/**
 * Additions to the in-process harness (./sim-harness.ts) for the tests of reviewed lists and the
 * twin that moved onto it from sandbox processes: the sandbox of a simulation started again on its
 * address, its database and its clock with other options (as a test stopped a sandbox process and
 * started another with `--broken-items` on the same `--port` and `--db`), and a wait for something
 * the sandbox does by itself (a move someone else asked for) that moves the simulated clock on.
 */
import { expect, onTestFinished, vi } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox, SandboxOptions } from '../../src/sandbox/index.js';
import type { SimResult, Simulation } from './sim-harness.js';

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
 * Starts `shardmove ARGS` on the simulation and interrupts it (as Ctrl-C does) once `ready()`
 * holds, as a test sends SIGINT to a process once the sandbox's records show what it waited for.
 * As `interruptAtMovesInFlightSim` (./sim-speeda.ts) does, the clock is held below `moveMs` (the
 * sandbox's move duration) from the start, so no move the command starts can end before `ready()`
 * is seen; once interrupted, the command runs by itself to its end.
 */
export async function interruptWhenSim(
  sim: Simulation,
  args: string[],
  opts: { cwd: string; env: Record<string, string> },
  ready: () => Promise<boolean>,
  moveMs: number,
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
    run.interrupt();
    clock.autoAdvance = true;
    // Whatever sleep began while the clock was held ends as it would have.
    for (let ended = false; !ended;) {
      const due = clock.nextDue();
      const step = due === null ? new Promise<void>((r) => setImmediate(r)) : clock.advanceTo(due);
      ended = await Promise.race([run.done.then(() => true), step.then(() => false)]);
    }
    return await run.done;
  } finally {
    clock.autoAdvance = true;
  }
}
