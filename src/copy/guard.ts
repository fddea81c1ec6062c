/**
 * The copy guardrails that need the file system or the checkpoint (the plan-only ones are named
 * rules in src/plan/copy-schema.ts and are checked again here with real paths). Each refusal is a
 * CopyRefusedError naming its rule, thrown before anything is written.
 */
import { readlink, realpath, stat } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { basename, dirname, join, posix, resolve } from 'node:path';
import { isSameOrInside } from '../plan/copy-schema.js';
import type { CopyPlan } from '../plan/copy-types.js';
import { CopyRefusedError } from './errors.js';
import { runCommand, runScript, scriptArgv, shq } from './exec.js';

/** Symlinks followed before giving up, as the kernel does (ELOOP). */
const MAX_SYMLINK_HOPS = 40;

/**
 * The real path of `p`: symlinks resolved for the part that exists, the rest appended as written. A
 * dangling symlink is followed to where it points, as `realpath -m` does on an ssh host, so a link
 * into the source is seen as the source even before its target exists.
 */
export async function realLocalPath(p: string, hops = 0): Promise<string> {
  try {
    return await realpath(p);
  } catch {
    const parent = dirname(p);
    if (parent === p) return p;
    const here = join(await realLocalPath(parent, hops), basename(p));
    const link = await readlink(here).catch(() => null);
    if (link === null || hops >= MAX_SYMLINK_HOPS) return here;
    return realLocalPath(resolve(dirname(here), link), hops + 1);
  }
}

/** The source exists and is a directory. */
export async function checkSource(plan: CopyPlan): Promise<string> {
  const src = plan.copy.source.path;
  try {
    if (!(await stat(src)).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new CopyRefusedError('source-missing', `source ${src} is not an existing directory`);
  }
  return realLocalPath(src);
}

/** Plan-level rules, again at run time: a hand-edited checkpoint or --state cannot skip them. */
export function checkClustered(plan: CopyPlan): void {
  if (plan.copy.target.clustered && plan.copy.method !== 'backup') {
    throw new CopyRefusedError(
      'clustered-target-backup-only',
      `a clustered target accepts only backup and restore, not ${plan.copy.method}`,
    );
  }
}

/** What the guardrails know about the target: its real path, and whether it is on this machine. */
export interface TargetFacts {
  /** The real path on the target's machine; null when an ssh host could not resolve it. */
  real: string | null;
  /** Local, or an ssh host with this machine's id (or an unknown id without --hosts-differ). */
  sameMachine: boolean;
}

/**
 * The target's real path as its own machine sees it: symlinks resolved here (realLocalPath), or
 * `realpath -m` on the ssh host through the same ssh as the copy (-m: the part that does not exist
 * yet is appended as written). Null when the host cannot answer (ssh fails, no GNU realpath, an
 * answer that is not one absolute path).
 */
export async function resolveTargetPath(
  host: string | null,
  path: string,
  signal?: AbortSignal,
): Promise<string | null> {
  if (host === null) return realLocalPath(path);
  const r = await runCommand(scriptArgv(host, `realpath -m -- ${shq(path)}`), signal ? { signal } : {});
  const real = r.stdout.replace(/\n$/, '');
  return r.code === 0 && posix.isAbsolute(real) && !real.includes('\n') ? posix.normalize(real) : null;
}

/**
 * Source, target and backup directory never overlap (same directory, or one inside another), compared
 * by real path, the target's resolved on its own machine. A target on another machine is another
 * file system and is not compared. An ssh target whose real path is unknown is refused, unless the
 * operator said --hosts-differ and the machine ids do not say otherwise.
 */
export async function checkOverlap(
  plan: CopyPlan,
  sourceReal: string,
  target: TargetFacts,
  backupDir: string | null,
  hostsDiffer: boolean,
): Promise<void> {
  const { host, path } = plan.copy.target;
  if (target.real === null && (target.sameMachine || !hostsDiffer)) {
    const why = target.sameMachine
      ? `${host} may be this machine (same or unknown machine id)${hostsDiffer ? '; --hosts-differ cannot override a matching machine id' : ''}`
      : `if ${host} is another machine, say so with --hosts-differ`;
    throw new CopyRefusedError(
      'target-unresolved',
      `cannot resolve the real path of ${path} on ${host} (realpath -m there), so it cannot be compared with the source; ${why}`,
    );
  }
  const targetReal = target.sameMachine ? target.real : null;
  if (targetReal !== null && (isSameOrInside(targetReal, sourceReal) || isSameOrInside(sourceReal, targetReal))) {
    const where = host === null ? '' : ` on ${host}, this machine,`;
    throw new CopyRefusedError(
      'source-target-overlap',
      `source ${plan.copy.source.path} and target ${path}${where} overlap (real paths ${sourceReal} and ${targetReal}); copying would overwrite the source`,
    );
  }
  if (backupDir !== null) {
    const b = await realLocalPath(backupDir);
    for (const other of [sourceReal, ...(targetReal === null ? [] : [targetReal])]) {
      if (isSameOrInside(b, other) || isSameOrInside(other, b))
        throw new CopyRefusedError('backup-path-overlap', `backup directory ${backupDir} overlaps ${other}`);
    }
  }
}

/**
 * A target that exists is a directory (or a symlink to one): a file or a dangling symlink would make
 * every method fail half-way (backup only after bundling everything), so it is refused up front.
 */
export async function checkTargetIsDirectory(host: string | null, path: string, signal?: AbortSignal): Promise<void> {
  const p = shq(path);
  const script = `if [ -L ${p} ] && [ ! -e ${p} ]; then echo dangling; elif [ -e ${p} ] && [ ! -d ${p} ]; then echo file; fi`;
  const found = (await runScript(host, script, 'checking the target', signal ? { signal } : {})).trim();
  if (found === 'dangling')
    throw new CopyRefusedError(
      'target-not-directory',
      `target ${path} is a symlink to nothing; point it at a directory or remove it`,
    );
  if (found === 'file')
    throw new CopyRefusedError('target-not-directory', `target ${path} exists and is not a directory`);
}

function localMachineId(): string | null {
  for (const f of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      const id = readFileSync(f, 'utf8').trim();
      if (id) return id;
    } catch {
      // Try the next one.
    }
  }
  return null;
}

/**
 * Whether an ssh target is this very machine, by /etc/machine-id. Two known ids decide. When either
 * side has none, it is assumed to be, so the source checks apply (the cautious answer), unless the
 * operator said --hosts-differ; that flag never overrides two equal ids.
 */
export async function isThisMachine(host: string | null, hostsDiffer: boolean, signal?: AbortSignal): Promise<boolean> {
  if (host === null) return true;
  const local = localMachineId();
  const remote = (
    await runScript(
      host,
      'cat /etc/machine-id 2>/dev/null || cat /var/lib/dbus/machine-id 2>/dev/null || true',
      'reading the target machine id',
      signal ? { signal } : {},
    )
  ).trim();
  if (local !== null && remote !== '') return local === remote;
  return !hostsDiffer;
}
