/**
 * Small additions to the in-process harness (./sim-harness.ts) for the tests that moved onto it
 * from sandbox processes: a seeded simulation in a temporary directory (as `seededSandboxProcess`
 * and `startSeededSandbox` of ./cli-harness.ts give a sandbox process), a second sandbox on the
 * same simulated clock (a twin's), a run interrupted once its checkpoint has exactly `n` moves
 * in flight (as ./in-flight.ts does to a process with SIGINT), and a command line run in this
 * process without a simulation (`shardmove copy`, which talks to no instance).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { onTestFinished } from 'vitest';
import type { Document } from 'yaml';
import { runCommandLine } from '../../src/cli/main.js';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox, SandboxOptions } from '../../src/sandbox/index.js';
import { sandboxEnv, tempDir, writeChangedSeed, writeSeed } from './cli-harness.js';
import { movesInFlight } from './in-flight.js';
import { startSimulation } from './sim-harness.js';
import { holdUntilSim } from './sim-speedd.js';
import type { SimResult, Simulation } from './sim-harness.js';

type SimOptions = Parameters<typeof startSimulation>[0];

/**
 * A simulation seeded with `counts` in a fresh temporary directory (removed when the test ends),
 * and the environment a run against it takes.
 */
export async function seededSimulation(
  name: string,
  counts: Parameters<typeof writeSeed>[1],
  options: Omit<NonNullable<SimOptions>, 'seed'> = {},
): Promise<{ dir: string; sim: Simulation; env: Record<string, string> }> {
  const dir = tempDir(name);
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const sim = await startSimulation({ ...options, seed: writeSeed(dir, counts) });
  return { dir, sim, env: sandboxEnv(sim.url) };
}

/**
 * As `startSeededSandbox` (./cli-harness.ts), in this process: the small seed changed by `change`,
 * a database file, moves of 20 ms (of the simulated clock), 20 workers.
 */
export async function changedSimulation(
  name: string,
  counts: { projects: number; snippets: number; groups: number },
  change: (seed: Document) => void,
): Promise<{ sim: Simulation; dir: string; db: string; env: Record<string, string> }> {
  const dir = tempDir(name);
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'sandbox.db');
  const sim = await startSimulation({
    seed: writeChangedSeed(dir, counts, change),
    db,
    moveDurationMs: 20,
    workers: 20,
  });
  return { sim, dir, db, env: sandboxEnv(sim.url) };
}

/** Another sandbox on the simulation's clock (closed after the test), as a second sandbox process would be. */
export async function sandboxBeside(sim: Simulation, options: Omit<SandboxOptions, 'clock'>): Promise<RunningSandbox> {
  const sandbox = await startSandbox({ ...options, clock: sim.clock });
  onTestFinished(() => sandbox.close());
  return sandbox;
}

/**
 * Starts `shardmove ARGS` on the simulation and interrupts it (as Ctrl-C does) once its
 * checkpoint at `checkpoint` has exactly `n` moves in flight (asserted): a run interrupted
 * mid-drain, by construction. The clock is held below `moveMs` (the sandbox's move duration) from
 * the start, firing each timer due before that as soon as the work before it is done, so no move
 * the run starts can end before it is seen in flight; it runs by itself again once interrupted.
 */
export async function interruptAtMovesInFlightSim(
  sim: Simulation,
  args: string[],
  opts: { cwd: string; env: Record<string, string> },
  checkpoint: string,
  n: number,
  moveMs: number,
): Promise<SimResult> {
  return holdUntilSim(
    sim,
    args,
    opts,
    async () => movesInFlight(checkpoint) === n,
    moveMs,
    (run) => run.interrupt(),
  );
}

/**
 * One `shardmove` command line in this process (cli/main.ts runCommandLine, as the executable
 * runs it) on the system clock: its exit code and what it printed. For commands whose subject is
 * not a process of their own (no signal, no mount namespace); what they start (sh, ssh, rsync)
 * inherits this process's environment, as the executable's children inherit its own.
 */
export async function commandHere(
  args: string[],
  opts: { cwd: string; env?: Record<string, string | undefined> },
): Promise<SimResult> {
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[]) =>
    new Writable({
      write(chunk, _encoding, done) {
        into.push(String(chunk));
        done();
      },
    });
  const code = await runCommandLine(args, {
    stdout: sink(out),
    stderr: sink(err),
    env: { ...(opts.env ?? process.env) },
    cwd: opts.cwd,
    signal: new AbortController().signal,
  });
  return { code, stdout: out.join(''), stderr: err.join('') };
}
