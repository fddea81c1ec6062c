/**
 * Opening a checkpoint file (a move's or a copy's): the one place that tells a usable checkpoint
 * from a bad file, before anything is written to it. A directory, a file that is not SQLite, a
 * damaged database (truncated: SQLite checks the page count in the header against the file; a page
 * overwritten inside it: SQLite's quick_check, see checkIntegrity), another program's database, or
 * one that a writing command cannot write: each throws a CheckpointUnusableError naming the file,
 * and the file is left exactly as it was (no schema created in it, no journal mode set, nothing
 * "repaired").
 *
 * Reading leaves the directory as it was: SQLite reads a WAL database only with a -wal and a -shm
 * beside it, and a read-only connection that creates them cannot remove them. So a reader opens the
 * file in place read-only only when both are there already (a run holds it, or a killed run left
 * them); when neither is, it opens it in place with a connection that may remove what it creates
 * (query_only, so it still writes nothing), and SQLite removes them when it is the last to close;
 * otherwise (one of the two alone, or a file or directory this user cannot write: `status` or
 * `report` of another user's run) the file, and its -wal, are read from a private copy in the
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
import { checkpointBusy, isBusyError, lockHolderOn } from './busy.js';
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
 * `integrity: false` skips the whole-file check: for a reader that only asks which kind a file is
 * and opens it again to use it, and for a writer whose file was just checked whole by
 * `checkCheckpointFile` (a run checks it in a worker thread while its modules load).
 */
export function openCheckpointFile(
  file: string,
  kind: CheckpointKind,
  opts: { readOnly: boolean; busyTimeoutMs: number; integrity?: boolean },
): OpenedCheckpointFile {
  const sidecars = [`${realPath(file)}-wal`, `${realPath(file)}-shm`].filter((f) => !existsSync(f));
  try {
    return opts.readOnly
      ? openForReading(file, kind, opts.busyTimeoutMs, opts.integrity ?? true)
      : openForWriting(file, kind, opts.busyTimeoutMs, opts.integrity ?? true);
  } catch (err) {
    // SQLite creates an empty -wal and a -shm before it finds a WAL file damaged or read-only, and a
    // connection that cannot write leaves them: take away what this open added beside a file it refuses.
    if (err instanceof CheckpointUnusableError) for (const f of sidecars) removeAddedSidecar(f);
    throw err;
  }
}

function openForReading(
  file: string,
  kind: CheckpointKind,
  busyTimeoutMs: number,
  integrity: boolean,
): OpenedCheckpointFile {
  checkPath(file, kind, { mustExist: true });
  const real = realPath(file);
  const wal = existsSync(`${real}-wal`);
  const shm = existsSync(`${real}-shm`);
  const inPlace =
    wal && shm
      ? { readonly: true }
      : !wal && !shm && canAccess(real, constants.W_OK) && canAccess(dirname(real), constants.W_OK)
        ? { readonly: false }
        : null;
  if (inPlace !== null) {
    try {
      return readFile(file, file, kind, { ...inPlace, busyTimeoutMs, integrity }, () => undefined);
    } catch (err) {
      if (!needsPrivateCopy(err, file)) throw classify(err, file, kind, false);
    }
  }
  let dir: string;
  try {
    dir = mkdtempSync(join(tmpdir(), 'shardmove-read-'));
  } catch (err) {
    throw unusable(
      file,
      'unreadable',
      `cannot read the ${kind.what} ${file} in place, nor from a private copy: ${(err as Error).message}`,
    );
  }
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    const copy = join(dir, basename(real));
    copyFileSync(real, copy, constants.COPYFILE_FICLONE);
    // A run stopped by kill -9 leaves its last commits in the -wal; SQLite rebuilds the -shm from it.
    if (wal) copyFileSync(`${real}-wal`, `${copy}-wal`, constants.COPYFILE_FICLONE);
    return readFile(copy, file, kind, { readonly: true, busyTimeoutMs, integrity }, cleanup);
  } catch (err) {
    cleanup();
    throw classify(err, file, kind, false);
  }
}

/**
 * Reads `path` (the checkpoint `file`, or a private copy of it) as a checkpoint of `kind`.
 * `readonly: false` is a connection that may write only what SQLite itself keeps beside the file (it
 * removes its -wal and -shm on the last close, which a read-only connection cannot); query_only
 * stops every write to the database.
 */
function readFile(
  path: string,
  file: string,
  kind: CheckpointKind,
  opts: { readonly: boolean; busyTimeoutMs: number; integrity: boolean },
  cleanup: () => void,
): OpenedCheckpointFile {
  const db = new Database(path, { readonly: opts.readonly, fileMustExist: true });
  try {
    if (!opts.readonly) db.pragma('query_only = ON');
    db.pragma(`busy_timeout = ${opts.busyTimeoutMs}`);
    if (opts.integrity) checkIntegrity(db, file, kind);
    if (!identify(db, kind, file)) return { db, fresh: false, close: () => closeAll(db, cleanup) };
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

function openForWriting(
  file: string,
  kind: CheckpointKind,
  busyTimeoutMs: number,
  integrity: boolean,
): OpenedCheckpointFile {
  if (checkPath(file, kind, { mustExist: false })) {
    // Checked as a reader first: a writing connection that closes last checkpoints a -wal left by a
    // killed run into the file, and a damaged file must be refused without a byte written to it.
    // A file checked so just now (checkCheckpointFile, in a worker thread) is not read twice.
    if (integrity) openForReading(file, kind, busyTimeoutMs, true).close();
  } else {
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
    // Another writer kept its lock past the busy timeout: named from the run lock, read beside it.
    const refusal = isBusyError(err) ? checkpointBusy(file, lockHolderOn(db)) : null;
    db.close();
    throw refusal ?? classify(err, file, kind, true);
  }
}

/**
 * Checks `file` whole as a reader would (quick_check, the kind, an empty file) and closes it;
 * throws what opening it would throw. Nothing at `file`: nothing to check.
 */
export function checkCheckpointFile(file: string, kind: CheckpointKind, busyTimeoutMs: number): void {
  if (!checkPath(file, kind, { mustExist: false })) return;
  openForReading(file, kind, busyTimeoutMs, true).close();
}

/** How many of quick_check's findings are looked at; the message names the first. */
const INTEGRITY_FINDINGS = 10;

/**
 * The whole file's structure, before anything trusts or writes it: SQLite's `PRAGMA quick_check`.
 * A page overwritten inside a file whose header is intact is found only by reading every page:
 * SQLite checks a page when a query first reads it, so a command would otherwise fail half-way
 * (after writing, for `run` and `control --pause`), or never read the page and trust the rest.
 * quick_check is the cheapest check that reads every page of every table and index and checks
 * each page's structure; it skips integrity_check's comparison of every index with its table,
 * which took seven times as long on a checkpoint of a million items (0.25 to 0.3 s against 2.2 s for
 * 250 MB, read from the page cache). The dbstat table walks the same pages in a third of
 * the time but decodes less of each, and took most overwritten pages of overflow records and
 * stale copies of other pages for sound ones: it is not enough. Reading the file without SQLite
 * cannot tell a free page from a damaged one without walking the b-trees as quick_check does.
 */
function checkIntegrity(db: Database.Database, file: string, kind: CheckpointKind): void {
  const findings = (db.pragma(`quick_check(${INTEGRITY_FINDINGS})`) as { quick_check: string }[]).map((r) =>
    r.quick_check.replace(/^\*\*\* in database \w+ \*\*\*\s*/, '').replace(/\s+/g, ' '),
  );
  if (findings.length === 1 && findings[0] === 'ok') return;
  const more =
    findings.length > 1
      ? `, and ${findings.length - 1}${findings.length === INTEGRITY_FINDINGS ? ' or more' : ''} more`
      : '';
  throw unusable(
    file,
    'damaged',
    `${file} is not a usable ${kind.what}: SQLite's quick_check finds it damaged (${findings[0]}${more}); it was left as it is: restore it from a copy, or move it aside`,
  );
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
  if (isBusyError(err)) return checkpointBusy(file, null);
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
