import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { ItemRecord } from '../api/types.js';
import { openCheckpoint } from './checkpoint.js';
import { migrate } from './schema.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const project = (id: number, storage = 'nfs-1', sizeBytes: number | null = id * 10): ItemRecord => ({
  kind: 'projects',
  id,
  storage,
  name: `g/p${id}`,
  sizeBytes,
});

describe('the census tables (schema 14)', () => {
  it('walks known pending ids of one source by id range, and keeps flags only for a finished census of the latest round', () => {
    const store = openCheckpoint(':memory:');
    store.startRound('projects', 'nfs-1', 1);
    store.recordPage(
      'projects',
      'nfs-1',
      1,
      [1, 2, 3, 5, 8].map((id) => project(id)),
      0,
    );
    store.recordPage(
      'projects',
      'nfs-2',
      1,
      [4, 6].map((id) => project(id, 'nfs-2')),
      0,
    );
    store.markLeft('projects', 3, 0, 'deleted');
    store.finishRound('projects', 'nfs-1', 1);
    expect(store.shape.knownIds('projects', 'nfs-1', 0, null, 10)).toEqual([1, 2, 5, 8]);
    expect(store.shape.knownIds('projects', 'nfs-1', 1, 5, 10)).toEqual([2, 5]);
    expect(store.shape.knownIds('projects', 'nfs-1', 0, null, 2)).toEqual([1, 2]);

    store.shape.startCensus('projects', 'nfs-1', 'hidden', 1);
    store.shape.flagItems('projects', [2, 8], 'hidden');
    // Not finished: unknown, whatever was flagged so far.
    expect([...store.shape.items()].find((i) => i.id === 2)).toMatchObject({ hidden: null, pendingDelete: null });
    store.shape.finishCensus('projects', 'nfs-1', 'hidden', 1, 2, 99);
    expect([...store.shape.items()].map((i) => [i.id, i.source, i.sizeBytes, i.hidden, i.pendingDelete])).toEqual([
      [1, 'nfs-1', 10, false, null],
      [2, 'nfs-1', 20, true, null],
      [4, 'nfs-2', 40, null, null],
      [5, 'nfs-1', 50, false, null],
      [6, 'nfs-2', 60, null, null],
      [8, 'nfs-1', 80, true, null],
    ]);
    // A new enumeration round makes the old census stale; starting a census again forgets its flags.
    store.startRound('projects', 'nfs-1', 2);
    expect(store.shape.censusDone('projects', 'nfs-1', 'hidden')).toBe(false);
    store.shape.startCensus('projects', 'nfs-1', 'hidden', 2);
    expect(store.shape.flaggedIds('projects', 'hidden')).toEqual(new Set());
    store.close();
  });

  it('reads a checkpoint from before schema 14 as one that knows no census', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sm-shape-'));
    dirs.push(dir);
    const file = join(dir, 'old.db');
    const raw = new Database(file);
    migrate(raw, file, 13);
    raw
      .prepare(
        "INSERT INTO items (kind, id, source, name, size_bytes, state) VALUES ('projects', 1, 'nfs-1', 'g/p1', 5, 'pending')",
      )
      .run();
    raw.close();
    const store = openCheckpoint(file, { readOnly: true });
    expect([...store.shape.items()]).toEqual([
      { kind: 'projects', id: 1, source: 'nfs-1', sizeBytes: 5, hidden: null, pendingDelete: null },
    ]);
    expect(store.shape.allCensus()).toEqual([]);
    store.close();
  });
});
