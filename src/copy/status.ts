/**
 * `shardmove status` for a copy plan: what the copy checkpoint says, read-only, also while the copy
 * runs. The phase tells an interrupted copy (`copying` with no live process) from a running one.
 */
import { existsSync } from 'node:fs';
import { isAlive, thisHost } from '../runtime/ownership/process.js';
import { CopyCheckpoint } from '../store/copy-checkpoint.js';
import { formatBytes } from '../report/summary.js';

export interface CopyStatus {
  checkpoint: string;
  plan: string;
  method: string;
  phase: string;
  /** A live process holds the checkpoint (the copy is running now). */
  running: boolean;
  repositories: { total: number; done: number; byState: Record<string, number> };
  bytes: { total: number; done: number };
  /** Differences found by the last verification; null before one ran. */
  differences: number | null;
  failed: Array<{ repo: string; error: string }>;
}

/** Reads a copy checkpoint; undefined when the file does not exist or holds no copy yet. */
export function readCopyStatus(file: string): CopyStatus | undefined {
  if (!existsSync(file)) return undefined;
  const cp = CopyCheckpoint.openReadOnly(file);
  try {
    const run = cp.readRun();
    if (!run) return undefined;
    const lock = cp.readLock();
    const counts = cp.repoCounts();
    const byState = Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v.n]));
    // Backup counts restored repositories; rsync and tar count the whole tree once it is copied.
    const perRepo = run.method === 'backup';
    return {
      checkpoint: file,
      plan: run.planName,
      method: run.method,
      phase: run.phase,
      running: lock !== null && (lock.host !== thisHost() || isAlive(lock.pid)),
      repositories: { total: run.reposTotal, done: perRepo ? (counts['restored']?.n ?? 0) : run.reposDone, byState },
      bytes: { total: run.bytesTotal, done: perRepo ? (counts['restored']?.bytes ?? 0) : run.bytesDone },
      differences: run.differences,
      failed: cp
        .readRepos()
        .filter((r) => r.state === 'failed')
        .map((r) => ({ repo: r.rel, error: r.error ?? '' })),
    };
  } finally {
    cp.close();
  }
}

export function renderCopyStatus(s: CopyStatus): string {
  const state = s.running
    ? `${s.phase} (running now)`
    : s.phase === 'copying' || s.phase === 'verifying' || s.phase === 'started'
      ? `${s.phase} (interrupted; run copy again${s.method === 'tar' ? ' with --wipe-target' : ''})`
      : s.phase;
  const lines = [
    `copy ${s.plan} (${s.method}): ${state}`,
    `  checkpoint: ${s.checkpoint}`,
    `  repositories ${s.repositories.done}/${s.repositories.total}, ${formatBytes(s.bytes.done)} of ${formatBytes(s.bytes.total)}`,
    ...(s.method === 'backup'
      ? [
          `  by state: ${
            Object.entries(s.repositories.byState)
              .map(([k, n]) => `${k} ${n}`)
              .join(', ') || 'none'
          }`,
        ]
      : []),
    `  verification: ${s.differences === null ? 'not run yet' : s.differences === 0 ? 'no differences' : `${s.differences} differences`}`,
    ...s.failed.map((f) => `  failed: ${f.repo}: ${f.error}`),
  ];
  return `${lines.join('\n')}\n`;
}
