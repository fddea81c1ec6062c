/**
 * Processes of the torture: the sandbox (`shardmove sandbox --db FILE ...`) and the orchestrator
 * (`shardmove run PLAN --state FILE`), each a separate process so SIGKILL hits them as it would in
 * production. The sandbox's fault counters are read from its log lines (`fault counts`), since a
 * killed process cannot be asked afterwards.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const BIN = join(ROOT, 'bin', 'shardmove');

export interface SandboxProc {
  url: string;
  port: number;
  /** Its process id (to stop it with SIGSTOP and go on with SIGCONT). */
  pid: number;
  /** The last fault counters this incarnation logged. */
  counts(): Record<string, number>;
  /** Stops it with `signal` and waits for the exit. */
  stop(signal: NodeJS.Signals): Promise<void>;
  exited(): boolean;
}

/** Starts the sandbox and waits for its JSON ready line; `port` 0 picks a free one. */
export async function startSandboxProc(args: string[], port: number, env: NodeJS.ProcessEnv): Promise<SandboxProc> {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', String(port), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...env, LOG_LEVEL: 'info' },
  });
  let counts: Record<string, number> = {};
  let stderrTail = '';
  createInterface({ input: child.stderr! }).on('line', (line) => {
    stderrTail = `${stderrTail}\n${line}`.slice(-4000);
    if (!line.includes('fault counts')) return;
    try {
      const rec = JSON.parse(line) as { faults?: Record<string, number> };
      if (rec.faults) counts = rec.faults;
    } catch {
      // not a JSON log line
    }
  });
  const url = await new Promise<string>((done, fail) => {
    const timer = setTimeout(() => fail(new Error('sandbox did not start within 30 s')), 30_000);
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => {
      clearTimeout(timer);
      try {
        done((JSON.parse(line) as { url: string }).url);
      } catch (err) {
        fail(err as Error);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`sandbox exited with ${code} before it was ready:${stderrTail}`));
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    pid: child.pid ?? 0,
    counts: () => ({ ...counts }),
    exited: () => child.exitCode !== null || child.signalCode !== null,
    stop: (signal) => stopChild(child, signal),
  };
}

/**
 * Starts the sandbox again on `port` (where the plan points), retrying while the old process's
 * port is still being let go; gives up after 10 tries half a second apart.
 */
export async function restartSandboxOn(args: string[], port: number, env: NodeJS.ProcessEnv): Promise<SandboxProc> {
  for (let tries = 0; ; tries++) {
    try {
      return await startSandboxProc(args, port, env);
    } catch (err) {
      if (tries >= 10) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) return done();
    // 'close' comes after the last stderr line (the final fault counters), 'exit' may come before.
    child.once('close', () => done());
    child.kill(signal);
  });
}

export interface RunResult {
  /** Exit code, or null when a signal ended it. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface RunProc {
  done: Promise<RunResult>;
  kill(signal: NodeJS.Signals): void;
}

/** Starts `shardmove run PLAN --state FILE` with the credentials in `env` (never in argv). */
export function startRun(plan: string, state: string, cwd: string, env: NodeJS.ProcessEnv): RunProc {
  const t0 = performance.now();
  const child = spawn(process.execPath, [BIN, 'run', plan, '--state', state], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c) => (stdout += String(c)));
  child.stderr?.on('data', (c) => (stderr = `${stderr}${String(c)}`.slice(-20_000)));
  const done = new Promise<RunResult>((ok) => {
    child.once('exit', (code, signal) => ok({ code, signal, stdout, stderr, ms: performance.now() - t0 }));
  });
  return { done, kill: (signal) => void (child.exitCode === null && child.signalCode === null && child.kill(signal)) };
}
