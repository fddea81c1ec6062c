/**
 * Opening a checkpoint file (a move's or a copy's): the one place that tells a usable checkpoint
 * from a bad file, before anything is written to it. A directory, a file that is not SQLite, a
 * damaged database (e.g. truncated: SQLite checks the page count in the header against the file),
 * another program's database, or one that a writing command cannot write: each throws a
 * CheckpointUnusableError naming the file, and the file is left exactly as it was (no schema
 * created in it, no journal mode set, nothing "repaired").
 *
 * Reading works where the directory is not writable too (`status`, `report` of another user's run):
 * SQLite reads a WAL database only with a -shm file beside it, which it cannot create there. Then
 * the file, and the -wal a stopped run may have left, are read from a private copy in the
 * temporary directory, removed on close.
 */
import {
  accessSync,
  constants,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import type { CheckpointProblem } from './errors.js';
import { CheckpointUnusableError, StoreVersionError } from './errors.js';

/** A kind of checkpoint file, as the opener checks it. */
export interface CheckpointKind {
  /** What the file should be, in messages ("shardmove checkpoint"). */
  what: string;
  /** A table every file of this kind has (its first migration creates it). */
  table: string;
  /** The newest schema version (`PRAGMA user_version`) this build knows. */
  schemaVersion: number;
  /** The other kind, told apart by its table: a copy checkpoint given to `run`, or the reverse. */
  other: { table: string; what: string };
  /** Creates the schema on an empty database (a read-only open reads an empty file as an empty checkpoint). */
  createSchema(db: Database.Database): void;
}

export interface OpenedCheckpointFile {
  db: Database.Database;
  /** The file held no schema yet (it is empty). A read-only open then reads an empty in-memory one. */
  fresh: boolean;
  /** Closes the database and removes the private copy, if one was read. */
  close(): void;
}

/**
 * Opens `file` as a checkpoint of `kind`: read-only, or for writing (its directory is created when
 * missing; the file too, by SQLite). Throws CheckpointUnusableError when the file cannot be one.
 */
export function openCheckpointFile(
  file: string,
  kind: CheckpointKind,
  opts: { readOnly: boolean; busyTimeoutMs: number },
): OpenedCheckpointFile {
  const sidecars = [`${realPath(file)}-wal`, `${realPath(file)}-shm`].filter((f) => !existsSync(f));
  try {
    return opts.readOnly
      ? openForReading(file, kind, opts.busyTimeoutMs)
      : openForWriting(file, kind, opts.busyTimeoutMs);
  } catch (err) {
    // SQLite creates an empty -wal and a -shm before it finds a WAL file damaged or read-only, and a
    // connection that cannot write leaves them: take away what this open added beside a file it refuses.
    if (err instanceof CheckpointUnusableError) for (const f of sidecars) removeAddedSidecar(f);
    throw err;
  }
}

function openForReading(file: string, kind: CheckpointKind, busyTimeoutMs: number): OpenedCheckpointFile {
  checkPath(file, kind, { mustExist: true });
  try {
    return readFile(file, kind, busyTimeoutMs, () => undefined);
  } catch (err) {
    if (!needsPrivateCopy(err, file)) throw classify(err, file, kind, false);
  }
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-read-'));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    const real = realPath(file);
    const copy = join(dir, basename(real));
    copyFileSync(real, copy, constants.COPYFILE_FICLONE);
    // A run stopped by kill -9 leaves its last commits in the -wal; SQLite rebuilds the -shm from it.
    if (existsSync(`${real}-wal`)) copyFileSync(`${real}-wal`, `${copy}-wal`, constants.COPYFILE_FICLONE);
    return readFile(copy, kind, busyTimeoutMs, cleanup);
  } catch (err) {
    cleanup();
    throw classify(err, file, kind, false);
  }
}

function readFile(
  path: string,
  kind: CheckpointKind,
  busyTimeoutMs: number,
  cleanup: () => void,
): OpenedCheckpointFile {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    if (!identify(db, kind, path)) return { db, fresh: false, close: () => closeAll(db, cleanup) };
  } catch (err) {
    closeAll(db, cleanup);
    throw err;
  }
  // An empty file is a checkpoint nothing was written to yet: read it as one, without writing to it.
  closeAll(db, cleanup);
  const empty = new Database(':memory:');
  kind.createSchema(empty);
  return { db: empty, fresh: true, close: () => empty.close() };
}

function openForWriting(file: string, kind: CheckpointKind, busyTimeoutMs: number): OpenedCheckpointFile {
  if (!checkPath(file, kind, { mustExist: false })) {
    try {
      mkdirSync(dirname(file), { recursive: true });
    } catch (err) {
      throw unusable(file, 'read-only', `cannot create the ${kind.what} ${file}: ${(err as Error).message}`);
    }
  }
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (err) {
    throw classify(err, file, kind, true);
  }
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    const fresh = identify(db, kind, file);
    // Whether this connection can write (a file of mode 0444 opens, then refuses the first write):
    // the smallest write, rolled back, so a command that must write fails here and not halfway.
    db.exec('BEGIN IMMEDIATE');
    try {
      db.pragma(`user_version = ${db.pragma('user_version', { simple: true }) as number}`);
    } finally {
      if (db.inTransaction) db.exec('ROLLBACK');
    }
    return { db, fresh, close: () => db.close() };
  } catch (err) {
    db.close();
    throw classify(err, file, kind, true);
  }
}

/**
 * Reads the schema (the first read: SQLite checks the header here) and tells whether the file is
 * empty (true), of this kind (false), or anything else (throws).
 */
function identify(db: Database.Database, kind: CheckpointKind, file: string): boolean {
  const version = db.pragma('user_version', { simple: true }) as number;
  const names = (db.prepare('SELECT name FROM sqlite_master').all() as { name: string }[]).map((r) => r.name);
  if (names.length === 0 && version === 0) return true;
  if (names.includes(kind.table)) return false;
  if (names.includes(kind.other.table))
    throw unusable(file, 'foreign', `${file} is not a ${kind.what}: it is a ${kind.other.what}`);
  // Written by a newer shardmove, whose schema this build cannot know: say that, not "foreign".
  if (names.length === 0 && version > kind.schemaVersion)
    throw new StoreVersionError(file, version, kind.schemaVersion);
  throw unusable(file, 'foreign', `${file} is not a ${kind.what}: it is a SQLite database without its tables`);
}

/** False when nothing is at `file` (and it may be created); throws for a directory or a special file. */
function checkPath(file: string, kind: CheckpointKind, opts: { mustExist: boolean }): boolean {
  let stat;
  try {
    stat = statSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !opts.mustExist) return false;
    throw unusable(file, 'unreadable', `cannot open the ${kind.what} ${file}: ${(err as Error).message}`);
  }
  if (stat.isDirectory()) throw unusable(file, 'directory', `${file} is not a ${kind.what}: it is a directory`);
  if (!stat.isFile()) throw unusable(file, 'not-a-file', `${file} is not a ${kind.what}: it is not a regular file`);
  return true;
}

/** SQLite could not read in place because it cannot create the -shm (or -wal) beside the file. */
function needsPrivateCopy(err: unknown, file: string): boolean {
  if (!(err instanceof Database.SqliteError)) return false;
  if (!/^SQLITE_(CANTOPEN|READONLY)/.test(err.code)) return false;
  const real = realPath(file);
  return canAccess(real, constants.R_OK) && !canAccess(dirname(real), constants.W_OK);
}

/** A SQLite (or file system) error while opening, as the problem it means for this file. */
function classify(err: unknown, file: string, kind: CheckpointKind, writing: boolean): unknown {
  if (err instanceof CheckpointUnusableError) return err;
  const code =
    err instanceof Database.SqliteError
      ? err.code
      : typeof (err as NodeJS.ErrnoException)?.syscall === 'string'
        ? 'FS'
        : '';
  const reason = (err as Error).message;
  if (code === 'SQLITE_NOTADB') return unusable(file, 'not-a-database', `${file} is not a ${kind.what}: ${reason}`);
  if (code.startsWith('SQLITE_CORRUPT')) {
    return unusable(
      file,
      'damaged',
      `${file} is not a usable ${kind.what}: ${reason} (truncated or damaged; it was left as it is: restore it from a copy, or move it aside)`,
    );
  }
  if (!/^(SQLITE_(CANTOPEN|READONLY|PERM|IOERR|AUTH)|FS)/.test(code)) return err;
  const real = realPath(file);
  if (writing && !canAccess(dirname(real), constants.W_OK)) {
    return unusable(
      file,
      'read-only',
      `cannot write the ${kind.what} ${file}: its directory ${dirname(real)} is not writable (SQLite keeps its -wal and -shm files beside it)`,
    );
  }
  if (writing && existsSync(file) && !canAccess(real, constants.W_OK)) {
    return unusable(file, 'read-only', `cannot write the ${kind.what} ${file}: the file is read-only`);
  }
  if (existsSync(file) && !canAccess(real, constants.R_OK))
    return unusable(file, 'unreadable', `cannot read the ${kind.what} ${file}: permission denied`);
  return unusable(
    file,
    writing && code.startsWith('SQLITE_READONLY') ? 'read-only' : 'unreadable',
    `cannot ${writing ? 'open' : 'read'} the ${kind.what} ${file}: ${reason}`,
  );
}

function unusable(file: string, problem: CheckpointProblem, message: string): CheckpointUnusableError {
  return new CheckpointUnusableError(file, problem, message);
}

/** Where SQLite puts the -wal and -shm: beside the symlink's target, not beside the link. */
function realPath(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

function canAccess(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

/** Removes a -shm, or a -wal with nothing in it (one with content holds commits: never removed). */
function removeAddedSidecar(file: string): void {
  try {
    if (!file.endsWith('-wal') || statSync(file).size === 0) rmSync(file, { force: true });
  } catch {
    // Not there (SQLite did not create it), or not ours to remove.
  }
}

function closeAll(db: Database.Database, cleanup: () => void): void {
  try {
    db.close();
  } finally {
    cleanup();
  }
}
