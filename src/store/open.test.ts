import { createHash } from 'node:crypto';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openCheckpoint } from './checkpoint.js';
import { CopyCheckpoint, isCopyCheckpointFile } from './copy-checkpoint.js';
import type { CheckpointProblem } from './errors.js';
import { CHECKPOINT_UNUSABLE } from './errors.js';
import { checkpointWithEvents, overwriteEventPage } from '../../test/support/damaged-checkpoint.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'sm-open-'));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Every file in `dir` with a digest of its bytes: nothing may change in a refused file, nor appear beside it. */
function contents(dir: string): Record<string, string> {
  const digest = (f: string) =>
    statSync(f).isDirectory() ? 'dir' : createHash('sha256').update(readFileSync(f)).digest('hex');
  return Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((n) => [n, digest(join(dir, n))]),
  );
}

const unusable = (problem: CheckpointProblem, message: RegExp) =>
  expect.objectContaining({
    code: CHECKPOINT_UNUSABLE,
    problem,
    message: expect.stringMatching(message) as string,
  }) as Error;

describe('opening a file that is no checkpoint', () => {
  const cases: Array<[string, (file: string) => void, CheckpointProblem, RegExp]> = [
    [
      'a text file',
      (f) => writeFileSync(f, 'not a database\n'),
      'not-a-database',
      /state\.db is not a shardmove checkpoint: file is not a database$/,
    ],
    [
      'a truncated database',
      (f) => (checkpointWithEvents(f), truncateSync(f, Math.floor(statSync(f).size / 2))),
      'damaged',
      /state\.db is not a usable shardmove checkpoint: database disk image is malformed \(truncated/,
    ],
    ['a directory', (f) => mkdirSync(f), 'directory', /state\.db is not a shardmove checkpoint: it is a directory$/],
    [
      'a page overwritten inside, the header intact',
      (f) => (checkpointWithEvents(f), overwriteEventPage(f)),
      'damaged',
      /state\.db is not a usable shardmove (copy )?checkpoint: (SQLite's quick_check finds it damaged|database disk image is malformed)/,
    ],
    [
      "another program's database",
      (f) => new Database(f).exec('CREATE TABLE notes (x)').close(),
      'foreign',
      /state\.db is not a shardmove checkpoint: it is a SQLite database without its tables$/,
    ],
  ];
  for (const [name, make, problem, message] of cases) {
    it(`${name}: refused for reading and for writing, and left exactly as it was`, () => {
      const dir = tempDir();
      const file = join(dir, 'state.db');
      make(file);
      const before = contents(dir);
      expect(() => openCheckpoint(file, { readOnly: true })).toThrow(unusable(problem, message));
      expect(() => openCheckpoint(file)).toThrow(unusable(problem, message));
      expect(() => CopyCheckpoint.openReadOnly(file)).toThrow(
        unusable(problem, /is not a (usable )?shardmove copy checkpoint/),
      );
      expect(() => CopyCheckpoint.open(file)).toThrow(
        unusable(problem, /is not a (usable )?shardmove copy checkpoint/),
      );
      expect(isCopyCheckpointFile(file)).toBe(false);
      expect(contents(dir)).toEqual(before);
    });
  }

  it('a move checkpoint is no copy checkpoint, and the reverse; each says which it is', () => {
    const dir = tempDir();
    const move = join(dir, 'move.db');
    checkpointWithEvents(move);
    const copy = join(dir, 'copy.db');
    CopyCheckpoint.open(copy).close();
    const before = contents(dir);
    expect(() => CopyCheckpoint.open(move)).toThrow(
      unusable('foreign', /move\.db is not a shardmove copy checkpoint: it is a move checkpoint \(shardmove run\)/),
    );
    expect(() => openCheckpoint(copy)).toThrow(
      unusable('foreign', /copy\.db is not a shardmove checkpoint: it is a copy checkpoint \(shardmove copy\)/),
    );
    expect(isCopyCheckpointFile(move)).toBe(false);
    expect(contents(dir)).toEqual(before);
    expect(isCopyCheckpointFile(copy)).toBe(true);
  });
});

describe('a damaged checkpoint beside what a killed run left', () => {
  it("a writing open refuses it without checkpointing the -wal's commits into it", () => {
    const dir = tempDir();
    const work = join(dir, 'work');
    mkdirSync(work);
    checkpointWithEvents(join(work, 'state.db'));
    // What kill -9 leaves: the last commits in the -wal, not yet in the file.
    const writer = new Database(join(work, 'state.db'));
    writer.pragma('wal_autocheckpoint = 0');
    writer.prepare(`UPDATE run SET plan_name = 'after-the-crash' WHERE id = 1`).run();
    const file = join(dir, 'state.db');
    copyFileSync(join(work, 'state.db'), file);
    copyFileSync(join(work, 'state.db-wal'), `${file}-wal`);
    writer.close();
    rmSync(work, { recursive: true });
    overwriteEventPage(file);
    const before = contents(dir);
    expect(() => openCheckpoint(file)).toThrow(unusable('damaged', /state\.db is not a usable shardmove checkpoint/));
    expect(() => openCheckpoint(file, { readOnly: true })).toThrow(unusable('damaged', /state\.db/));
    expect(contents(dir)).toEqual(before);
  });

  it('a saved run that is not JSON is refused as damaged, not read as no run', () => {
    const dir = tempDir();
    const file = join(dir, 'state.db');
    checkpointWithEvents(file);
    const db = new Database(file);
    db.prepare(`UPDATE run SET snapshot = '{"value": "drain", ' WHERE id = 1`).run();
    db.close();
    const store = openCheckpoint(file, { readOnly: true });
    try {
      expect(() => store.loadRun()).toThrow(
        unusable('damaged', /state\.db is not a usable shardmove checkpoint: its saved run is not JSON/),
      );
    } finally {
      store.close();
    }
  });
});

describe('an empty file (a checkpoint nothing was written to yet)', () => {
  it('reads as an empty checkpoint without being written, and a writing open makes it one', () => {
    const dir = tempDir();
    const file = join(dir, 'state.db');
    writeFileSync(file, '');
    const ro = openCheckpoint(file, { readOnly: true });
    expect(ro.loadRun()).toBeNull();
    expect(ro.readLock()).toBeNull();
    ro.close();
    const copy = CopyCheckpoint.openReadOnly(file);
    expect(copy.readRun()).toBeNull();
    copy.close();
    expect(isCopyCheckpointFile(file)).toBe(false);
    expect(readdirSync(dir)).toEqual(['state.db']);
    expect(statSync(file).size).toBe(0);

    const rw = openCheckpoint(file);
    rw.saveRun({ planName: 'p', planHash: 'h', machineVersion: 1, snapshot: {} });
    rw.close();
    expect(openCheckpoint(file, { readOnly: true }).loadRun()?.planName).toBe('p');
  });
});

describe('opening for writing', () => {
  it("creates the checkpoint's directory when it is missing", () => {
    const file = join(tempDir(), 'deep', 'er', 'state.db');
    openCheckpoint(file).close();
    expect(statSync(file).isFile()).toBe(true);
  });

  it('names what is in the way of creating it', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'afile'), 'x');
    expect(() => openCheckpoint(join(dir, 'afile', 'state.db'))).toThrow(
      expect.objectContaining({
        code: CHECKPOINT_UNUSABLE,
        message: expect.stringContaining('afile/state.db') as string,
      }) as Error,
    );
  });
});
