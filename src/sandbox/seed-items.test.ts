import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from './db.js';
import { headerOf, parseSeedItems } from './seed-items.js';
import { fakeChecksum } from './checksum.js';
import { SeedError, applySeed, loadSeed, parseSeed } from './seed.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const HEADER = JSON.stringify(headerOf('twin'));
const SEED = [
  'instance: { storages: [default, nfs-1, nfs-2], unlistable: [4] }',
  'users: [{ id: 1, username: root, admin: true }]',
  'inventory:',
  '  items_file: "items file.jsonl"',
  '  projects: [{ id: 2, storage: default, name: special }]',
  '',
].join('\n');

/** A seed file and its items file, in a fresh directory (a space in the name on purpose). */
function files(items: string[], seed = SEED): string {
  const dir = mkdtempSync(join(tmpdir(), 'sm seed items-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'items file.jsonl'), `${items.join('\n')}\n`);
  writeFileSync(join(dir, 'seed.yaml'), seed);
  return join(dir, 'seed.yaml');
}

function problemsOf(lines: string[], seedText = SEED): string[] {
  const seed = parseSeed(seedText);
  return parseSeedItems(lines.join('\n'), 'items.jsonl', seed).problems;
}

describe("the seed's items file", () => {
  it('seeds one item per line beside the seed, names from the id, sizes in bytes, flags as given', () => {
    const seed = loadSeed(
      files([
        HEADER,
        '["project",1,"nfs-1",41943040,0,0]',
        '["project",2,"nfs-1",null,0,0]',
        '["project",4,"nfs-2",1048577,1,1]',
        '["group",1,"nfs-2",null,0,1]',
        '',
        '["snippet",9,"default",0,0,0]',
      ]),
    );
    const db = openDatabase();
    applySeed(db, seed, Date.UTC(2026, 0, 1));
    const rows = db
      .prepare(
        'SELECT kind, id, name, path, namespace, visibility, storage, size_mb, hidden, pending_delete, commit_count, checksum FROM items ORDER BY kind, id',
      )
      .all();
    expect(rows).toEqual([
      {
        kind: 'group',
        id: 1,
        name: 'group-1',
        path: 'group-1',
        namespace: '',
        visibility: 'private',
        storage: 'nfs-2',
        size_mb: 10,
        hidden: 0,
        pending_delete: 1,
        commit_count: 10,
        checksum: fakeChecksum('group', 1, 10),
      },
      {
        kind: 'project',
        id: 1,
        name: 'project-1',
        path: 'project-1',
        namespace: 'twin',
        visibility: 'private',
        storage: 'nfs-1',
        size_mb: 40,
        hidden: 0,
        pending_delete: 0,
        commit_count: 10,
        checksum: fakeChecksum('project', 1, 10),
      },
      // The explicit list replaces the file's item of the same id.
      expect.objectContaining({ kind: 'project', id: 2, name: 'special', storage: 'default' }),
      {
        kind: 'project',
        id: 4,
        name: 'project-4',
        path: 'project-4',
        namespace: 'twin',
        visibility: 'private',
        storage: 'nfs-2',
        size_mb: 1048577 / 1048576,
        hidden: 1,
        pending_delete: 1,
        commit_count: 10,
        checksum: fakeChecksum('project', 4, 10),
      },
      {
        kind: 'snippet',
        id: 9,
        name: 'snippet-9',
        path: 'snippet-9',
        namespace: 'twin',
        visibility: 'private',
        storage: 'default',
        size_mb: 0,
        hidden: 0,
        pending_delete: 0,
        commit_count: 10,
        checksum: fakeChecksum('snippet', 9, 10),
      },
    ]);
  });

  it('replaces generated items of the same id', () => {
    const seed = loadSeed(
      files(
        [HEADER, '["project",3,"nfs-2",0,0,0]'],
        SEED.replace('inventory:', 'inventory:\n  generate: { projects: 5, storages: { default: 1 } }'),
      ),
    );
    const db = openDatabase();
    applySeed(db, seed, 0);
    expect(db.prepare("SELECT id, storage FROM items WHERE kind = 'project' ORDER BY id").all()).toEqual([
      { id: 1, storage: 'default' },
      { id: 2, storage: 'default' },
      { id: 3, storage: 'nfs-2' },
      { id: 4, storage: 'default' },
      { id: 5, storage: 'default' },
    ]);
  });

  it('names every problem with its file and line, and refuses the seed before any database', () => {
    expect(() => loadSeed(files(['["project",1,"nfs-1",0,0,0]']))).toThrow(SeedError);
    expect(problemsOf(['["project",1,"nfs-1",0,0,0]'])).toEqual([
      expect.stringMatching(/^items\.jsonl:1: not a header: the header must be \{"shardmove_sandbox_items":1/),
    ]);
    expect(
      problemsOf([
        HEADER,
        '["project",1,"nfs-3",0,0,0]',
        '["project",5,"nfs-1",0,0,0]',
        '["project",5,"nfs-1",0,0,0]',
        '["snippet",1,"nfs-1",0,0,1]',
        '["group",1,"nfs-1",0,1,0]',
        '["project",6,"nfs-1",-1,0,0]',
        '["project",7,"nfs-1",0,2,0]',
        '["repo",1,"nfs-1",0,0,0]',
        '{"id":8}',
        'not json',
      ]),
    ).toEqual([
      'items.jsonl:2: project 1: unknown storage "nfs-3" (instance.storages names the storages)',
      'items.jsonl:4: project 5: ids must ascend within a kind (the previous project was 5)',
      'items.jsonl:5: snippet 1: snippets have no pending-delete state',
      'items.jsonl:6: group 1: only projects can be hidden',
      'items.jsonl:7: project 6: size_bytes must be an integer >= 0 or null',
      'items.jsonl:8: project 7: hidden and pending_delete must be 0 or 1',
      'items.jsonl:9: kind must be project, snippet or group; got "repo"',
      'items.jsonl:10: an item is an array of 6: kind, id, storage, size_bytes, hidden, pending_delete',
      expect.stringMatching(/^items\.jsonl:11: not JSON: /),
    ]);
  });

  it('checks the header, the edition, and the unlistable projects against the file', () => {
    expect(problemsOf([JSON.stringify({ shardmove_sandbox_items: 2, columns: [] })])).toEqual([
      'items.jsonl:1: header: shardmove_sandbox_items must be 1 (this sandbox reads version 1)',
    ]);
    expect(
      problemsOf([HEADER, '["project",4,"nfs-1",0,1,0]'], SEED.replace('instance: {', 'instance: { edition: ce,')),
    ).toEqual(['items.jsonl:2: project 4: hidden projects exist only in the enterprise edition (edition: ee)']);
    expect(problemsOf([HEADER, '["project",1,"nfs-1",0,0,0]'])).toEqual([
      'items.jsonl: instance.unlistable: unknown project 4',
    ]);
    expect(problemsOf([HEADER, '["project",4,"nfs-1",0,0,0]'])).toEqual([]);
  });

  it('lists at most twenty problems and counts the rest', () => {
    const lines = [HEADER, ...Array.from({ length: 30 }, (_, i) => `["project",${i + 1},"nowhere",0,0,0]`)];
    const problems = problemsOf(lines);
    expect(problems).toHaveLength(21);
    expect(problems[20]).toBe('items.jsonl: ... and 10 more problems');
  });

  it('says so when the file cannot be read', () => {
    const seedFile = files([HEADER]);
    rmSync(join(seedFile, '..', 'items file.jsonl'));
    expect(() => loadSeed(seedFile)).toThrow(/items file\.jsonl: inventory\.items_file: cannot read: ENOENT/);
  });
});
