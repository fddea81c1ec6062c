/**
 * Opening a file to append to (the run's log, `run --events FILE`): created if missing, never through a
 * symlink at its name (O_NOFOLLOW), never waiting for a reader should a FIFO be there (O_NONBLOCK, which
 * does not change how a regular file is written), and judged on the opened file itself, so nothing put at
 * the name between a command's first check and the open is written to. Only a regular file is appended to,
 * as only a regular file is ever replaced (./atomic.ts).
 */
import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { kindOfNonFile } from './atomic.js';

const APPEND_FLAGS =
  constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** An opened descriptor, or why the name cannot be appended to: what is there in words, or the open's error. */
export type AppendOpen = { fd: number } | { refused: string } | { error: Error };

/** Opens `file` for appending when it is (or becomes) a regular file; never throws. */
export function openForAppend(file: string, mode: number): AppendOpen {
  let fd: number;
  try {
    fd = openSync(file, APPEND_FLAGS, mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ELOOP: a symlink at the name; ENXIO: a FIFO nobody reads.
    if (code === 'ELOOP') return { refused: 'a symlink' };
    if (code === 'ENXIO') return { refused: 'a FIFO (named pipe)' };
    return { error: err as Error };
  }
  const what = kindOfNonFile(fstatSync(fd));
  if (what === null) return { fd };
  closeSync(fd);
  return { refused: what };
}
