/**
 * Additions to the in-process harness for the tests of the `sandbox` command's flags: the
 * `shardmove sandbox ...` command line run in this process (cli/main.ts runCommandLine, as the
 * executable runs it) on the system clock, ready once it printed its `ready` line, stopped as
 * SIGTERM stops the executable (the signal of its context) and waited for when the test ends.
 */
import { Writable } from 'node:stream';
import { onTestFinished } from 'vitest';
import { runCommandLine } from '../../src/cli/main.js';

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
