/**
 * The normalised copy plan (version 1): copying a whole repository storage directory to a new
 * environment with one of the spec's three methods. Paths are absolute and without a trailing slash.
 */

/** The spec's copy methods: backup and restore (git bundle), a tar pipe, rsync. */
export type CopyMethod = 'backup' | 'tar' | 'rsync';

export const COPY_METHODS: readonly CopyMethod[] = ['backup', 'tar', 'rsync'];

export interface CopyPlan {
  version: 1;
  /** Names the checkpoint: state/<name>.copy.db beside the plan unless --state. */
  name: string;
  copy: {
    method: CopyMethod;
    source: { path: string };
    target: {
      path: string;
      /** `[user@]host` reached with the system's `ssh`; null for a local target. */
      host: string | null;
      /** A clustered repository store (Gitaly Cluster): only backup and restore may write to it. */
      clustered: boolean;
    };
    /** Where backup bundles and the manifest go (method backup); null: next to the checkpoint. */
    backupPath: string | null;
  };
}
