/**
 * Replacing a file atomically, safely in a directory others can write to. The temporary file gets
 * an unpredictable name and is created with O_EXCL and mode 0600, so a symlink or file planted at a
 * guessed name is never followed or reused (the OAuth write-back and the metrics file once wrote
 * through predictable names), and a secret is never readable by others, not even for the moment
 * before the rename. Its final mode is set before the rename.
 *
 * The one rule of every output a command writes: only a regular file is ever replaced. A rename puts
 * a new regular file in place of whatever the name held, so a device node (`--items /dev/full`), a
 * FIFO, a socket, a directory's entry or a symlink (`/dev/stdout`) would be replaced, not written
 * to. The final component is looked at with lstat, so a symlink there is refused, not followed;
 * symlinks in the directories above it are the operator's layout and are followed.
 */
import { randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import { closeSync, fchmodSync, linkSync, lstatSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { OUTPUT_EXISTS, OUTPUT_NOT_A_FILE, OutputError } from './errors.js';

export interface AtomicWriteOptions {
  /** The file's permissions once in place (default 0600). */
  mode?: number;
  /** Names the temporary file (tests plant something at the first name); default random. */
  tempName?: (file: string) => string;
  /** Whether an existing regular file is replaced (default true); false: OUTPUT_EXISTS, and it stays. */
  replace?: boolean;
}

/** Tries of fresh names when one is taken: a collision of 96 random bits is a planted file. */
const TRIES = 5;

/** What `st` is, in words, when an output must never replace it; null for a regular file. */
export function kindOfNonFile(st: Stats): string | null {
  if (st.isFile()) return null;
  if (st.isSymbolicLink()) return 'a symlink';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/** What is at `path` (its last component not followed): nothing, a regular file, or what else, in words. */
export function outputTargetOf(path: string): { kind: 'none' } | { kind: 'file' } | { kind: 'other'; what: string } {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch {
    // Nothing there (or a directory above is missing, which the write itself reports).
    return { kind: 'none' };
  }
  const what = kindOfNonFile(st);
  return what === null ? { kind: 'file' } : { kind: 'other', what };
}

/** Throws OUTPUT_NOT_A_FILE when something other than a regular file is at `file`. */
export function refuseNonFile(file: string): void {
  const at = outputTargetOf(file);
  if (at.kind === 'other')
    throw new OutputError(
      OUTPUT_NOT_A_FILE,
      `${file} is ${at.what}; shardmove replaces only a regular file there (name a regular file)`,
    );
}

/**
 * Writes `text` to `file` through a new temporary file beside it, then renames it over `file`.
 * `text` may come in chunks (a large file is never one string); nothing is in place until all of it is.
 * Throws OUTPUT_NOT_A_FILE, before writing anything, when `file` is not a regular file (see above);
 * with `replace: false`, OUTPUT_EXISTS when anything is at `file`, which is left as it was.
 */
export function writeFileAtomic(file: string, text: string | Iterable<string>, opts: AtomicWriteOptions = {}): void {
  const replace = opts.replace ?? true;
  refuseNonFile(file);
  if (!replace) refuseExisting(file);
  const name = opts.tempName ?? randomTempName;
  for (let attempt = 1; ; attempt++) {
    const tmp = name(file);
    let fd: number;
    try {
      fd = openSync(tmp, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && attempt < TRIES) continue;
      throw err;
    }
    try {
      for (const chunk of typeof text === 'string' ? [text] : text) writeSync(fd, chunk);
      if (opts.mode !== undefined && opts.mode !== 0o600) fchmodSync(fd, opts.mode);
      closeSync(fd);
      if (replace) {
        // Looked at again just before the rename: the write may have taken a while. What is left is
        // a window of microseconds between this lstat and rename(2), which has no "only over a
        // regular file" flag; whoever could put a device or symlink at the name in that window can
        // write to the directory, so could remove or replace that entry anyway: the window gives
        // nobody a power they lack. Nothing is ever written into what is at the name.
        refuseNonFile(file);
        renameSync(tmp, file);
      } else {
        putInPlaceIfAbsent(tmp, file);
      }
      return;
    } catch (err) {
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
      rmSync(tmp, { force: true });
      throw err;
    }
  }
}

function refuseExisting(file: string): void {
  if (outputTargetOf(file).kind !== 'none')
    throw new OutputError(OUTPUT_EXISTS, `${file} exists; it is not replaced without --force`);
}

/**
 * Gives the complete temporary file its final name only where nothing is: link(2) fails when the
 * name is taken, atomically, so a file that appeared while this one was written stays. On a file
 * system without hard links, the check and a rename, with the window between them.
 */
function putInPlaceIfAbsent(tmp: string, file: string): void {
  try {
    linkSync(tmp, file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new OutputError(OUTPUT_EXISTS, `${file} exists; it is not replaced without --force`);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV') throw err;
    refuseExisting(file);
    renameSync(tmp, file);
    return;
  }
  rmSync(tmp, { force: true });
}

function randomTempName(file: string): string {
  return join(dirname(file), `.${basename(file)}.${randomBytes(12).toString('hex')}.tmp`);
}
