/**
 * Which plan a checkpoint belongs to. A checkpoint records its plan's name and hash, and each run
 * records the plan file it ran (its real path, in `run.started`): the checkpoint belongs to that
 * file. Two plans may share a name (two folders, each with a `retire` plan), so the name alone does
 * not say it; a plan edited in place keeps its file, and a plan copied or renamed keeps its hash.
 * Every command that takes a plan and opens its checkpoint refuses another plan's the same way:
 * steering, showing or resuming it under the wrong plan would act on the other plan's run.
 */
import { existsSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { isMap, isScalar, parseDocument } from 'yaml';
import { openCheckpoint } from '../../store/checkpoint.js';
import type { Checkpoint } from '../../store/checkpoint.js';
import { PLAN_CHANGED, RuntimeError } from '../errors.js';

/** The plan file's real path (symlinks followed); as resolved when it cannot be read (a test's fake plan). */
export function realPlanPath(planFile: string, cwd: string): string {
  const abs = resolve(cwd, planFile);
  try {
    return realpathSync(abs);
  } catch {
    return abs;
  }
}

/** The plan file the checkpoint's last run ran (a real path); null when no run recorded one (older ones did not). */
export function recordedPlanFile(store: Pick<Checkpoint, 'lastEventOf'>): string | null {
  const file = store.lastEventOf(['run.started'])?.data.planFile;
  return typeof file === 'string' && file !== '' ? file : null;
}

/** The plan a command was given, as far as it could be read. */
export interface PlanOfCommand {
  /** The plan file as given. */
  file: string;
  cwd: string;
  name: string;
  /** Its hash; null when it did not load whole (variables unset in this shell). */
  hash: string | null;
}

/**
 * Why the checkpoint is another plan's, or undefined when it is this plan's (or holds no run yet).
 * Another plan's: another name, or another plan file recorded and another hash.
 */
export function otherPlanProblem(
  store: Pick<Checkpoint, 'loadRun' | 'lastEventOf'>,
  file: string,
  plan: PlanOfCommand,
): string | undefined {
  const saved = store.loadRun();
  if (!saved) return undefined;
  const recorded = recordedPlanFile(store);
  const sameName = saved.planName === plan.name;
  const sameFile = recorded === null || recorded === realPlanPath(plan.file, plan.cwd);
  if (sameName && (sameFile || (plan.hash !== null && saved.planHash === plan.hash))) return undefined;
  const theirs = `plan "${saved.planName}"${recorded ? ` (${recorded})` : ''}`;
  const ours = `plan "${plan.name}" (${resolve(plan.cwd, plan.file)})`;
  return [
    `refusing: ${file} is the checkpoint of ${theirs}, not of ${ours}: under this plan it would show, steer or resume the other plan's run.`,
    "Give the plan it belongs to, or this plan's own checkpoint (--state FILE, or none: the plan's own is beside it).",
    '`run` and `revert` take --accept-plan-change for a plan renamed or moved on purpose. Nothing was written.',
  ].join(' ');
}

/** Throws SHARDMOVE_PLAN_CHANGED (exit 4) when the checkpoint is another plan's (otherPlanProblem). */
export function assertCheckpointOfPlan(
  store: Pick<Checkpoint, 'loadRun' | 'lastEventOf'>,
  file: string,
  plan: PlanOfCommand,
): void {
  const problem = otherPlanProblem(store, file, plan);
  if (problem) throw new RuntimeError(PLAN_CHANGED, problem);
}

/**
 * The plan file a checkpoint at `file` belongs to, when it can be told without the caller's plan:
 * the one its last run recorded, else a plan file in the checkpoint's folder's parent whose own
 * checkpoint is there now (`<dir>/state/<name>.db` beside `<dir>/<plan>.yaml`, named `name`).
 * Null when neither says (a file that is no move checkpoint, or one no plan claims).
 */
export function ownerOfCheckpoint(file: string, name: string, suffix: string): string | null {
  try {
    const store = openCheckpoint(file, { readOnly: true, busyTimeoutMs: 2_000 });
    try {
      const recorded = recordedPlanFile(store);
      if (recorded) return recorded;
    } finally {
      store.close();
    }
  } catch {
    // Not a checkpoint this can read: the place alone may still say whose it is.
  }
  return planKeepingCheckpointAt(file, name, suffix);
}

/** Plans are small; a folder's other YAML files are not read past this. */
const MAX_PLAN_BYTES = 1_000_000;
const MAX_FILES = 200;

/** A plan file beside `state/` whose checkpoint, by its name and `checkpoint:` field, is `file`. */
function planKeepingCheckpointAt(file: string, name: string, suffix: string): string | null {
  const dir = dirname(dirname(file));
  let entries: string[];
  try {
    entries = readdirSync(dir).filter((n) => /\.ya?ml$/i.test(n));
  } catch {
    return null;
  }
  for (const n of entries.sort().slice(0, MAX_FILES)) {
    const plan = join(dir, n);
    try {
      const st = statSync(plan);
      if (!st.isFile() || st.size > MAX_PLAN_BYTES) continue;
      const doc = parseDocument(readFileSync(plan, 'utf8'));
      if (!isMap(doc.contents)) continue;
      const contents = doc.contents;
      const field = (key: string): string | undefined => {
        const v: unknown = contents.get(key, true);
        return isScalar(v) && typeof v.value === 'string' ? v.value : undefined;
      };
      if (field('name') !== name) continue;
      const at = field('checkpoint');
      const own =
        at !== undefined
          ? resolve(dir, `${at.slice(0, -'.db'.length)}${suffix}.db`)
          : join(dir, 'state', `${name}${suffix}.db`);
      if (own === file && existsSync(plan)) return realPlanPath(plan, dir);
    } catch {
      // Not a plan: it claims nothing.
    }
  }
  return null;
}
