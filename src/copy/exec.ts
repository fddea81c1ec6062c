/**
 * Running the copy's commands: argv arrays without a shell on this machine, and short POSIX shell
 * scripts on the target place, through `sh -c` locally or the system's `ssh` (the operator's own
 * configuration: keys, ports, jump hosts) for a remote target. Every command can be aborted.
 */
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { scrubServerText } from '../secrets/registry.js';
import { CopyFailedError } from './errors.js';

/** A directory on this machine (host null) or on an ssh host. */
export interface Place {
  host: string | null;
  path: string;
}

/** Options every ssh invocation gets: never prompt (a copy runs unattended). */
export const SSH_OPTIONS = ['-o', 'BatchMode=yes'];

/** Quotes one word for a POSIX shell. */
export function shq(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** An argv as one copy-pasteable shell line. */
export function showCommand(argv: readonly string[]): string {
  return argv.map(shq).join(' ');
}

/**
 * The ssh argv that runs `script` on `host`. The `--` ends ssh's options, so the host is never read
 * as one even if a plan's validation were bypassed (rsync builds its own ssh line and cannot take it).
 */
export function sshArgv(host: string, script: string): string[] {
  return ['ssh', ...SSH_OPTIONS, '--', host, script];
}

/** The argv that runs `script` on the place's host: `sh -c` here, `ssh host script` there. */
export function scriptArgv(host: string | null, script: string): string[] {
  return host === null ? ['sh', '-c', script] : sshArgv(host, script);
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** Streams stdout lines to this callback as they come (still collected). */
  onStdoutLine?: (line: string) => void;
  onStderrLine?: (line: string) => void;
  /** Piped into the command's stdin (ended when it ends); stdin is empty otherwise. */
  stdin?: Readable;
}

/** Runs argv to its end; never throws for a non-zero exit (the caller decides), only when aborted or not startable. */
export function runCommand(argv: readonly string[], opts: RunOptions = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env: opts.env ?? process.env,
      ...(opts.signal ? { signal: opts.signal } : {}),
      killSignal: 'SIGTERM',
    });
    const out = collect(child.stdout!, opts.onStdoutLine);
    const err = collect(child.stderr!, opts.onStderrLine);
    if (opts.stdin && child.stdin) pipeInto(opts.stdin, child.stdin);
    child.on('error', (e) =>
      reject(opts.signal?.aborted ? opts.signal.reason : new CopyFailedError(`cannot run ${argv[0]}: ${e.message}`)),
    );
    child.on('close', (code) => {
      if (opts.signal?.aborted) reject(opts.signal.reason);
      else resolve({ code, stdout: out(), stderr: err() });
    });
  });
}

/** Runs argv and returns its stdout; a non-zero exit is a CopyFailedError naming the command. */
export async function runChecked(argv: readonly string[], what: string, opts: RunOptions = {}): Promise<string> {
  const r = await runCommand(argv, opts);
  if (r.code !== 0)
    throw new CopyFailedError(`${what} failed (exit ${r.code}): ${showCommand(argv)}\n${tail(r.stderr)}`);
  return r.stdout;
}

/** Runs a shell script on the place's host; stdout, or CopyFailedError. */
export function runScript(host: string | null, script: string, what: string, opts: RunOptions = {}): Promise<string> {
  return runChecked(scriptArgv(host, script), what, opts);
}

/**
 * The last lines of a command's stderr, for an error message: scrubbed of every secret the process
 * knows before it is cut, so no cut keeps a piece of one.
 */
export function tail(text: string, lines = 5): string {
  return scrubServerText(text).trimEnd().split('\n').slice(-lines).join('\n');
}

function collect(stream: Readable, onLine?: (line: string) => void): () => string {
  const chunks: string[] = [];
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    chunks.push(chunk);
    if (!onLine) return;
    const text = partial + chunk;
    const parts = text.split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) onLine(line);
  });
  stream.on('end', () => {
    if (onLine && partial) onLine(partial);
    partial = '';
  });
  return () => chunks.join('');
}

function pipeInto(from: Readable, to: Writable): void {
  // The reader may exit before reading everything (an error); that is reported by its exit code.
  to.on('error', () => {});
  from.pipe(to);
}
