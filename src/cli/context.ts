import { DEFAULT_WIDTH } from '../report/wrap.js';

/**
 * What main.ts hands every command: the process's streams and environment, and a signal that fires
 * on SIGINT, SIGTERM or SIGHUP. Commands never read process.argv/env or call process.exit themselves.
 */
import type { Clock } from '../shared/clock.js';
import { systemClock } from '../shared/clock.js';
export interface CommandContext {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /**
   * Standard input: confirmations (`weights restore`, `unlock`; absent or not a TTY: nobody to ask)
   * and secrets piped in (`shardmove token`).
   */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  /** The environment, for ${VAR} expansion in plans. */
  env: Readonly<Record<string, string | undefined>>;
  /** Working directory that relative paths resolve against. */
  cwd: string;
  /** Aborted on the first SIGINT, SIGTERM or SIGHUP. */
  signal: AbortSignal;
  /**
   * The clock of the command's run and its waits; the system clock when absent (the executable
   * never sets it: tests run commands in-process on a simulated one).
   */
  clock?: Clock;
}

/** What a run of the runtime takes of the command's process, as one spread (`run`, `revert`, `copy`). */
export function processOf(ctx: CommandContext): Pick<CommandContext, 'env' | 'cwd' | 'signal' | 'stdout' | 'stderr'> {
  return { env: ctx.env, cwd: ctx.cwd, signal: ctx.signal, stdout: ctx.stdout, stderr: ctx.stderr };
}

/** The narrowest width a text output is wrapped at: on a narrower terminal, lines are let wrap by it. */
const NARROWEST = 40;

/**
 * The width the text outputs (the final summary, `validate`'s summary) wrap at: the terminal's
 * columns when standard output is a terminal, 80 in a pipe or a file (what a reader of a log or a
 * mail expects), never under 40 columns.
 */
export function textWidth(stdout: { isTTY?: boolean; columns?: number }): number {
  if (stdout.isTTY && stdout.columns && stdout.columns > 0) return Math.max(NARROWEST, stdout.columns);
  return DEFAULT_WIDTH;
}

/** The defaults of `run`'s and `revert`'s flags that take a value (a command printed to continue leaves them out). */
export const FLAG_DEFAULTS = { lease: '60s', eventsInterval: '30s' } as const;

/** Documented exit codes (README: Exit codes). */
export const EXIT = {
  ok: 0,
  failed: 1,
  invalid: 2,
  quarantined: 3,
  refused: 4,
  leaseLost: 5,
  stopped: 6,
  outage: 7,
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The command's clock: the one a test gives (ctx.clock), else the system's. */
export function clockOf(ctx: Pick<CommandContext, 'clock'>): Clock {
  return ctx.clock ?? systemClock;
}
