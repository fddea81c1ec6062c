/**
 * --wipe-target: the checks before the target directory is emptied, and the emptying. Each refusal
 * is a CopyRefusedError naming its rule (docs/copy.md, "Guardrails"), thrown before anything is
 * written. The checks look at the path as written and at its real path, resolved on the target's
 * host: a symlink to /usr/lib is /usr/lib, and the real path is the directory the wipe empties.
 */
import { homedir } from 'node:os';
import { posix } from 'node:path';
import { isSameOrInside } from '../plan/copy-schema.js';
import type { CopyPlan } from '../plan/copy-types.js';
import { CopyFailedError, CopyRefusedError } from './errors.js';
import { runScript, shq } from './exec.js';
import type { TargetFacts } from './guard.js';
import { byIdentity, targetRelation } from './guard.js';
import type { DirIdentity } from './identity.js';
import { listEntries } from './repos.js';

/** Trees that are never emptied, nor anything below them: the system's programs, settings and kernel views. */
const SYSTEM_TREES = ['/usr', '/etc', '/boot', '/bin', '/sbin', '/proc', '/sys', '/dev'];
/** Every top-level `/lib*` (`/lib`, `/lib64`, `/libx32`, `/libexec` ...) and everything below it. */
const LIB_TREE = /^\/lib[^/]*(\/|$)/;
/** Directories never emptied themselves; below them a storage may live (/var/lib/gitlab ...). */
const SYSTEM_DIRS = ['/var/lib'];
/** Names that mark a repository storage: GitLab's hashed layout, object pools, any bare repository. */
const STORAGE_NAMES = ['@hashed', '@pools', '@snippets', '*.git'];
/** How deep below the target a storage name is looked for (`group/subgroup/project.git` is 3). */
const STORAGE_DEPTH = 3;

/** The system tree `p` is or lies in, or undefined. Pure. */
export function systemTreeOf(p: string): string | undefined {
  if (SYSTEM_DIRS.includes(p)) return p;
  if (LIB_TREE.test(p)) return `/${p.split('/')[1]!}`;
  return SYSTEM_TREES.find((t) => isSameOrInside(p, t));
}

export interface WipeCheckOptions {
  /** --wipe-any-target: the operator accepts a target not owned by them or without a storage layout. */
  wipeAny: boolean;
  signal?: AbortSignal;
}

/**
 * Before --wipe-target empties the target; returns its real path, the directory the wipe empties (so
 * the checks, the dry run and the wipe agree about a symlink). Refuses, on the path as written and on
 * the real path:
 * - `wipe-target-safety`: `/` or a top-level directory; a home directory ($HOME, or any account's in
 *   the password database of the target's machine); on this machine, the source, inside it or a parent
 *   (by identity: ./identity.ts);
 * - `wipe-target-system-tree`: /usr, /etc, /boot, /bin, /sbin, /lib*, /proc, /sys, /dev and below, /var/lib;
 * - `wipe-target-home-ancestor`: a directory that holds a home directory;
 * and, unless --wipe-any-target, a target with entries that
 * - `wipe-target-not-owned`: is not owned by the user the copy runs as there (the ssh user on a host);
 * - `wipe-target-not-storage`: holds no `@hashed`, `@pools`, `@snippets` or `*.git` within 3 levels.
 */
export async function checkWipeSafety(
  plan: CopyPlan,
  source: DirIdentity,
  target: TargetFacts,
  opts: WipeCheckOptions,
): Promise<string> {
  const { host, path } = plan.copy.target;
  const real = target.real;
  if (real === null)
    throw new CopyRefusedError(
      'target-unresolved',
      `--wipe-target will not empty ${path} on ${host}: its real path cannot be resolved there (realpath -m), so it cannot be checked`,
    );
  const refuse = (rule: string, why: string): never => {
    throw new CopyRefusedError(
      rule,
      `--wipe-target will not empty ${path}${real !== path ? ` (real path ${real})` : ''}: ${why}`,
    );
  };
  const paths = [...new Set([path, real])];
  for (const p of paths) {
    if (p === '/' || posix.dirname(p) === '/') refuse('wipe-target-safety', `${p} is / or a top-level directory`);
    const tree = systemTreeOf(p);
    if (tree !== undefined)
      refuse(
        'wipe-target-system-tree',
        `${p} is ${tree === p ? 'a system directory' : `inside the system tree ${tree}`}`,
      );
  }
  // By identity, not only by path: through a bind mount of the source's parent, the wipe would
  // empty the source before tar reads it.
  const relation = targetRelation(target, source);
  if (relation !== null) {
    const how = byIdentity(relation, real, source.real);
    if (relation === 'same') refuse('wipe-target-safety', `it is the source${how}`);
    if (relation === 'inside') refuse('wipe-target-safety', `it is inside the source ${source.real}${how}`);
    refuse('wipe-target-safety', `it is a parent of the source ${source.real}${how}`);
  }
  const homes = await readHomes(host, opts.signal);
  for (const p of paths) {
    if (homes.includes(p)) refuse('wipe-target-safety', `${p} is a home directory`);
    const held = homes.find((h) => isSameOrInside(h, p));
    if (held !== undefined) refuse('wipe-target-home-ancestor', `${p} holds the home directory ${held}`);
  }
  if (!opts.wipeAny) {
    const seen = await inspectTarget(host, real, opts.signal);
    if (seen.entries && !seen.owned)
      refuse(
        'wipe-target-not-owned',
        'it is not owned by the user the copy runs as there; pass --wipe-any-target as well if it really is to be emptied',
      );
    if (seen.entries && !seen.storage)
      refuse(
        'wipe-target-not-storage',
        `nothing in it looks like a repository storage (no ${STORAGE_NAMES.join(', ')} within ${STORAGE_DEPTH} levels); pass --wipe-any-target as well if it really is to be emptied`,
      );
  }
  return real;
}

/** Home directories on the target's machine: $HOME there (and here, for a local target) and every account's. */
async function readHomes(host: string | null, signal?: AbortSignal): Promise<string[]> {
  const homes = new Set<string>();
  if (host === null) homes.add(homedir());
  const listed = await runScript(
    host,
    `echo "$HOME"; (getent passwd 2>/dev/null || cat /etc/passwd) | cut -d: -f6`,
    'listing home directories',
    signal ? { signal } : {},
  );
  for (const h of listed.split('\n')) if (h.trim().startsWith('/')) homes.add(h.trim());
  return [...homes].map((h) => posix.normalize(h).replace(/(.)\/+$/, '$1'));
}

/** What the directory at `real` holds, seen by the user the copy runs as on the target's host. */
async function inspectTarget(
  host: string | null,
  real: string,
  signal?: AbortSignal,
): Promise<{ entries: boolean; owned: boolean; storage: boolean }> {
  const d = shq(real);
  const names = STORAGE_NAMES.map((n) => `-name ${shq(n)}`).join(' -o ');
  const script = [
    `[ -d ${d} ] || exit 0`,
    `[ -n "$(ls -A ${d})" ] && echo entries`,
    `[ -O ${d} ] && echo owned`,
    `find ${d} -mindepth 1 -maxdepth ${STORAGE_DEPTH} \\( ${names} \\) -print 2>/dev/null | head -n 1 | grep -q . && echo storage`,
    'exit 0',
  ].join('\n');
  const out = new Set((await runScript(host, script, 'inspecting the target', signal ? { signal } : {})).split('\n'));
  return { entries: out.has('entries'), owned: out.has('owned'), storage: out.has('storage') };
}

/**
 * Empties `real` (the target's real path, from checkWipeSafety), keeping the directory itself. `find`
 * does not enter a symlinked start point, which is why the real path is wiped and not the path as
 * written. Then the target as tar will see it (`path`, through any symlink) must be empty: a wipe
 * that removed nothing fails instead of letting tar extract over stale files.
 */
export async function wipeTarget(host: string | null, real: string, path: string, signal?: AbortSignal): Promise<void> {
  const opts = signal ? { signal } : {};
  await runScript(
    host,
    `if [ -d ${shq(real)} ]; then find ${shq(real)} -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +; fi`,
    'emptying the target',
    opts,
  );
  const left = await listEntries(host, path, signal);
  if (left.length > 0)
    throw new CopyFailedError(
      `--wipe-target emptied ${real}, but ${path} still holds ${left.length} entries (${left.slice(0, 5).join(', ')}); it changed meanwhile?`,
    );
}
