/** What every copy method gets from the orchestrator (run.ts). */
import type { CopyPlan } from '../plan/copy-types.js';
import type { CopyCheckpoint } from '../store/copy-checkpoint.js';
import type { RepoEntry } from './repos.js';

export interface MethodContext {
  plan: CopyPlan;
  /** The source's repositories, found before the copy started. */
  repos: readonly RepoEntry[];
  /** Null in a dry run: nothing is written, not even the checkpoint. */
  checkpoint: CopyCheckpoint | null;
  signal: AbortSignal;
  /** Prints one line to stdout (commands, dry-run itemisation). */
  say: (line: string) => void;
  /** Reports progress: repositories and bytes done so far, and optionally the step (`backing up`). */
  progress: (reposDone: number, bytesDone: number, step?: string) => void;
  now: () => number;
}

/** The repository a path inside the storage belongs to: up to the first component ending in `.git`. */
export function repoOfPath(path: string): string | undefined {
  const parts = path.replace(/^\.\//, '').split('/');
  const i = parts.findIndex((p) => p.endsWith('.git'));
  return i < 0 ? undefined : parts.slice(0, i + 1).join('/');
}
