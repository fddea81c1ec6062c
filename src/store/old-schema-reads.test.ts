import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openCheckpoint } from './checkpoint.js';
import { migrate, SCHEMA_VERSION } from './schema.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A checkpoint an older release wrote: migrated up to `version` only, with one pending project. */
function olderFile(version: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'sm-old-reads-'));
  dirs.push(dir);
  const file = join(dir, `v${version}.db`);
  const raw = new Database(file);
  migrate(raw, file, version);
  raw
    .prepare(
      "INSERT INTO items (kind, id, source, name, size_bytes, state) VALUES ('projects', 1, 'nfs-1', 'g/p1', 5, 'pending')",
    )
    .run();
  raw.close();
  return file;
}

// `status` opens a checkpoint read-only and does not migrate it: every read a status or a report makes
// answers "none" on a file from before the table it reads, instead of throwing (a placeholder statement
// given the real statement's parameters once threw "Too many parameter values" on getNetwork).
describe('reads of a checkpoint an older release wrote, opened read-only', () => {
  const versions = [6, 9, 10, 14, 15, 18, 21].filter((v) => v < SCHEMA_VERSION);
  it.each(versions)('schema %i: the reads of later tables find nothing and do not throw', (version) => {
    const store = openCheckpoint(olderFile(version), { readOnly: true });
    try {
      expect(store.getItem('projects', 1)?.name).toBe('g/p1');
      expect(store.getNetwork(1)).toBeNull();
      expect(store.networks()).toEqual([]);
      expect(store.networkMembers()).toEqual([]);
      expect(store.placedNetworkMembers()).toEqual([]);
      expect(store.networkPlacements().split.size).toBe(0);
      expect(store.getBound('nfs-1')).toBeNull();
      expect(store.getMoveModel('projects')).toBeNull();
      expect(store.getAutoCap()).toBeNull();
      expect(store.unlistable('projects', 'nfs-1', 1)).toEqual([]);
      expect(store.countInFlight()).toBe(0);
      expect(store.countUnplaced('projects', 'nfs-1')).toBeGreaterThanOrEqual(0);
      expect(store.nextPlacedDueAt('projects', 'nfs-1')).toBeNull();
      expect(store.itemsByIds('projects', [1]).map((r) => r.id)).toEqual([1]);
    } finally {
      store.close();
    }
  });
});
