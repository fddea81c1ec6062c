/**
 * Proving that a request changed nothing in a sandbox's database, cheaply enough to check after
 * every request of a property test: SQLite's `total_changes()` counts every row inserted, updated
 * or deleted on the connection, so an unchanged count means an unchanged database.
 *
 * One write is not the request's doing: GitLab records a token's use (`last_used_at`) on every
 * authenticated request, at most every 10 minutes per token. `markCredentialsUsed` stamps every
 * credential as just used, so for the next ten minutes no request writes it and any change counted
 * is a real one.
 */
import type { SandboxState } from '../../src/sandbox/index.js';

/** Rows changed on the sandbox's connection since it opened. */
export function changeCount(state: SandboxState): number {
  return (state.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
}

/** Marks every credential as used now, so `last_used_at` is not rewritten for the next ten minutes. */
export function markCredentialsUsed(state: SandboxState): void {
  state.db.prepare('UPDATE credentials SET last_used_at = ?').run(new Date(state.clock.now()).toISOString());
}
