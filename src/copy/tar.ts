/**
 * The tar method: `tar -C SOURCE -cf - . | tar -C TARGET -xf -` (the extracting side over ssh for
 * a remote target). It cannot resume: a half-extracted target is indistinguishable from a complete
 * one, so after an interruption the target must be emptied (--wipe-target) and the copy restarted.
 */
import { spawn } from 'node:child_process';
import { Transform } from 'node:stream';
import type { CopyPlan } from '../plan/copy-types.js';
import { CopyFailedError } from './errors.js';
import { runCommand, runScript, showCommand, shq, sshArgv, tail } from './exec.js';
import type { MethodContext } from './types.js';
import { repoOfPath } from './types.js';

/** The two sides of the pipe. The creating side lists names on stderr (-v), for the progress line. */
export function tarArgv(plan: CopyPlan): { create: string[]; extract: string[] } {
  const { source } = plan.copy;
  return {
    create: ['tar', '-C', source.path, '-cvf', '-', '.'],
    extract: extractArgv(plan),
  };
}

function extractArgv(plan: CopyPlan): string[] {
  const { target } = plan.copy;
  return target.host === null
    ? ['tar', '-C', target.path, '-xf', '-']
    : sshArgv(target.host, `tar -C ${shq(target.path)} -xf -`);
}

/** The pipe as one shell line, as printed. */
export function tarCommandLine(plan: CopyPlan): string {
  const { create, extract } = tarArgv(plan);
  return `${showCommand(create)} | ${showCommand(extract)}`;
}

/** What --wipe-target empties: the target's real path and the entries in it. */
export interface TarWipe {
  real: string;
  entries: string[];
}

/** The directory --wipe-target empties, as printed: the real path, and the path as written when it differs. */
export function describeWipe(path: string, real: string): string {
  return `${real} (--wipe-target${real === path ? '' : `; ${path} resolves to it`})`;
}

export function dryRunTar(ctx: MethodContext, wipe: TarWipe | null): void {
  const { target } = ctx.plan.copy;
  if (wipe !== null)
    ctx.say(
      `would empty ${describeWipe(target.path, wipe.real)}: ${wipe.entries.length} entries: ${wipe.entries.slice(0, 20).join(', ')}${wipe.entries.length > 20 ? ', ...' : ''}`,
    );
  ctx.say(`would run: mkdir -p ${shq(target.path)}`);
  ctx.say(`would run: ${tarCommandLine(ctx.plan)}`);
  const bytes = ctx.repos.reduce((s, r) => s + r.bytes, 0);
  ctx.say(`would create ${ctx.repos.length} repositories (${bytes} bytes) in the empty target:`);
  for (const r of ctx.repos) ctx.say(`  + ${r.rel}`);
}

/** Runs the pipe; progress counts bytes through the pipe and repositories named by the creating tar. */
export async function runTar(ctx: MethodContext): Promise<void> {
  const { target } = ctx.plan.copy;
  await runScript(target.host, `mkdir -p ${shq(target.path)}`, 'creating the target directory', { signal: ctx.signal });
  ctx.say(`$ ${tarCommandLine(ctx.plan)}`);
  const seen = new Set<string>();
  let bytes = 0;
  const createArgv = tarArgv(ctx.plan).create;
  const create = spawn(createArgv[0]!, createArgv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], signal: ctx.signal });
  const createErr: string[] = [];
  let partial = '';
  create.stderr.setEncoding('utf8');
  create.stderr.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const repo = repoOfPath(line);
      if (repo) seen.add(repo);
      else if (!line.startsWith('./')) createErr.push(line);
    }
  });
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      ctx.progress(seen.size, bytes);
      done(null, chunk);
    },
  });
  create.stdout.pipe(counter);
  create.on('error', () => {});
  const createDone = new Promise<number | null>((resolve) => create.on('close', (code) => resolve(code)));
  const extract = await runCommand(extractArgv(ctx.plan), { signal: ctx.signal, stdin: counter });
  const createCode = await createDone;
  if (ctx.signal.aborted) throw ctx.signal.reason;
  if (createCode !== 0)
    throw new CopyFailedError(
      `tar (creating) failed (exit ${createCode}): ${tarCommandLine(ctx.plan)}\n${tail(createErr.join('\n'))}`,
    );
  if (extract.code !== 0)
    throw new CopyFailedError(
      `tar (extracting) failed (exit ${extract.code}): ${tarCommandLine(ctx.plan)}\n${tail(extract.stderr)}`,
    );
  ctx.progress(seen.size, bytes);
}
