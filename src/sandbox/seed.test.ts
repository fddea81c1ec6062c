import { describe, expect, it } from 'vitest';
import { openDatabase } from './db.js';
import { applySeed, fakeChecksum, loadSeed } from './seed.js';

function seeded(projects: number, extra: Partial<ReturnType<typeof loadSeed>['inventory']> = {}) {
  const seed = loadSeed();
  seed.inventory = { generate: { ...seed.inventory.generate!, projects, snippets: 7, groups: 3 }, ...extra };
  const db = openDatabase();
  applySeed(db, seed, Date.UTC(2026, 0, 1));
  return db;
}

describe('seeding the inventory', () => {
  it('generates ids 1..N per kind with names, namespaces and checksums derived from the id', () => {
    const db = seeded(1001);
    expect(db.prepare("SELECT kind, count(*) n, min(id) lo, max(id) hi FROM items GROUP BY kind ORDER BY kind").all()).toEqual([
      { kind: 'group', n: 3, lo: 1, hi: 3 }, { kind: 'project', n: 1001, lo: 1, hi: 1001 }, { kind: 'snippet', n: 7, lo: 1, hi: 7 },
    ]);
    const p = db.prepare("SELECT * FROM items WHERE kind = 'project' AND id = 5").get() as Record<string, unknown>;
    expect(p).toMatchObject({ name: 'project-5', path: 'project-5', namespace: 'group-2', read_only: 0, owner_id: 1 });
    expect(p.checksum).toBe(fakeChecksum('project', 5, p.commit_count as number));
    expect(db.prepare("SELECT namespace FROM items WHERE kind = 'group' AND id = 1").get()).toEqual({ namespace: '' });
  });

  it('is deterministic under random_seed', () => {
    const a = seeded(500).prepare('SELECT * FROM items ORDER BY kind, id').all();
    const b = seeded(500).prepare('SELECT * FROM items ORDER BY kind, id').all();
    expect(a).toEqual(b);
  });

  it('lets explicit items override generated ids', () => {
    const db = seeded(10, { projects: [{ id: 3, storage: 'cluster', name: 'special' }, { id: 50, storage: 'nfs-2' }] });
    expect(db.prepare("SELECT id, name, storage FROM items WHERE kind = 'project' AND id IN (3, 50)").all()).toEqual([
      { id: 3, name: 'special', storage: 'cluster' }, { id: 50, name: 'project-50', storage: 'nfs-2' },
    ]);
    expect((db.prepare("SELECT count(*) n FROM items WHERE kind = 'project'").get() as { n: number }).n).toBe(11);
  });

  it('keeps the storage index after a large load (built once at the end)', () => {
    const db = seeded(60_000);
    const plan = db.prepare("EXPLAIN QUERY PLAN SELECT id FROM items WHERE kind = 'project' AND storage = 'nfs-1' AND id > 10 ORDER BY id LIMIT 20").all() as { detail: string }[];
    expect(plan.map((r) => r.detail).join(' ')).toContain('items_storage');
  });

  it('computes checksums that change with the commit count', () => {
    expect(fakeChecksum('project', 1, 10)).toMatch(/^[0-9a-f]{40}$/);
    expect(fakeChecksum('project', 1, 10)).not.toBe(fakeChecksum('project', 1, 11));
    expect(fakeChecksum('project', 1, 10)).not.toBe(fakeChecksum('snippet', 1, 10));
  });
});
