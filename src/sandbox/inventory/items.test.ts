// Lookups by full path: case-insensitive everywhere (GitLab's find_by_full_path), through the
// items_path index rather than a scan of every project.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../index.js';
import { startSandbox } from '../index.js';
import { loadSeed } from '../seed.js';
import { findItem, itemStatements } from './items.js';

const ADMIN = { 'private-token': 'glpat-sandbox-root-api-sudo-0001' };

describe('items by full path', () => {
  let sb: RunningSandbox;
  let full = '';
  beforeAll(async () => {
    const seed = loadSeed();
    seed.inventory = { generate: { ...seed.inventory.generate!, projects: 300, snippets: 5, groups: 5 } };
    sb = await startSandbox({ seed });
    const row = sb.state.db.prepare("SELECT namespace, path FROM items WHERE kind = 'project' AND id = 123").get() as {
      namespace: string;
      path: string;
    };
    full = `${row.namespace}/${row.path}`;
  });
  afterAll(async () => {
    await sb.close();
  });

  it('finds a project by its path in any case, for the project and for its moves', async () => {
    for (const ref of [full, full.toUpperCase()]) {
      const one = await fetch(`${sb.url}/api/v4/projects/${encodeURIComponent(ref)}`, { headers: ADMIN });
      expect(((await one.json()) as { id: number }).id).toBe(123);
      const moves = await fetch(`${sb.url}/api/v4/projects/${encodeURIComponent(ref)}/repository_storage_moves`, {
        headers: ADMIN,
      });
      expect(moves.status).toBe(200);
      await moves.body?.cancel();
    }
    const missing = await fetch(`${sb.url}/api/v4/projects/${encodeURIComponent(`${full}-not`)}`, { headers: ADMIN });
    expect(missing.status).toBe(404);
    await missing.body?.cancel();
  });

  it('searches the path index, not the primary key', () => {
    const db = sb.state.db;
    const plan = (sql: string, ...params: unknown[]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail).join(' ');
    const byPath = itemStatements(db).byPath.source;
    expect(plan(byPath, 'project', 'a', 'b')).toMatch(/USING INDEX items_path \(kind=\? AND path=\?\)/);
    expect(findItem(db, 'project', full.toUpperCase())?.id).toBe(123);
    expect(findItem(db, 'group', 'NO-SUCH-GROUP')).toBeUndefined();
  });
});
