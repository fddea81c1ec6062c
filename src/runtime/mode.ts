/**
 * The kind of run a checkpoint holds (issue 19). A real run never resumes a dry run's checkpoint: it
 * would replay a rehearsal that moved nothing and report it done. A dry run never touches a real
 * run's. The first run on a file claims it; everything after that must be of the same kind.
 */
import type { CheckpointStore, RunMode } from '../store/types.js';
import { CHECKPOINT_MODE, RuntimeError } from './errors.js';

/**
 * Claims the checkpoint for `wanted`, or throws SHARDMOVE_CHECKPOINT_MODE (exit 4) when it holds the
 * other kind. Called before the lock is taken, so a refused command leaves the file as it was.
 */
export function assertMode(store: CheckpointStore, file: string, wanted: RunMode): void {
  if (store.claimMode(wanted) === wanted) return;
  throw new RuntimeError(CHECKPOINT_MODE, wanted === 'dry-run' ? DRY_ON_REAL(file) : REAL_ON_DRY(file));
}

/** `weights restore` on a dry run's checkpoint: a dry run changed no weights, so there is nothing to put back. */
export function assertRealRun(store: CheckpointStore, file: string): void {
  if (store.mode() !== 'dry-run') return;
  throw new RuntimeError(CHECKPOINT_MODE, `refusing: ${file} holds a dry run, which changed no weights; name the real run's checkpoint (state/<plan>.db unless it ran with --state)`);
}

const DRY_ON_REAL = (file: string) =>
  `refusing: ${file} holds a real run, and a dry run never touches a real run's checkpoint. ` +
  'Leave out --state (a dry run keeps state/<plan>.dry-run.db) or give it a file of its own';

const REAL_ON_DRY = (file: string) =>
  `refusing: ${file} holds a dry run, which moved nothing, and a real run never resumes one. ` +
  'Leave out --state (a real run keeps state/<plan>.db), give another file, or delete this one to start the real run afresh';
