/**
 * Finding the repositories under a storage directory: every directory whose name ends in `.git`
 * and that looks like a bare repository (HEAD, objects/, refs/), whatever the layout around it
 * (`@hashed/ab/cd/<sha>.git`, `group/project.git`, `@pools/...`). The walk does not descend into a
 * repository. Sizes are summed for the progress line.
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { CommandResult } from './exec.js';
import { runScript, shq } from './exec.js';

export interface RepoEntry {
  /** Path relative to the storage root, e.g. `@hashed/ab/cd/abcd....git`. */
  rel: string;
  /** Bytes of regular files in the repository. */
  bytes: number;
}

/** Lists the repositories under a local root, sorted by path. */
export async function findLocalRepos(root: string): Promise<RepoEntry[]> {
  const out: RepoEntry[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true });
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (!e.isDirectory()) continue;
      const childRel = rel ? `${rel}/${e.name}` : e.name;
      const full = join(dir, e.name);
      if (e.name.endsWith('.git') && (await isBareRepo(full))) out.push({ rel: childRel, bytes: await duBytes(full) });
      else await walk(full, childRel);
    }
  };
  await walk(root, '');
  return out;
}

async function isBareRepo(dir: string): Promise<boolean> {
  try {
    const [head, objects, refs] = await Promise.all([
      lstat(join(dir, 'HEAD')),
      lstat(join(dir, 'objects')),
      lstat(join(dir, 'refs')),
    ]);
    return head.isFile() && objects.isDirectory() && refs.isDirectory();
  } catch {
    return false;
  }
}

/** Bytes of the regular files under `dir` (symlinks not followed). */
export async function duBytes(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) total += await duBytes(full);
    else if (e.isFile()) total += (await lstat(full)).size;
  }
  return total;
}

/**
 * Lists the `*.git` directories under a root on the target (local or over ssh): one `find`, so a
 * remote target costs one round trip. A missing root lists nothing.
 */
export async function findTargetRepos(host: string | null, root: string, signal?: AbortSignal): Promise<string[]> {
  const script = `if [ -d ${shq(root)} ]; then cd ${shq(root)} && find . -type d -name '*.git' -prune -print; fi`;
  const out = await runScript(host, script, 'listing the target repositories', signal ? { signal } : {});
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => l.replace(/^\.\//, ''))
    .sort();
}

/** Entries directly inside a directory on the place (empty when it does not exist); throws when it is not a directory. */
export async function listEntries(host: string | null, dir: string, signal?: AbortSignal): Promise<string[]> {
  const script = `if [ -e ${shq(dir)} ]; then [ -d ${shq(dir)} ] || { echo 'not a directory' >&2; exit 3; }; ls -A ${shq(dir)}; fi`;
  const out = await runScript(host, script, `listing ${dir}`, signal ? { signal } : {});
  return out.split('\n').filter(Boolean);
}

export type { CommandResult };
