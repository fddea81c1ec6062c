/**
 * Additions to the in-process harness (./sim-harness.ts) for tests that need more than one sandbox
 * on one simulated clock, a simulation outside a test's own life (the release matrix runs profiles
 * side by side, each released by its runner), or the words a shell makes of a printed command line.
 */
import { spawnSync } from 'node:child_process';
import { onTestFinished } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox, SandboxOptions } from '../../src/sandbox/index.js';
import type { Clock } from '../../src/shared/clock.js';

/** One more sandbox on a simulation's clock (another instance), closed when the test ends. */
export async function startSimSandbox(
  clock: Clock,
  options: Omit<SandboxOptions, 'clock'> = {},
): Promise<RunningSandbox> {
  const sandbox = await startSandbox({ ...options, clock });
  onTestFinished(() => sandbox.close());
  return sandbox;
}

/**
 * The arguments a POSIX shell makes of `line`, a `shardmove ...` command line as shardmove printed
 * it for the operator: what the program would get if the operator pasted it. `/bin/sh` splits and
 * unquotes it, with `shardmove` a shell function that prints its arguments (NUL after each).
 */
export function shellWords(line: string, cwd: string): string[] {
  if (!line.startsWith('shardmove ')) throw new Error(`not a shardmove command: ${line}`);
  const r = spawnSync('/bin/sh', ['-c', `shardmove() { printf '%s\\0' "$@"; }\n${line}`], { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`/bin/sh could not run ${JSON.stringify(line)}: ${r.stderr}`);
  return r.stdout.split('\0').slice(0, -1);
}
