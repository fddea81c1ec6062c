/**
 * An addition to the in-process harness (./sim-harness.ts): `shardmove sandbox ARGS` itself run in
 * this process on a simulated clock (cli/sandbox.ts gives the sandbox the command's clock), for a
 * test whose subject includes what the command makes of its flags (`--gitlab-version 16.5` is
 * 16.5.0), with the runs against it on the same clock; and a run interrupted at the first timer
 * after which its checkpoint shows what the test waits for.
 */
import { expect, onTestFinished, vi } from 'vitest';
import type { Clock } from '../../src/shared/clock.js';
import type { SimResult, Simulation } from './sim-harness.js';
import { commandsOn, runToEnd } from './sim-harness.js';

/**
 * Starts `shardmove sandbox ARGS` (add `--port 0`) on `clock` and waits for its ready line: its
 * URL. Interrupted (as Ctrl-C stops it) when the test ends, and it must then end with 0.
 */
export async function sandboxCommandOn(clock: Clock, args: string[], cwd: string): Promise<string> {
  const command = commandsOn(clock).start(['sandbox', ...args], { cwd, env: { LOG_LEVEL: 'warn' } });
  onTestFinished(async () => {
    command.interrupt();
    expect((await command.done).code, command.stderr()).toBe(0);
  });
  let url = '';
  await vi.waitFor(
    () => {
      const ready = /^\{"event":"ready","url":"([^"]+)"\}$/m.exec(command.stdout());
      if (ready === null) throw new Error(`shardmove sandbox is not ready: ${command.stdout()}${command.stderr()}`);
      url = ready[1]!;
    },
    { timeout: 30_000, interval: 5 },
  );
  return url;
}

/**
 * Starts `shardmove ARGS` on the simulation with the clock moved by hand, one timer at a time (the
 * work each fire starts given real turns to run before the next), and interrupts it (as Ctrl-C
 * does) at the first step after which `ready()` holds: as a test sends SIGINT to a process once
 * its checkpoint shows what it waited for, without the run racing past it on a clock that jumps.
 * The clock then runs by itself again until the command ends.
 */
export async function interruptOnceSim(
  sim: Simulation,
  args: string[],
  opts: { cwd: string; env: Record<string, string> },
  ready: () => Promise<boolean>,
): Promise<SimResult> {
  const { clock } = sim;
  clock.autoAdvance = false;
  try {
    const run = sim.start(args, opts);
    await vi.waitFor(
      async () => {
        if (await ready()) return;
        const due = clock.nextDue();
        if (due !== null) await clock.advanceTo(due);
        throw new Error('not ready yet: the clock moves on to the next timer');
      },
      { timeout: 30_000, interval: 1 },
    );
    run.interrupt();
    clock.autoAdvance = true;
    return await runToEnd(clock, run);
  } finally {
    clock.autoAdvance = true;
  }
}
