/**
 * A comparable picture of everything a sandbox stores, for tests that prove a request changed
 * nothing. `credentials.last_used_at` is left out: GitLab records a token's use on every
 * authenticated request, including ones a handler then refuses, so it is not "state" a refused
 * request may not touch.
 */
import { createHash } from 'node:crypto';
import type { SandboxState } from '../../src/sandbox/index.js';

/** Names of the sandbox's tables, read from the schema so a new table is covered without edits. */
function tables(state: SandboxState): string[] {
  return (state.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
}

/** One digest per table: equal digests mean equal contents (row order included, which SQLite keeps stable). */
export function snapshotSandbox(state: SandboxState): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of tables(state)) {
    const rows = state.db.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[];
    const hash = createHash('sha1');
    for (const row of rows) {
      if (name === 'credentials') delete row.last_used_at;
      hash.update(JSON.stringify(row));
      hash.update('\n');
    }
    out[name] = `${rows.length}:${hash.digest('hex')}`;
  }
  return out;
}

/** Tables whose contents differ between two snapshots. */
export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter((n) => before[n] !== after[n]).sort();
}
