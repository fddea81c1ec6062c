/**
 * Additions to the in-process harness for the tests of the `sandbox` command's flags: the
 * `shardmove sandbox ...` command line run in this process (cli/main.ts runCommandLine, as the
 * executable runs it) on the system clock, ready once it printed its `ready` line, stopped as
 * SIGTERM stops the executable (the signal of its context) and waited for when the test ends; and
 * a sandbox in this process behind a hold proxy, for tests of the `shardmove` process against it.
 */
import { rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import { onTestFinished } from 'vitest';
import { runCommandLine } from '../../src/cli/main.js';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox, SandboxOptions } from '../../src/sandbox/index.js';
import { tempDir, writeSeed } from './cli-harness.js';
import { startHoldProxy } from './hold-proxy.js';
import type { HoldProxy } from './hold-proxy.js';

export interface SandboxHere {
  url: string;
  /** Stops it (as SIGTERM does) and waits for it to end; its exit code. */
  stop(): Promise<number>;
}

/**
 * Starts `shardmove sandbox --port 0 ARGS` in this process; resolves once it listens, fails if it
 * ends first. Its log (pino on fd 2) is silenced unless LOG_LEVEL says otherwise.
 */
export async function sandboxCommandHere(args: string[]): Promise<SandboxHere> {
  const controller = new AbortController();
  let ready: (url: string) => void = () => undefined;
  const url = new Promise<string>((r) => (ready = r));
  let out = '';
  const stdout = new Writable({
    write(chunk, _encoding, done) {
      out += String(chunk);
      const line = out.split('\n').find((l) => l.includes('"ready"'));
      if (line) ready((JSON.parse(line) as { url: string }).url);
      done();
    },
  });
  const stderr = new Writable({ write: (_c, _e, done) => done() });
  const ended = runCommandLine(['sandbox', '--port', '0', ...args], {
    stdout,
    stderr,
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' },
    cwd: process.cwd(),
    signal: controller.signal,
  });
  const stop = async () => {
    controller.abort(new Error('received SIGTERM'));
    return ended;
  };
  onTestFinished(async () => {
    await stop();
  });
  const first = await Promise.race([url, ended.then((code) => ({ code }))]);
  if (typeof first !== 'string') throw new Error(`the sandbox command ended with ${first.code} before it listened`);
  return { url: first, stop };
}

/**
 * As `startProxiedSandbox` (./hold-proxy.ts) with the sandbox in this process on the system clock
 * (for tests whose subject is the `shardmove` process, not the sandbox's): a seeded sandbox with
 * `options`, a hold proxy in front of it, a temporary directory; gone when the test ends.
 */
export async function proxiedSandboxHere(
  prefix: string,
  options: Omit<SandboxOptions, 'seed'>,
  counts: Parameters<typeof writeSeed>[1],
): Promise<{ dir: string; sandbox: RunningSandbox; proxy: HoldProxy }> {
  const dir = tempDir(prefix);
  const sandbox = await startSandbox({ ...options, seed: writeSeed(dir, counts) });
  const proxy = await startHoldProxy(sandbox.url);
  onTestFinished(async () => {
    await proxy.close();
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, sandbox, proxy };
}
