/**
 * An addition to the in-process harness (./sim-harness.ts): `shardmove sandbox ARGS` itself run in
 * this process on a simulated clock (cli/sandbox.ts gives the sandbox the command's clock), for a
 * test whose subject includes what the command makes of its flags (`--gitlab-version 16.5` is
 * 16.5.0), with the runs against it on the same clock.
 */
import { expect, onTestFinished, vi } from 'vitest';
import type { Clock } from '../../src/shared/clock.js';
import { commandsOn } from './sim-speedb.js';

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
