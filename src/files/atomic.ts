/**
 * Replacing a file atomically, safely in a directory others can write to. The temporary file gets
 * an unpredictable name and is created with O_EXCL and mode 0600, so a symlink or file planted at a
 * guessed name is never followed or reused (the OAuth write-back and the metrics file once wrote
 * through predictable names), and a secret is never readable by others, not even for the moment
 * before the rename. Its final mode is set before the rename.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export interface AtomicWriteOptions {
  /** The file's permissions once in place (default 0600). */
  mode?: number;
  /** Names the temporary file (tests plant something at the first name); default random. */
  tempName?: (file: string) => string;
}

/** Tries of fresh names when one is taken: a collision of 96 random bits is a planted file. */
const TRIES = 5;

/**
 * Writes `text` to `file` through a new temporary file beside it, then renames it over `file`.
 * `text` may come in chunks (a large file is never one string); nothing is in place until all of it is.
 */
export function writeFileAtomic(file: string, text: string | Iterable<string>, opts: AtomicWriteOptions = {}): void {
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
      renameSync(tmp, file);
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

function randomTempName(file: string): string {
  return join(dirname(file), `.${basename(file)}.${randomBytes(12).toString('hex')}.tmp`);
}
