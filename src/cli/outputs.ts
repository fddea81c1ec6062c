/**
 * A file a command writes is never one it reads: `twin --out`, `report --html`, `run --events` and
 * `--metrics-file` named after the checkpoint replaced it (or appended to it). Compared by identity
 * (src/files/same-file.ts: device and inode, or a directory's identity and a name for a file not
 * there yet), so a symlink, a hard link or `./x` for `x` is seen through. Refused with exit 2
 * before anything is read or written, whatever --force says.
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { outputTargetOf } from '../files/atomic.js';
import { isSameFile } from '../files/same-file.js';
import { checkpointPlaceOf, logPath, revertCheckpointPath } from '../runtime/paths.js';
import type { CommandContext } from './context.js';
import { ArgsError } from './errors.js';
import { readPlanIdentity } from './plan-identity.js';

/** A file a command reads or writes beside its work, and how a message names it. */
export type NamedFile = readonly [path: string, what: string];

/**
 * The checkpoint and what SQLite keeps beside it (beside its real path, for a symlink: SQLite
 * resolves it), and the run's log when the command writes one.
 */
export function checkpointFiles(file: string, opts: { log?: boolean } = {}): NamedFile[] {
  let real = file;
  try {
    real = realpathSync(file);
  } catch {
    // Not there yet: it is created where it is named.
  }
  return [
    [file, `the checkpoint ${file}`],
    ...['-wal', '-shm', '-journal'].flatMap((s): NamedFile[] => [
      [`${file}${s}`, `the checkpoint's ${s} file`],
      [`${real}${s}`, `the checkpoint's ${s} file`],
    ]),
    ...(opts.log ? [[logPath(file), `the run's log ${logPath(file)}`] as const] : []),
  ];
}

/**
 * An output flag as a command gives it: the command's name, the flag, the path given, the directory
 * it is relative to, and whether `-` (standard output) is taken.
 */
type OutputFlag = [
  command: string,
  flag: string,
  given: string,
  ctx: Pick<CommandContext, 'cwd'>,
  opts?: { stream?: boolean },
];

/**
 * Checks an output flag's path before the command does any work, and returns it resolved (or `-`).
 * Every output is a regular file, new or replaced, never anything else at its name: a symlink (also
 * one to a regular file, or /dev/stdout), a directory, a FIFO, a socket or a device is refused with
 * exit 2 (src/files/atomic.ts holds the rule and checks it again as it writes). `-` is standard
 * output where `stream` says the output can be one; elsewhere it is refused, not taken as a file
 * named `-` (a list to review, a file a collector reads).
 */
export function checkOutputPath(...[command, flag, given, ctx, opts = {}]: OutputFlag): string {
  const out = resolveOutputPath(command, flag, given, ctx, opts);
  if (out === '-') return out;
  const at = outputTargetOf(out);
  if (at.kind === 'other' && at.what === 'a directory')
    throw new ArgsError(`${command}: ${flag} ${given} is a directory; name a file`);
  if (at.kind === 'other')
    throw new ArgsError(
      `${command}: ${flag} ${given} is ${at.what}; shardmove writes only a regular file there, new or replaced` +
        (opts.stream ? ', or - for standard output' : '') +
        ' (name a regular file)',
    );
  return out;
}

/**
 * An output flag's path resolved, or `-` where `stream` says standard output is taken (refused
 * elsewhere); what is at the path is checkOutputPath's, which a command calls once it compared its
 * outputs with its inputs (a symlink to the checkpoint is named as the checkpoint first).
 */
export function resolveOutputPath(...[command, flag, given, ctx, opts = {}]: OutputFlag): string {
  if (given === '-') {
    if (opts.stream) return '-';
    throw new ArgsError(`${command}: ${flag} names a file; it cannot be - (standard output): name a file`);
  }
  return resolve(ctx.cwd, given);
}

/** Throws ArgsError (exit 2) when any output is any input. */
export function refuseOutputsThatAreInputs(
  command: string,
  outputs: readonly NamedFile[],
  inputs: readonly NamedFile[],
): void {
  for (const [out, label] of outputs) {
    const hit = inputs.find(([input]) => isSameFile(out, input));
    if (hit !== undefined)
      throw new ArgsError(`${command}: ${label} is ${hit[1]}, which ${command} uses; write it somewhere else`);
  }
}

/** What `refuseRunOutputsThatAreInputs` found out on the way: the plan's name and its checkpoint, where it could tell. */
export interface RunOutputsPlace {
  planName: string | null;
  checkpoint: string | null;
}

/**
 * `run` and `revert`: --events (a file) and --metrics-file are never the plan, a checkpoint the
 * command opens (a revert's and its forward run's), a file beside one, or the run's log. A plan
 * that cannot be read is left to the command, which says what is wrong with it.
 */
export async function refuseRunOutputsThatAreInputs(
  command: 'run' | 'revert',
  flags: RunOutputFlags,
  ctx: CommandContext,
): Promise<RunOutputsPlace> {
  const place = await refuseInputs(command, flags, ctx);
  // Then, still before any work: an output that is not a regular file is never written to.
  if (flags.events) checkOutputPath(command, '--events', flags.events, ctx, { stream: true });
  if (flags.metricsFile) checkOutputPath(command, '--metrics-file', flags.metricsFile, ctx);
  if (flags.items) checkOutputPath(command, '--items', flags.items, ctx);
  return place;
}

type RunOutputFlags = {
  plan: string;
  state?: string | undefined;
  dryRun: boolean;
  events?: string;
  metricsFile?: string;
  items?: string;
};

async function refuseInputs(
  command: 'run' | 'revert',
  flags: RunOutputFlags,
  ctx: CommandContext,
): Promise<RunOutputsPlace> {
  const none: RunOutputsPlace = { planName: null, checkpoint: null };
  const outputs: NamedFile[] = [];
  if (flags.events && flags.events !== '-') outputs.push([resolve(ctx.cwd, flags.events), `--events ${flags.events}`]);
  if (flags.metricsFile) outputs.push([resolve(ctx.cwd, flags.metricsFile), `--metrics-file ${flags.metricsFile}`]);
  if (flags.items) outputs.push([resolve(ctx.cwd, flags.items), `--items ${flags.items}`]);
  if (outputs.length === 0) return none;
  let plan: { name: string; checkpoint?: string | undefined };
  try {
    plan = await readPlanIdentity(flags.plan, ctx);
  } catch {
    return none;
  }
  // Where the command itself looks (src/runtime/paths.ts); a checkpoint left at an old place is the
  // command's to refuse, with its own message.
  const at = (dryRun: boolean) => {
    try {
      const where = { planFile: flags.plan, statePath: flags.state, cwd: ctx.cwd };
      return checkpointPlaceOf(plan, where, dryRun ? 'dry-run' : 'run').file;
    } catch {
      return null;
    }
  };
  const forward = at(command === 'run' && flags.dryRun);
  if (forward === null) return { planName: plan.name, checkpoint: null };
  const checkpoints = command === 'run' ? [forward] : [forward, revertCheckpointPath(forward)];
  const planFile = resolve(ctx.cwd, flags.plan);
  refuseOutputsThatAreInputs(command, outputs, [
    [planFile, `the plan ${planFile}`],
    ...checkpoints.flatMap((f) => checkpointFiles(f, { log: true })),
  ]);
  return { planName: plan.name, checkpoint: command === 'revert' ? revertCheckpointPath(forward) : forward };
}
