/** How many moves a run's checkpoint has in flight, read as `status` reads it. */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { expect } from 'vitest';
import { readStatus } from '../../src/runtime/status.js';
import { runCli } from './cli-harness.js';
import type { CliResult } from './cli-harness.js';
import { until } from './until.js';

/**
 * The moves in flight in the checkpoint at `file`; 0 while it does not exist or is still being
 * created by the run that is starting (a half-made file is no checkpoint yet, and polling goes on).
 */
export function movesInFlight(file: string): number {
  if (!existsSync(file)) return 0;
  try {
    return readStatus(file, Date.now()).kinds.reduce((n, k) => n + k.inFlight, 0);
  } catch {
    return 0;
  }
}

/**
 * Runs `shardmove ARGS` and sends it SIGINT once its checkpoint at `checkpoint` has exactly `n`
 * moves in flight (asserted): a run interrupted mid-drain, by construction. Returns how it ended.
 */
export async function interruptAtMovesInFlight(
  args: string[],
  opts: { cwd: string; env: Record<string, string> },
  checkpoint: string,
  n: number,
): Promise<CliResult> {
  let child: ChildProcess | undefined;
  const run = runCli(args, { ...opts, onStart: (c) => (child = c) });
  expect(
    await until(
      () => Promise.resolve(movesInFlight(checkpoint)),
      (k) => k === n,
      30_000,
    ),
  ).toBe(n);
  child!.kill('SIGINT');
  return run;
}
