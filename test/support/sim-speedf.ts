/**
 * Additions to the in-process harness (./sim-harness.ts) for tests that restart their sandbox:
 * one sandbox on a database file and a fixed port, restarted with other faults on the same
 * simulated clock (as a sandbox process stopped and started again on `--port P --db F` is), and
 * `shardmove` command lines on that clock; a sandbox clock that stands still while the
 * simulation's runs (a GitLab whose queue does not move), then runs at a rate of it.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox, SandboxOptions } from '../../src/sandbox/index.js';
import { sleepOn } from '../../src/shared/clock.js';
import type { Clock } from '../../src/shared/clock.js';
import { tempDir, writeSeed } from './cli-harness.js';
import { FakeClock } from './fake-clock.js';
import { SIM_START } from './sim-harness.js';
import type { Simulation } from './sim-harness.js';
import { commandsOn } from './sim-harness.js';

export interface RestartableSimulation extends Pick<Simulation, 'start' | 'shardmove'> {
  clock: FakeClock;
  dir: string;
  /** The sandbox's database file. */
  db: string;
  /**
   * Stops the sandbox running now, if any, and starts it again on the same database, port and
   * clock with `faults` (none when empty).
   */
  restart(faults?: SandboxOptions['faults']): Promise<RunningSandbox>;
}

/**
 * A sandbox seeded with `counts` in a fresh temporary directory on a database file (moves of 20 ms
 * of the simulated clock unless `options` say otherwise), not started until `restart`; the
 * sandbox and the directory are gone when the test ends.
 */
export function restartableSimulation(
  name: string,
  counts: Parameters<typeof writeSeed>[1],
  options: Omit<SandboxOptions, 'clock' | 'seed' | 'db' | 'port' | 'faults'> = {},
): RestartableSimulation {
  const dir = tempDir(name);
  const db = join(dir, 'sandbox.db');
  const seed = writeSeed(dir, counts);
  const clock = new FakeClock(SIM_START);
  let current: RunningSandbox | null = null;
  let port = 0;
  onTestFinished(async () => {
    await current?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const restart = async (faults: SandboxOptions['faults'] = {}): Promise<RunningSandbox> => {
    await current?.close();
    current = null;
    current = await startSandbox({ moveDurationMs: 20, ...options, seed, db, port, faults, clock });
    port = current.port;
    return current;
  };
  return { ...commandsOn(clock), clock, dir, db, restart };
}

/** A sandbox's clock that stands still or runs at a rate of a simulation's clock, as the test says. */
export interface HeldClock extends Clock {
  /** Moves this clock `ms` forward at once. */
  shift(ms: number): void;
  /** From now on this clock runs `rate` times as fast as the simulation's (0: it stands still). */
  run(rate: number): void;
}

/**
 * A clock for a sandbox beside a simulation, standing still at `start` until the test moves it
 * (`shift`) or lets it run (`run`): a GitLab whose queue does not move while the orchestrator's
 * polls and stuck limits go on, on the simulation's clock. Its timers are the simulation's (scaled
 * by the rate while it runs; while it stands still they fire as if it ran at the simulation's pace
 * and find that nothing is due, as real timers beside a frozen wall time do).
 */
export function heldClock(sim: FakeClock, start: number): HeldClock {
  let base = start;
  let simBase = sim.now();
  let rate = 0;
  const now = () => base + (sim.now() - simBase) * rate;
  const scaled = (ms: number) => (rate === 0 ? ms : Math.ceil(ms / rate));
  const clock: HeldClock = {
    now,
    sleep: (ms, signal) => sleepOn(clock, ms, signal),
    setTimeout: (fn, ms) => sim.setTimeout(fn, scaled(ms)),
    clearTimeout: (timer) => sim.clearTimeout(timer),
    setInterval: (fn, ms) => sim.setInterval(fn, scaled(ms)),
    clearInterval: (timer) => sim.clearInterval(timer),
    shift(ms) {
      base = now() + ms;
      simBase = sim.now();
    },
    run(r) {
      base = now();
      simBase = sim.now();
      rate = r;
    },
  };
  return clock;
}
