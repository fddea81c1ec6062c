/**
 * Reading a checkpoint for `status`, safely while a run writes it: read-only connection (WAL lets
 * readers in) with a busy timeout, no lock taken, nothing written.
 */
import { existsSync } from 'node:fs';
import { openCheckpoint } from '../store/checkpoint.js';
import { buildStatusReport } from '../report/status.js';
import type { StatusReport } from '../report/status.js';
import { NO_CHECKPOINT, RuntimeError } from './errors.js';
import { checkpointPath } from './paths.js';

export { checkpointPath } from './paths.js';

/** The status of the checkpoint at `file`; throws SHARDMOVE_NO_CHECKPOINT when there is none. */
export function readStatus(file: string, now: number): StatusReport {
  if (!existsSync(file)) {
    throw new RuntimeError(NO_CHECKPOINT, `no checkpoint at ${file}: the plan has not run yet (or pass --state FILE)`);
  }
  const store = openCheckpoint(file, { readOnly: true, busyTimeoutMs: 10_000 });
  try {
    return buildStatusReport(file, store.loadRun(), store.summary(now), now);
  } finally {
    store.close();
  }
}

/** Where `status` looks for a plan's checkpoint (the real run's, not the dry run's). */
export function statusCheckpointPath(planName: string, statePath: string | undefined, cwd: string): string {
  return checkpointPath({ planName, statePath, dryRun: false, cwd });
}
