/**
 * --wipe-target: the checks before the target directory is emptied, and the emptying. Each refusal
 * is a CopyRefusedError naming its rule, thrown before anything is written.
 */
import { homedir } from 'node:os';
import { posix } from 'node:path';
import { isSameOrInside } from '../plan/copy-schema.js';
import type { CopyPlan } from '../plan/copy-types.js';
import { CopyFailedError, CopyRefusedError } from './errors.js';
import { runScript, shq } from './exec.js';
import type { TargetFacts } from './guard.js';
import { listEntries } from './repos.js';

/**
 * Before --wipe-target empties the target: it is not `/` or a top-level directory, not a home
 * directory (the user's $HOME or any account's in passwd, on the target's machine), and, when the
 * target is on this machine, not the source, not inside it and not a parent of it. Checked on the
 * path as written and on its real path (resolved on the target's host), which it returns: that is
 * the directory the wipe empties, so the checks, the dry run and the wipe agree about a symlink.
 */
export async function checkWipeSafety(plan: CopyPlan, sourceReal: string, target: TargetFacts, signal?: AbortSignal): Promise<string> {
  const { host, path } = plan.copy.target;
  const refuse = (why: string) => {
    throw new CopyRefusedError('wipe-target-safety', `--wipe-target will not empty ${path}: ${why}`);
  };
  const opts = signal ? { signal } : {};
  const real = target.real;
  if (real === null) throw new CopyRefusedError('target-unresolved', `--wipe-target will not empty ${path} on ${host}: its real path cannot be resolved there (realpath -m), so it cannot be checked`);
  for (const p of [path, real]) {
    if (p === '/' || posix.dirname(p) === '/') refuse(`${p} is / or a top-level directory`);
  }
  if (target.sameMachine) {
    if (real === sourceReal) refuse('it is the source');
    if (isSameOrInside(real, sourceReal)) refuse(`it is inside the source ${sourceReal}`);
    if (isSameOrInside(sourceReal, real)) refuse(`it is a parent of the source ${sourceReal}`);
  }
  const homes = new Set<string>();
  if (host === null) homes.add(homedir());
  const listed = await runScript(host, `echo "$HOME"; (getent passwd 2>/dev/null || cat /etc/passwd) | cut -d: -f6`, 'listing home directories', opts);
  for (const h of listed.split('\n')) if (h.trim().startsWith('/')) homes.add(posix.normalize(h.trim()).replace(/(.)\/+$/, '$1'));
  if (homes.has(path) || homes.has(real)) refuse('it is a home directory');
  return real;
}

/**
 * Empties `real` (the target's real path, from checkWipeSafety), keeping the directory itself. `find`
 * does not enter a symlinked start point, which is why the real path is wiped and not the path as
 * written. Then the target as tar will see it (`path`, through any symlink) must be empty: a wipe
 * that removed nothing fails instead of letting tar extract over stale files.
 */
export async function wipeTarget(host: string | null, real: string, path: string, signal?: AbortSignal): Promise<void> {
  const opts = signal ? { signal } : {};
  await runScript(host, `if [ -d ${shq(real)} ]; then find ${shq(real)} -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +; fi`, 'emptying the target', opts);
  const left = await listEntries(host, path, signal);
  if (left.length > 0) throw new CopyFailedError(`--wipe-target emptied ${real}, but ${path} still holds ${left.length} entries (${left.slice(0, 5).join(', ')}); it changed meanwhile?`);
}
