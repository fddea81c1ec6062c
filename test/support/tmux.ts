/**
 * A real terminal for the tests of what an operator sees: a command run in a tmux pane of a given
 * size, on a tmux server of its own (a private socket in a temporary directory, killed after the
 * test), read back as the screen shows it (`capture-pane`: the terminal's rendering, not the bytes
 * written), typed at with `send-keys`. `.ci/run` installs tmux on CI; elsewhere a machine without it
 * skips these tests with a message, but under CI=true a missing tmux is a failure.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

const EXIT = /^\[exit (\d+)\]$/m;

/** Why the terminal tests cannot run here, or null when they can (CI without tmux throws). */
export function tmuxSkipReason(env: Readonly<Record<string, string | undefined>> = process.env): string | null {
  if (spawnSync('tmux', ['-V']).status === 0) return null;
  const why = 'no tmux binary on PATH (apt-get install tmux)';
  if (env.CI === 'true') throw new Error(`CI=true: the terminal tests must run, but ${why}`);
  return why;
}

export interface Pane {
  /** The screen as the terminal renders it, trailing blank lines dropped. */
  screen(): string;
  /** Types `keys` (tmux key names: `y`, `Enter`, `C-c`). */
  send(...keys: string[]): void;
  /** Polls the screen until `test` passes (or fails after `timeoutMs` with the screen in the message). */
  waitFor(test: RegExp | ((screen: string) => boolean), timeoutMs?: number): Promise<string>;
  /** True once the command in the pane has exited (the pane stays, to be read; its last line is `[exit N]`). */
  exited(): boolean;
  /** The command's exit status once it exited. */
  status(): number | null;
  /** Waits until the command exited; the screen then, its `[exit N]` line included. */
  waitForExit(timeoutMs?: number): Promise<string>;
}

/**
 * Runs `argv` in a new `columns` x `rows` pane with `env` (nothing else of the test's environment
 * but PATH and HOME), in `cwd`. The pane stays after the command exits, so its last screen is read.
 */
export function startPane(
  argv: readonly string[],
  opts: { columns: number; rows?: number; cwd: string; env?: Record<string, string> },
): Pane {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-tmux-'));
  const socket = join(dir, 'tmux.sock');
  // The pane stays once its command exited, so that its last screen and exit status can be read.
  const conf = join(dir, 'tmux.conf');
  writeFileSync(conf, 'set -g remain-on-exit on\nset -g status off\n');
  const tmux = (...args: string[]) => execFileSync('tmux', ['-S', socket, ...args], { encoding: 'utf8' });
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? dir,
    TERM: 'xterm-256color',
    ...opts.env,
  };
  tmux(
    '-f',
    conf,
    'new-session',
    '-d',
    '-x',
    String(opts.columns),
    '-y',
    String(opts.rows ?? 30),
    '-c',
    opts.cwd,
    ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    // The exit status is printed by a shell around the command: tmux may mark a pane dead before
    // it has the status of its process.
    'sh',
    '-c',
    // A no-op trap (not an ignored signal, which the command would inherit): Ctrl-C reaches the
    // command, and the shell outlives it to print its status.
    'trap : INT; "$@"; echo "[exit $?]"',
    'sh',
    ...argv,
  );
  onTestFinished(() => {
    spawnSync('tmux', ['-S', socket, 'kill-server']);
    rmSync(dir, { recursive: true, force: true });
  });
  const screen = () => tmux('capture-pane', '-p').replace(/\s+$/, '');
  const exit = () => EXIT.exec(screen());
  const pane: Pane = {
    screen,
    send: (...keys) => void tmux('send-keys', ...keys),
    exited: () => exit() !== null,
    status: () => {
      const m = exit();
      return m ? Number(m[1]) : null;
    },
    waitForExit: (timeoutMs) => pane.waitFor(EXIT, timeoutMs),
    async waitFor(test, timeoutMs = 20_000) {
      const ok = typeof test === 'function' ? test : (s: string) => test.test(s);
      const until = Date.now() + timeoutMs;
      for (;;) {
        const s = screen();
        if (ok(s)) return s;
        if (Date.now() > until) throw new Error(`the screen never showed ${String(test)}; it shows:\n${s}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
  return pane;
}
