/**
 * Where a directory really is, for the copy's guardrails: never its path as a string. Two paths
 * can name one directory without a symlink anywhere: a bind mount of the source's parent (the same
 * NFS export mounted twice is the same), and then `rsync --delete` into the one deletes the other.
 * So a directory is known by
 * - its identity chain: the device and inode of the deepest directory of its real path that exists,
 *   then of each parent reached by `..` up to `/`, read by `stat` on the directory's own machine
 *   (over ssh for a target there, the path sent on stdin: it never enters a shell's command line);
 * - its place in its file system, from this machine's mount table (/proc/self/mountinfo): the
 *   mount's device and the path below that file system's root. A bind mount of a directory inside
 *   the source leaves the source's tree by `..` at its mount point, so only this sees that it is
 *   inside the source.
 * Two directories overlap when either says so, or when their real paths do (a path that does not
 * exist yet has only its existing part to go by).
 */
import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, posix } from 'node:path';
import { Readable } from 'node:stream';
import { isSameOrInside } from '../plan/copy-schema.js';
import { runCommand, scriptArgv } from './exec.js';

/** Parents followed before giving up: deeper than any real path (PATH_MAX is 4096 bytes). */
const MAX_DEPTH = 2048;

/** A directory as its machine sees it. */
export interface DirIdentity {
  /** The real path: symlinks resolved for the part that exists, the rest as written. */
  real: string;
  /** Whether the directory itself exists (else `chain` starts at its deepest existing parent). */
  exists: boolean;
  /** `dev:ino` of the deepest existing directory on the real path, then of each `..` up to `/`. */
  chain: string[];
}

/** How `a` lies relative to `b`, or null when neither holds the other. */
export type Relation = 'same' | 'inside' | 'holds';

const idOf = (st: { dev: bigint; ino: bigint }) => `${st.dev}:${st.ino}`;

/**
 * The identity of `real` (a real path, as realLocalPath gives it) on this machine. The parents are
 * reached by appending `/..` (the kernel's `..`, which leaves a mount at its mount point), not by
 * cutting the string.
 */
export async function localIdentity(real: string): Promise<DirIdentity> {
  let dir = real;
  for (;;) {
    const st = await stat(dir, { bigint: true }).catch(() => null);
    if (st?.isDirectory()) break;
    if (dir === '/') break;
    dir = dirname(dir);
  }
  const chain: string[] = [];
  let at = dir;
  for (let i = 0; i < MAX_DEPTH; i++) {
    const id = idOf(await stat(at, { bigint: true }));
    if (chain.at(-1) === id) break;
    chain.push(id);
    at = at === '/' ? '/..' : `${at}/..`;
  }
  return { real, exists: dir === real, chain };
}

/**
 * The script that answers a target's identity on its host, the path read from stdin (a plan path
 * holds no newline): the real path (`realpath -m`), whether it exists, then `stat`'s `dev:ino` of
 * its deepest existing directory and of each `cd -P ..` above it. Exit 97 when any of it fails.
 */
const IDENTITY_SCRIPT = [
  'IFS= read -r p || exit 97',
  'r=$(realpath -m -- "$p") || exit 97',
  'case $r in /*) ;; *) exit 97 ;; esac',
  `printf '%s\\n' "$r"`,
  'd=$r',
  'while [ ! -d "$d" ]; do d=$(dirname -- "$d"); done',
  'if [ "$d" = "$r" ]; then echo exists; else echo missing; fi',
  'cd -P -- "$d" || exit 97',
  `i=0; while [ $i -lt ${MAX_DEPTH} ]; do`,
  `  stat -c '%d:%i' . || exit 97`,
  '  [ "$(pwd -P)" = / ] && break',
  '  cd -P .. || exit 97; i=$((i + 1))',
  'done',
].join('\n');

/**
 * The identity of `path` on `host` (null: this machine, where realLocalPath resolves it first), or
 * null when the host cannot answer (ssh fails, no GNU realpath or stat, an answer that is not one).
 */
export async function remoteIdentity(host: string, path: string, signal?: AbortSignal): Promise<DirIdentity | null> {
  const r = await runCommand(scriptArgv(host, IDENTITY_SCRIPT), {
    ...(signal ? { signal } : {}),
    stdin: Readable.from([`${path}\n`]),
  });
  if (r.code !== 0) return null;
  const [real, state, ...ids] = r.stdout.replace(/\n$/, '').split('\n');
  if (real === undefined || !posix.isAbsolute(real) || (state !== 'exists' && state !== 'missing')) return null;
  if (ids.length === 0 || !ids.every((id) => /^\d+:\d+$/.test(id))) return null;
  return { real: posix.normalize(real), exists: state === 'exists', chain: ids };
}

/** How `a` lies relative to `b` by their identity chains alone. */
export function chainRelation(a: DirIdentity, b: DirIdentity): Relation | null {
  const [aHere, bHere] = [a.chain[0], b.chain[0]];
  if (a.exists && b.exists && aHere === bHere) return 'same';
  // A directory not there yet lies below its deepest existing parent, the head of its chain.
  if (b.exists && bHere !== undefined && a.chain.includes(bHere)) return 'inside';
  if (a.exists && aHere !== undefined && b.chain.includes(aHere)) return 'holds';
  return null;
}

/** A mount of this machine (a line of /proc/self/mountinfo): its device (`major:minor`), the path of its root within that device's file system, where it is mounted. */
export interface Mount {
  device: string;
  root: string;
  point: string;
}

/** `\ooo` escapes of mountinfo's paths (a space is `\040`). */
const unescapeMount = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** This machine's mounts, in mount order (a later mount on the same point hides an earlier one). */
export function readMounts(): Mount[] {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const out: Mount[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length < 5 || !/^\d+:\d+$/.test(f[2]!)) continue;
    out.push({ device: f[2]!, root: unescapeMount(f[3]!), point: unescapeMount(f[4]!) });
  }
  return out;
}

/** Where a real path of this machine lies in its file system: the device and the path below its root. */
export interface FsPlace {
  device: string;
  path: string;
}

/** The place of `real` (a real path of this machine), or null without a mount table (not Linux). */
export function fsPlaceOf(real: string, mounts: readonly Mount[] = readMounts()): FsPlace | null {
  let best: Mount | undefined;
  for (const m of mounts) {
    if (!isSameOrInside(real, m.point)) continue;
    if (best === undefined || m.point.length >= best.point.length) best = m;
  }
  if (best === undefined) return null;
  const below = best.point === '/' ? real : real.slice(best.point.length);
  return { device: best.device, path: posix.join(best.root, below) };
}

/** How the place `a` lies relative to `b`: the same device, one path at or below the other. */
export function placeRelation(a: FsPlace | null, b: FsPlace | null): Relation | null {
  if (a === null || b === null || a.device !== b.device) return null;
  if (a.path === b.path) return 'same';
  if (isSameOrInside(a.path, b.path)) return 'inside';
  if (isSameOrInside(b.path, a.path)) return 'holds';
  return null;
}

/** How real path `a` lies relative to `b` as strings. */
export function pathRelation(a: string, b: string): Relation | null {
  if (a === b) return 'same';
  if (isSameOrInside(a, b)) return 'inside';
  if (isSameOrInside(b, a)) return 'holds';
  return null;
}

/**
 * How `a` lies relative to `b`, both on this machine, by any of the three: their identity chains,
 * their places in the file systems, their real paths. Null: separate directories.
 */
export function relationOf(a: DirIdentity, b: DirIdentity, mounts: readonly Mount[] = readMounts()): Relation | null {
  return (
    chainRelation(a, b) ??
    placeRelation(fsPlaceOf(a.real, mounts), fsPlaceOf(b.real, mounts)) ??
    pathRelation(a.real, b.real)
  );
}

/** `a` is `relation` `b`, in words: "the same directory as", "inside", "a parent of". */
export function describeRelation(relation: Relation): string {
  return relation === 'same' ? 'the same directory as' : relation === 'inside' ? 'inside' : 'a parent of';
}
