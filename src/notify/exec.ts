/**
 * A command delivery: the plan's argv run without a shell, in the plan's directory, the event as
 * one JSON line on standard input and as `SHARDMOVE_*` variables. It runs in a process group of
 * its own, so the terminal's Ctrl-C does not cut a delivery short (the run's end waits for it) and
 * a time limit can end the command and every process it started: past it the group gets SIGTERM,
 * then SIGKILL. Exit 0 means delivered. Its output is read as it comes (a command that writes a
 * lot never blocks on a full pipe) and only its end is kept for the error message, scrubbed before
 * it is cut.
 *
 * The command inherits shardmove's environment less every variable that holds one of the run's
 * secrets (the instance token, say) and less any `SHARDMOVE_*` of its own.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { escapeControls } from '../report/escape.js';
import { scrubServerText } from '../secrets/registry.js';
import { systemClock } from '../shared/clock.js';
import type { Timer } from '../shared/clock.js';
import { spawnResult } from './policy.js';
import { notificationJson } from './text.js';
import type { DeliveryResult } from './policy.js';
import type { Delivery, NotifiedRun, Sender } from './types.js';

/** After SIGTERM, how long the group has before SIGKILL. */
const KILL_GRACE_MS = 2_000;
/** What is kept of a command's output, for its error message (characters, once scrubbed). */
const KEEP_CHARS = 2_048;
/**
 * What is read and held of the output's end before it is scrubbed: more than is kept, so a secret
 * that straddles the kept part's start is whole in what is scrubbed (and a piece of one at the
 * held part's own start is masked as a cut edge).
 */
const HOLD_BYTES = 8_192;

export interface ExecContext {
  /** The plan's directory: where commands run. */
  cwd: string;
  /** shardmove's environment. */
  env: Readonly<Record<string, string | undefined>>;
  /** SHARDMOVE_* variables every command gets besides the run's (tests). */
  base?: Readonly<Record<string, string>>;
}

/** The command sender. Groups still running when the process exits (a second Ctrl-C) are killed with it. */
export function createExecSender(ctx: ExecContext): Sender {
  const running = new Set<ChildProcess>();
  const inherited = inheritedEnv(ctx.env);
  const onExit = () => {
    for (const child of running) killGroup(child, 'SIGKILL');
  };
  process.on('exit', onExit);
  return {
    send: (d) => runOnce(d, ctx, inherited, running),
    close: async () => {
      process.off('exit', onExit);
      await Promise.resolve();
    },
  };
}

/** shardmove's environment less what holds a secret and less its own SHARDMOVE_* variables. */
export function inheritedEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined || k.startsWith('SHARDMOVE_')) continue;
    if (scrubServerText(v) !== v) continue;
    out[k] = v;
  }
  return out;
}

/**
 * Why the command could not run now (not found, not a file, not executable), or null. Said at the
 * run's start; its deliveries fail and wait in the checkpoint until it can.
 */
export function commandProblem(argv0: string, path: string | undefined): string | null {
  const candidates = argv0.includes('/')
    ? [argv0]
    : (path ?? '')
        .split(delimiter)
        .filter((d) => d !== '')
        .map((d) => join(d, argv0));
  for (const file of candidates) {
    try {
      if (!statSync(file).isFile()) continue;
      accessSync(file, constants.X_OK);
      return null;
    } catch {
      // Not this one.
    }
  }
  if (!argv0.includes('/')) return `${argv0} is not found on PATH`;
  try {
    const st = statSync(argv0);
    return st.isFile() ? `${argv0} is not executable (chmod +x it)` : `${argv0} is not a file`;
  } catch {
    return `${argv0} does not exist`;
  }
}

/** `exitCode` -> `SHARDMOVE_EXIT_CODE`. */
export const envName = (field: string) => `SHARDMOVE_${field.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()}`;

/** What every command gets besides its event's own fields (the worker sets the run's, a delivery the rest). */
export const HOOK_VARIABLES = [
  'SHARDMOVE_EVENT',
  'SHARDMOVE_ATTEMPT',
  'SHARDMOVE_TEXT',
  'SHARDMOVE_PLAN',
  'SHARDMOVE_PLAN_FILE',
  'SHARDMOVE_CHECKPOINT',
  'SHARDMOVE_HOST',
  'SHARDMOVE_INSTANCE',
] as const;

// eslint-disable-next-line no-control-regex -- an environment value cannot hold NUL
const noNul = (v: string) => v.replace(/\u0000/g, '');

/** What names the run in a command's variables: the `run` object of its standard input. */
export function runEnv(run: NotifiedRun): Record<string, string> {
  return {
    SHARDMOVE_PLAN: noNul(run.plan),
    SHARDMOVE_PLAN_FILE: noNul(run.planFile),
    SHARDMOVE_CHECKPOINT: noNul(run.checkpoint),
    SHARDMOVE_HOST: noNul(run.host),
    SHARDMOVE_INSTANCE: noNul(run.instance),
  };
}

/**
 * The variables a delivery adds: the run's, the event's type, its every plain field, the attempt
 * and the line. The run's come last: no event field may say another plan or host.
 */
export function eventEnv(d: Delivery, base: Readonly<Record<string, string>> = {}): Record<string, string> {
  const out: Record<string, string> = { ...base };
  for (const [k, v] of Object.entries(d.event)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[envName(k)] = noNul(String(v));
  }
  Object.assign(out, runEnv(d.run));
  out['SHARDMOVE_EVENT'] = d.event.type;
  out['SHARDMOVE_ATTEMPT'] = String(d.attempt);
  out['SHARDMOVE_TEXT'] = noNul(d.line);
  return out;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Gone already.
  }
}

function runOnce(
  d: Delivery,
  ctx: ExecContext,
  inherited: Record<string, string>,
  running: Set<ChildProcess>,
): Promise<DeliveryResult> {
  const plan = d.target.plan;
  if (plan.kind !== 'exec') return Promise.resolve({ ok: false, permanent: true, error: 'not a command' });
  const argv = plan.argv;
  return new Promise((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(argv[0]!, argv.slice(1), {
        cwd: ctx.cwd,
        env: { ...inherited, ...eventEnv(d, ctx.base) },
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (err) {
      resolve(spawnResult((err as { code?: string }).code, (err as Error).message));
      return;
    }
    running.add(child);
    const output = keepTail();
    child.stdout!.on('data', output.add);
    child.stderr!.on('data', output.add);
    // A command that does not read its input ends the pipe early: that is its business.
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(`${notificationJson(d.event, d.run)}\n`);
    let killedFor: string | null = null;
    // A child process lives in real time, whatever clock the run is on: its timeout and the grace
    // before SIGKILL are real timers (the system clock's, on purpose).
    let grace: Timer | undefined;
    const stop = (why: string) => {
      if (killedFor) return;
      killedFor = why;
      killGroup(child, 'SIGTERM');
      grace = systemClock.setTimeout(() => killGroup(child, 'SIGKILL'), KILL_GRACE_MS);
      grace.unref();
    };
    const timer = systemClock.setTimeout(
      () => stop(`no end within ${plan.timeoutMs / 1000}s: killed with its process group`),
      plan.timeoutMs,
    );
    const onAbort = () => {
      stop('the run ended before it finished: killed with its process group');
      killGroup(child, 'SIGKILL');
    };
    d.signal.addEventListener('abort', onAbort, { once: true });
    let settled = false;
    const finish = (result: DeliveryResult) => {
      if (settled) return;
      settled = true;
      systemClock.clearTimeout(timer);
      systemClock.clearTimeout(grace);
      d.signal.removeEventListener('abort', onAbort);
      running.delete(child);
      // What it left behind holding our pipes is not waited for.
      child.stdout!.destroy();
      child.stderr!.destroy();
      resolve(result);
    };
    child.on('error', (err) => finish(spawnResult((err as { code?: string }).code, err.message)));
    child.on('exit', (code, signal) => {
      if (killedFor) killGroup(child, 'SIGKILL');
      if (code === 0 && !killedFor) return finish({ ok: true });
      const said = output.text();
      const how = killedFor ?? (code !== null ? `exit ${code}` : `killed by ${signal}`);
      finish({ ok: false, permanent: false, error: `${how}${said ? `: ${said}` : ''}` });
    });
  });
}

/**
 * The end of what a command writes, for its error message: the last HOLD_BYTES held, scrubbed,
 * then the last KEEP_CHARS of that kept, on one line. Scrubbed before it is cut, so no cut leaves
 * a piece of a secret behind.
 */
function keepTail(): { add: (chunk: Buffer) => void; text: () => string } {
  let held = Buffer.alloc(0);
  let cut = false;
  return {
    add: (chunk) => {
      held = Buffer.concat([held, chunk]);
      if (held.length > HOLD_BYTES) {
        held = held.subarray(held.length - HOLD_BYTES);
        cut = true;
      }
    },
    text: () => {
      const t = escapeControls(scrubServerText(held.toString('utf8'), [], { start: cut }))
        .replace(/\s+/g, ' ')
        .trim();
      if (t.length <= KEEP_CHARS) return cut ? `...${t}` : t;
      return `...${t.slice(t.length - KEEP_CHARS)}`;
    },
  };
}
