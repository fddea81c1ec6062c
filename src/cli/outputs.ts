/**
 * A file a command writes is never one it reads: `twin --out`, `report --html`, `run --events` and
 * `--metrics-file` named after the checkpoint replaced it (or appended to it). Compared by identity
 * (src/files/same-file.ts: device and inode, or a directory's identity and a name for a file not
 * there yet), so a symlink, a hard link or `./x` for `x` is seen through. Refused with exit 2
 * before anything is read or written, whatever --force says.
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { isSameFile } from '../files/same-file.js';
import { locateCheckpoint, logPath, revertCheckpointPath } from '../runtime/paths.js';
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

/**
 * `run` and `revert`: --events (a file) and --metrics-file are never the plan, a checkpoint the
 * command opens (a revert's and its forward run's), a file beside one, or the run's log. A plan
 * that cannot be read is left to the command, which says what is wrong with it.
 */
export async function refuseRunOutputsThatAreInputs(
  command: 'run' | 'revert',
  flags: {
    plan: string;
    state?: string | undefined;
    dryRun: boolean;
    events?: string;
    metricsFile?: string;
    items?: string;
  },
  ctx: CommandContext,
): Promise<void> {
  const outputs: NamedFile[] = [];
  if (flags.events && flags.events !== '-') outputs.push([resolve(ctx.cwd, flags.events), `--events ${flags.events}`]);
  if (flags.metricsFile) outputs.push([resolve(ctx.cwd, flags.metricsFile), `--metrics-file ${flags.metricsFile}`]);
  if (flags.items) outputs.push([resolve(ctx.cwd, flags.items), `--items ${flags.items}`]);
  if (outputs.length === 0) return;
  let plan: { name: string; checkpoint?: string | undefined };
  try {
    plan = await readPlanIdentity(flags.plan, ctx);
  } catch {
    return;
  }
  // Where the command itself looks (src/runtime/paths.ts); a checkpoint left at an old place is the
  // command's to refuse, with its own message.
  const at = (dryRun: boolean) => {
    try {
      return locateCheckpoint({
        planFile: flags.plan,
        planName: plan.name,
        planCheckpoint: plan.checkpoint,
        statePath: flags.state,
        role: dryRun ? 'dry-run' : 'run',
        cwd: ctx.cwd,
      }).file;
    } catch {
      return null;
    }
  };
  const forward = at(command === 'run' && flags.dryRun);
  if (forward === null) return;
  const checkpoints = command === 'run' ? [forward] : [forward, revertCheckpointPath(forward)];
  const planFile = resolve(ctx.cwd, flags.plan);
  refuseOutputsThatAreInputs(command, outputs, [
    [planFile, `the plan ${planFile}`],
    ...checkpoints.flatMap((f) => checkpointFiles(f, { log: true })),
  ]);
}
