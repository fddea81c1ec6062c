/**
 * Reading a checkpoint for `status`, safely while a run writes it: read-only connection (WAL lets
 * readers in) with a busy timeout, no lock taken, nothing written. The lock row tells a live run
 * (its holder's pid is alive) from an interrupted one (no holder, or a dead one after kill -9).
 */
import { existsSync } from 'node:fs';
import { openCheckpoint } from '../store/checkpoint.js';
import type { Checkpoint } from '../store/checkpoint.js';
import { buildStatusReport, capView } from '../report/status.js';
import type { LockView, StatusReport } from '../report/status.js';
import { withCopyKnowledge } from './copies.js';
import { NO_CHECKPOINT, RuntimeError } from './errors.js';
import { checkpointPath } from './paths.js';
import { isAlive, thisHost } from './process.js';

export { checkpointPath } from './paths.js';

/**
 * Opens the checkpoint at `file` beside a run that may hold it (no lock taken, busy timeout); throws
 * SHARDMOVE_NO_CHECKPOINT when the file does not exist, rather than creating one that `run` would
 * then start from.
 */
export function openExistingCheckpoint(file: string, opts: { readOnly: boolean }): Checkpoint {
  if (!existsSync(file)) {
    throw new RuntimeError(NO_CHECKPOINT, `no checkpoint at ${file}: the plan has not run yet (or pass --state FILE)`);
  }
  return openCheckpoint(file, { readOnly: opts.readOnly, busyTimeoutMs: 10_000 });
}

/** The lock holder with its liveness; a holder on another host cannot be probed (alive: null). */
export function lockHolder(store: Pick<Checkpoint, 'readLock'>): LockView | null {
  const holder = store.readLock();
  return holder ? { ...holder, alive: holder.host === thisHost() ? isAlive(holder.pid) : null } : null;
}

/** The status of the checkpoint at `file`; throws SHARDMOVE_NO_CHECKPOINT when there is none. */
export function readStatus(file: string, now: number, planConcurrency: number | null = null): StatusReport {
  const store = openExistingCheckpoint(file, { readOnly: true });
  try {
    return withCopyKnowledge(file, store, (copies) =>
      buildStatusReport(
        file,
        store.loadRun(),
        store.summary(now),
        now,
        lockHolder(store),
        planConcurrency,
        capView(store.lastEventOf(['cap.changed'])),
        copies,
      ),
    );
  } finally {
    store.close();
  }
}

/** Where `status` looks for a plan's checkpoint (the real run's, not the dry run's). */
export function statusCheckpointPath(planName: string, statePath: string | undefined, cwd: string): string {
  return checkpointPath({ planName, statePath, dryRun: false, cwd });
}

/** How many events of `type` the checkpoint's log holds (e.g. `item.retry` for the demo's summary). */
export function countEvents(file: string, type: string): number {
  const store = openCheckpoint(file, { readOnly: true, busyTimeoutMs: 10_000 });
  try {
    let n = 0;
    let after = 0;
    for (;;) {
      const page = store.readEvents(after, 10_000);
      if (page.length === 0) return n;
      n += page.filter((e) => e.type === type).length;
      after = page[page.length - 1]!.seq;
    }
  } finally {
    store.close();
  }
}
