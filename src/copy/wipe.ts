/**
 * --wipe-target: the checks before the target directory is emptied, and the emptying. Each refusal
 * is a CopyRefusedError naming its rule, thrown before anything is written.
 */
import { homedir } from 'node:os';
import { posix } from 'node:path';
import { isSameOrInside } from '../plan/copy-schema.js';
import type { CopyPlan } from '../plan/copy-types.js';
import { CopyRefusedError } from './errors.js';
import { runScript, shq } from './exec.js';
import { realLocalPath } from './guard.js';

/**
 * Before --wipe-target empties the target: it is not `/` or a top-level directory, not a home
 * directory (the user's $HOME or any account's in passwd, on the target's machine), and, when the
 * target is on this machine, not the source, not inside it and not a parent of it.
 */
export async function checkWipeSafety(plan: CopyPlan, sourceReal: string, targetOnThisMachine: boolean, signal?: AbortSignal): Promise<void> {
  const { host, path } = plan.copy.target;
  const refuse = (why: string) => {
    throw new CopyRefusedError('wipe-target-safety', `--wipe-target will not empty ${path}: ${why}`);
  };
  const opts = signal ? { signal } : {};
  const real = host === null
    ? await realLocalPath(path)
    : (await runScript(host, `cd ${shq(path)} 2>/dev/null && pwd -P || echo ${shq(path)}`, 'resolving the target path', opts)).trim();
  for (const p of [path, real]) {
    if (p === '/' || posix.dirname(p) === '/') refuse(`${p} is / or a top-level directory`);
  }
  if (targetOnThisMachine) {
    if (real === sourceReal) refuse('it is the source');
    if (isSameOrInside(real, sourceReal)) refuse(`it is inside the source ${sourceReal}`);
    if (isSameOrInside(sourceReal, real)) refuse(`it is a parent of the source ${sourceReal}`);
  }
  const homes = new Set<string>();
  if (host === null) homes.add(homedir());
  const listed = await runScript(host, `echo "$HOME"; (getent passwd 2>/dev/null || cat /etc/passwd) | cut -d: -f6`, 'listing home directories', opts);
  for (const h of listed.split('\n')) if (h.trim().startsWith('/')) homes.add(posix.normalize(h.trim()).replace(/(.)\/+$/, '$1'));
  if (homes.has(path) || homes.has(real)) refuse('it is a home directory');
}

/** Empties the target directory, keeping the directory itself. Only after checkWipeSafety. */
export async function wipeTarget(host: string | null, path: string, signal?: AbortSignal): Promise<void> {
  await runScript(host, `if [ -d ${shq(path)} ]; then find ${shq(path)} -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +; fi`, 'emptying the target', signal ? { signal } : {});
}
