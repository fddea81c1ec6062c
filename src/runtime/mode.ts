/**
 * The kind of run a checkpoint holds. A real run never resumes a dry run's checkpoint: it
 * would replay a rehearsal that moved nothing and report it done. A dry run never touches a real
 * run's. A revert's checkpoint (`shardmove revert`) is a third kind, resumed by a revert only. The first
 * run on a file claims it; everything after that must be of the same kind.
 */
import type { CheckpointStore, RunMode } from '../store/types.js';
import { CHECKPOINT_MODE, RuntimeError } from './errors.js';

/**
 * Claims the checkpoint for `wanted`, or throws SHARDMOVE_CHECKPOINT_MODE (exit 4) when it holds the
 * other kind. Called before the lock is taken, so a refused command leaves the file as it was.
 */
export function assertMode(store: CheckpointStore, file: string, wanted: RunMode): void {
  const held = store.claimMode(wanted);
  if (held !== wanted) throw modeRefusal(file, held, wanted);
}

/** Why a command wanting `wanted` refuses a checkpoint that holds `held` (SHARDMOVE_CHECKPOINT_MODE, exit 4). */
export function modeRefusal(file: string, held: RunMode, wanted: RunMode): RuntimeError {
  if (held === 'revert') return new RuntimeError(CHECKPOINT_MODE, ON_REVERT(file));
  if (wanted === 'revert') return new RuntimeError(CHECKPOINT_MODE, REVERT_ON_OTHER(file, held));
  return new RuntimeError(CHECKPOINT_MODE, wanted === 'dry-run' ? DRY_ON_REAL(file) : REAL_ON_DRY(file));
}

/** `weights restore` on a dry run's checkpoint: a dry run changed no weights, so there is nothing to put back. */
export function assertRealRun(store: CheckpointStore, file: string): void {
  if (store.mode() !== 'dry-run') return;
  throw new RuntimeError(
    CHECKPOINT_MODE,
    `refusing: ${file} holds a dry run, which changed no weights; name the real run's checkpoint (state/<plan>.db beside the plan unless it ran with --state)`,
  );
}

const ON_REVERT = (file: string) =>
  `refusing: ${file} holds a revert (shardmove revert keeps it beside the forward run's checkpoint), which only shardmove revert resumes. ` +
  "Leave out --state, or name the forward run's checkpoint";

const REVERT_ON_OTHER = (file: string, held: RunMode) =>
  `refusing: ${file}, where this revert keeps its checkpoint, already holds a ${held === 'dry-run' ? 'dry run' : 'run'} of its own. ` +
  "Move that file away, or name the forward run's checkpoint with --state (the revert keeps <file>.revert.db beside it)";

const DRY_ON_REAL = (file: string) =>
  `refusing: ${file} holds a real run, and a dry run never touches a real run's checkpoint. ` +
  'Leave out --state (a dry run keeps state/<plan>.dry-run.db beside the plan) or give it a file of its own';

const REAL_ON_DRY = (file: string) =>
  `refusing: ${file} holds a dry run, which moved nothing, and a real run never resumes one. ` +
  'Leave out --state (a real run keeps state/<plan>.db beside the plan), give another file, or delete this one to start the real run afresh';
