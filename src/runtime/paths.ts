/**
 * Where a plan's checkpoint and log live, decided in one place for every command that takes a plan:
 * `--state FILE` (against the current directory, as typed), else the plan's `checkpoint:` field,
 * else `state/<name>.db` in the plan file's own folder. The plan file is followed through symlinks
 * first, so every path that reaches one plan file (from any directory, by any link) finds the same
 * checkpoint, and a resume from the wrong directory cannot start a second run.
 */
import { shellWord } from '../shared/shell-word.js';
import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { CHECKPOINT_ELSEWHERE, RuntimeError } from './errors.js';
import { ownerOfCheckpoint, realPlanPath } from './ownership/plan-owner.js';

/** Which of a plan's checkpoints: the real run's, its dry run's, or a copy plan's. */
export type CheckpointRole = 'run' | 'dry-run' | 'copy';

/** What each role adds to the real run's name: `state/x.db`, `state/x.dry-run.db`, `state/x.copy.db`. */
const ROLE_SUFFIX: Record<CheckpointRole, string> = { run: '', 'dry-run': '.dry-run', copy: '.copy' };

export interface CheckpointRequest {
  /** The plan file as given on the command line. */
  planFile: string;
  planName: string;
  /** The plan's `checkpoint:` field as written (relative to the plan file's folder), when it has one. */
  planCheckpoint?: string | null | undefined;
  /** `--state FILE`, when given: used as is, for every role. */
  statePath?: string | undefined;
  role: CheckpointRole;
  cwd: string;
}

export interface CheckpointPlace {
  /** The checkpoint's absolute path. */
  file: string;
  /** How it was chosen. */
  from: 'state' | 'plan' | 'default';
  /**
   * Another checkpoint of the same name where shardmove looked before it looked beside the plan
   * (`state/<name>.db` under the current directory), when that file exists too and is not `file`.
   */
  alsoAt?: string;
  /**
   * A checkpoint of the same name where shardmove looked before, which is another plan's (the plan
   * file it records, or a plan beside it that keeps its checkpoint there): not this plan's, and
   * never to be moved to it.
   */
  otherPlan?: { file: string; plan: string };
}

/** Where a plan (its name and `checkpoint:` field) keeps its checkpoint for `role`: `--state`, or the plan's place. */
export function checkpointPlaceOf(
  plan: { name: string; checkpoint?: string | null | undefined },
  opts: { planFile: string; statePath?: string | undefined; cwd: string },
  role: CheckpointRole,
): CheckpointPlace {
  return locateCheckpoint({
    planFile: opts.planFile,
    planName: plan.name,
    planCheckpoint: plan.checkpoint,
    statePath: opts.statePath,
    role,
    cwd: opts.cwd,
  });
}

/** The forward run's checkpoint of a loaded plan (`revert`, `weights restore`): `--state`, or the plan's place. */
export function runCheckpointOf(
  plan: { name: string; checkpoint?: string | null | undefined },
  opts: { planFile: string; statePath?: string | undefined; cwd: string },
): string {
  return checkpointPlaceOf(plan, opts, 'run').file;
}

/**
 * The plan's checkpoint for `role`. Throws SHARDMOVE_CHECKPOINT_ELSEWHERE (exit 4) when it does not
 * exist yet but the same plan's checkpoint exists where a shardmove before this one put it by
 * default (`state/<name>.db` under the current directory): going on would start a second run
 * beside one that may be half done. The message says where each is and how to go on. A file there
 * that is another plan's (./plan-owner.ts: the plan file it records, or the plan beside it that
 * keeps its checkpoint there) is not this plan's: it is named in a note, never moved.
 */
export function locateCheckpoint(req: CheckpointRequest): CheckpointPlace {
  if (req.statePath) return { file: resolve(req.cwd, req.statePath), from: 'state' };
  const suffix = ROLE_SUFFIX[req.role];
  const planDir = dirname(realPlanPath(req.planFile, req.cwd));
  const file =
    req.planCheckpoint && req.role !== 'copy'
      ? withRole(resolve(planDir, req.planCheckpoint), suffix)
      : join(planDir, 'state', `${req.planName}${suffix}.db`);
  const from = req.planCheckpoint && req.role !== 'copy' ? 'plan' : 'default';
  const legacy = resolve(req.cwd, 'state', `${req.planName}${suffix}.db`);
  if (legacy === file || !existsSync(legacy)) return { file, from };
  // Another plan of the same name may keep its checkpoint there now (a plan in the current
  // directory): that one is neither left behind by this plan nor to be moved to it.
  if (req.role !== 'copy') {
    const owner = ownerOfCheckpoint(legacy, req.planName, suffix);
    if (owner !== null && owner !== realPlanPath(req.planFile, req.cwd))
      return { file, from, otherPlan: { file: legacy, plan: owner } };
  }
  if (existsSync(file)) return { file, from, alsoAt: legacy };
  throw new RuntimeError(CHECKPOINT_ELSEWHERE, leftBehindMessage(file, legacy, from, req));
}

/** When an older default place holds a checkpoint of the same name too: what to tell the operator (that one is not used). */
export function otherCheckpointNote(place: CheckpointPlace): string | undefined {
  if (place.otherPlan)
    return `${place.otherPlan.file}, under the current directory, is the checkpoint of another plan of this name (${place.otherPlan.plan}), not this plan's; this uses ${place.file}`;
  if (!place.alsoAt) return undefined;
  return `${place.alsoAt}, under the current directory where shardmove looked before, holds a checkpoint of this plan's name too; this uses ${place.file}`;
}

/** `x.db` of the real run -> `x.dry-run.db` for its dry run. */
function withRole(file: string, suffix: string): string {
  return suffix === '' ? file : `${file.slice(0, -'.db'.length)}${suffix}.db`;
}

/**
 * Why a checkpoint at the old default place is not used by itself, and the commands that move it
 * (with its log, WAL, dry run's and revert's files) where it is looked for now.
 */
function leftBehindMessage(file: string, legacy: string, from: 'plan' | 'default', req: CheckpointRequest): string {
  const oldBase = legacy.slice(0, -'.db'.length);
  const newBase = file.slice(0, -'.db'.length);
  const moves = filesOf(legacy, req.role).map((f) => {
    const to = f.startsWith(`${oldBase}.`) ? newBase + f.slice(oldBase.length) : join(dirname(file), basename(f));
    return `  mv -i ${shellWord(f)} ${shellWord(to)}`;
  });
  const where =
    from === 'plan'
      ? "refusing: the plan's checkpoint field puts its checkpoint at"
      : "refusing: the plan's checkpoint belongs beside the plan file, at";
  return [
    where,
    `  ${file}`,
    'and is not there; one of its name is where shardmove kept it before,',
    'under the current directory:',
    `  ${legacy}`,
    'Going on would start a second run beside that one. Nothing was written.',
    'To go on with it, check that no run holds it:',
    `  shardmove status ${shellWord(req.planFile)} --state ${shellWord(legacy)}`,
    'then move it with its files to where the plan finds it from any directory:',
    `  mkdir -p ${shellWord(dirname(file))}`,
    ...moves,
    `or name it every time: --state ${shellWord(legacy)}`,
  ].join('\n');
}

/**
 * Every file of one plan's checkpoints beside `legacy` (its log, WAL, dry run's, revert's ...), a
 * copy's and a move's apart: they share the plan's name but not their files. A copy's backup folder
 * (`<name>.backup`, beside its checkpoint by default) goes with the copy's.
 */
function filesOf(legacy: string, role: CheckpointRole): string[] {
  const dir = dirname(legacy);
  const name = basename(legacy).slice(0, -`${ROLE_SUFFIX[role]}.db`.length);
  const ofCopy = (n: string) => n.startsWith(`${name}.copy.`) || n === `${name}.backup`;
  const mine = (n: string) =>
    role === 'copy' ? ofCopy(n) : n.startsWith(`${name}${ROLE_SUFFIX[role]}.`) && !ofCopy(n);
  try {
    return readdirSync(dir)
      .filter(mine)
      .sort()
      .map((n) => join(dir, n));
  } catch {
    return [legacy];
  }
}

/** The log file sits next to the checkpoint: foo.db -> foo.log. */
export function logPath(checkpoint: string): string {
  const base = checkpoint.endsWith('.db') ? checkpoint.slice(0, -3) : checkpoint;
  return `${base}.log`;
}

/** A revert's checkpoint beside the forward one: `state/it.db` -> `state/it.revert.db`. */
export function revertCheckpointPath(forward: string): string {
  return `${forward.endsWith('.db') ? forward.slice(0, -3) : forward}.revert.db`;
}
