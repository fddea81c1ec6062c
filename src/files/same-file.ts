/**
 * Whether two paths lead to the same file, by the file system's identity (device and inode), never
 * by comparing the strings: `./x` and `x`, a symlink and its target, two hard links, a directory
 * reached through a bind mount, all name one file. A path where nothing exists yet is the place it
 * would be created: its directory's identity and its name, so a file about to be created (the
 * -wal SQLite puts beside a checkpoint) is compared too.
 */
import { lstatSync, readlinkSync, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';

/** Symlinks followed before giving up, as the kernel does (ELOOP). */
const MAX_SYMLINK_HOPS = 40;

/** What a path leads to: an existing file's identity, or the place a new file would take. */
export type FileIdentity =
  | { kind: 'file'; id: string }
  | { kind: 'place'; dir: string; name: string }
  /** Neither the file nor its directory exists: it cannot be any existing file. */
  | { kind: 'nowhere'; path: string };

function idOf(path: string): string | null {
  try {
    const st = statSync(path, { bigint: true });
    return `${st.dev}:${st.ino}`;
  } catch {
    return null;
  }
}

/** `path` with every symlink at its end followed, dangling ones included (a link to where a file will be). */
function followLinks(path: string): string {
  let p = resolve(path);
  for (let hop = 0; hop < MAX_SYMLINK_HOPS; hop++) {
    let link: string;
    try {
      if (!lstatSync(p).isSymbolicLink()) return p;
      link = readlinkSync(p);
    } catch {
      return p;
    }
    p = resolve(dirname(p), link);
  }
  return p;
}

/** The identity `path` leads to (symlinks followed, the directory's own symlinks by stat). */
export function identityOf(path: string): FileIdentity {
  const p = followLinks(path);
  const id = idOf(p);
  if (id !== null) return { kind: 'file', id };
  const dir = idOf(dirname(p));
  return dir === null ? { kind: 'nowhere', path: p } : { kind: 'place', dir, name: basename(p) };
}

/** Whether two identities are one file (or one place for a file). */
export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  if (a.kind === 'file' && b.kind === 'file') return a.id === b.id;
  if (a.kind === 'place' && b.kind === 'place') return a.dir === b.dir && a.name === b.name;
  if (a.kind === 'nowhere' && b.kind === 'nowhere') return a.path === b.path;
  return false;
}

/** Whether paths `a` and `b` lead to the same file, or to the same place for one. */
export function isSameFile(a: string, b: string): boolean {
  return sameIdentity(identityOf(a), identityOf(b));
}
