/** Where a plan's checkpoint and log live: state/<name>.db (dry run: state/<name>.dry-run.db) unless --state. */
import { dirname, resolve } from 'node:path';

export function checkpointPath(opts: {
  planName: string;
  statePath?: string | undefined;
  dryRun: boolean;
  cwd: string;
}): string {
  if (opts.statePath) return resolve(opts.cwd, opts.statePath);
  return resolve(opts.cwd, 'state', `${opts.planName}${opts.dryRun ? '.dry-run' : ''}.db`);
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

export function stateDir(checkpoint: string): string {
  return dirname(checkpoint);
}
