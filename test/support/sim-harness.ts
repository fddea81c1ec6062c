/**
 * The orchestrator and the sandbox in this process, on ONE simulated clock (Temporal's
 * time-skipping test server, xstate's SimulatedClock): `shardmove run` goes through the same
 * command line as the executable (cli/main.ts runCommandLine) against a real sandbox on port 0,
 * over real HTTP, but every wait of both sides (polls, backoff, token lifetimes, leases, the
 * sandbox's move durations) is a timer of the one FakeClock. A sleep moves the clock to its end
 * once the work already queued has run, firing on the way whatever falls due (a move that
 * finishes, a lease renewal, a progress line), so a run that spans hours of its clock takes the
 * milliseconds its own work takes.
 *
 * What it does not give: separate processes (a kill, a frozen process, a second host); the tests
 * of those start the compiled CLI (./cli-harness.ts).
 */
import { Writable } from 'node:stream';
import { onTestFinished } from 'vitest';
import { runCommandLine } from '../../src/cli/main.js';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox, SandboxOptions } from '../../src/sandbox/index.js';
import type { Clock } from '../../src/shared/clock.js';
import { FakeClock } from './fake-clock.js';

/** What one command gave: its exit code and everything it printed. */
export interface SimResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A command going on: what it printed so far, and its end. */
export interface SimCommand {
  done: Promise<SimResult>;
  stdout(): string;
  stderr(): string;
  /** Interrupts it as Ctrl-C does (the signal of its context). */
  interrupt(): void;
}

export interface Simulation {
  clock: FakeClock;
  sandbox: RunningSandbox;
  url: string;
  /** Starts one `shardmove` command line in this process on the simulated clock. */
  start(args: string[], opts: { cwd: string; env?: Record<string, string | undefined> }): SimCommand;
  /** Runs one `shardmove` command line to its end: `start(...).done`. */
  shardmove(args: string[], opts: { cwd: string; env?: Record<string, string | undefined> }): Promise<SimResult>;
}

/** 2026-06-01T00:00:00Z, a Monday: the simulated clock's start unless a test gives one. */
export const SIM_START = Date.parse('2026-06-01T00:00:00Z');

/** A stream that keeps what is written to it. */
function capture(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}

/**
 * `shardmove` command lines in this process on `clock`: the harness's `start` and `shardmove`, also
 * for a clock a test made itself (whose sandboxes it closes).
 */
export function commandsOn(clock: Clock): Pick<Simulation, 'start' | 'shardmove'> {
  const start: Simulation['start'] = (args, opts) => {
    const out = capture();
    const err = capture();
    const controller = new AbortController();
    const done = runCommandLine(args, {
      stdout: out.stream,
      stderr: err.stream,
      env: { ...opts.env },
      cwd: opts.cwd,
      signal: controller.signal,
      clock,
    }).then((code) => ({ code, stdout: out.text(), stderr: err.text() }));
    return {
      done,
      stdout: out.text,
      stderr: err.text,
      interrupt: () => controller.abort(new Error('received SIGINT')),
    };
  };
  return { start, shardmove: (args, opts) => start(args, opts).done };
}

/**
 * Starts a sandbox on a fresh simulated clock (closed after the test that started it) and gives
 * the way to run commands against it on the same clock.
 */
export async function startSimulation(
  options: Omit<SandboxOptions, 'clock'> & { start?: number } = {},
): Promise<Simulation> {
  const { start: startAt = SIM_START, ...sandboxOptions } = options;
  const clock = new FakeClock(startAt);
  const sandbox = await startSandbox({ ...sandboxOptions, clock });
  onTestFinished(() => sandbox.close());
  return { clock, sandbox, url: sandbox.url, ...commandsOn(clock) };
}

/**
 * Lets a command whose clock was held or moved by hand run to its end: whatever sleep began while
 * the clock stood still ends as it would have, one due timer at a time, until the command ends.
 */
export async function runToEnd(clock: FakeClock, run: SimCommand): Promise<SimResult> {
  for (let ended = false; !ended;) {
    const due = clock.nextDue();
    const step = due === null ? new Promise<void>((r) => setImmediate(r)) : clock.advanceTo(due);
    ended = await Promise.race([run.done.then(() => true), step.then(() => false)]);
  }
  return await run.done;
}
