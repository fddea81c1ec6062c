/**
 * The copy guardrails that need the file system or the checkpoint (the plan-only ones are named
 * rules in src/plan/copy-schema.ts and are checked again here, by identity: ./identity.ts). Each
 * refusal is a CopyRefusedError naming its rule, thrown before anything is written.
 */
import { readlink, realpath, stat } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { CopyPlan } from '../plan/copy-types.js';
import { CopyRefusedError } from './errors.js';
import { runScript, shq } from './exec.js';
import type { DirIdentity, Relation } from './identity.js';
import { describeRelation, localIdentity, pathRelation, relationOf, remoteIdentity } from './identity.js';

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

/** The source exists and is a directory; its identity, which every overlap check compares with. */
export async function checkSource(plan: CopyPlan): Promise<DirIdentity> {
  const src = plan.copy.source.path;
  try {
    if (!(await stat(src)).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new CopyRefusedError('source-missing', `source ${src} is not an existing directory`);
  }
  return localIdentity(await realLocalPath(src));
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

/** What the guardrails know about the target: where it really is, and whether it is on this machine. */
export interface TargetFacts {
  /** The real path on the target's machine; null when an ssh host could not resolve it. */
  real: string | null;
  /** Its identity as its machine sees it (./identity.ts); null with `real`. */
  identity: DirIdentity | null;
  /** Local, or an ssh host with this machine's id (or an unknown id without --hosts-differ). */
  sameMachine: boolean;
}

/**
 * The target as its own machine sees it: resolved and stat'ed here for a local target, or through
 * the same ssh as the copy on its host (./identity.ts: `realpath -m` and `stat`, the path on
 * stdin). Its identity is null when the host cannot answer.
 */
export async function readTargetFacts(
  host: string | null,
  path: string,
  sameMachine: boolean,
  signal?: AbortSignal,
): Promise<TargetFacts> {
  const identity =
    host === null ? await localIdentity(await realLocalPath(path)) : await remoteIdentity(host, path, signal);
  return { real: identity?.real ?? null, identity, sameMachine };
}

/** How a target on this machine lies relative to the source, by identity, mount table and real path. */
export function targetRelation(target: TargetFacts, source: DirIdentity): Relation | null {
  if (!target.sameMachine || target.real === null) return null;
  return target.identity === null ? pathRelation(target.real, source.real) : relationOf(target.identity, source);
}

/**
 * Source, target and backup directory never overlap (the same directory, or one inside another),
 * compared by identity (device and inode up to `/`, and the place in the file system from the mount
 * table: a bind mount or a second mount of one export is seen through) and by real path, the
 * target's resolved on its own machine. A target on another machine is another file system and is
 * not compared. An ssh target whose real path is unknown is refused, unless the operator said
 * --hosts-differ and the machine ids do not say otherwise.
 */
export async function checkOverlap(
  plan: CopyPlan,
  source: DirIdentity,
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
      `cannot resolve the real path of ${path} on ${host} (realpath -m and stat there), so it cannot be compared with the source; ${why}`,
    );
  }
  const relation = targetRelation(target, source);
  if (relation !== null) {
    const where = host === null ? '' : ` on ${host}, this machine,`;
    throw new CopyRefusedError(
      'source-target-overlap',
      `source ${plan.copy.source.path} and target ${path}${where} overlap (real paths ${source.real} and ${target.real}${byIdentity(relation, target.real!, source.real)}); copying would overwrite the source`,
    );
  }
  if (backupDir !== null) {
    const backup = await localIdentity(await realLocalPath(backupDir));
    const others: Array<[string, DirIdentity | null]> = [
      [source.real, source],
      ...(target.sameMachine && target.real !== null
        ? [[target.real, target.identity] as [string, DirIdentity | null]]
        : []),
    ];
    for (const [real, other] of others) {
      const r = other === null ? pathRelation(backup.real, real) : relationOf(backup, other);
      if (r !== null)
        throw new CopyRefusedError(
          'backup-path-overlap',
          `backup directory ${backupDir} overlaps ${real}${byIdentity(r, backup.real, real)}`,
        );
    }
  }
}

/**
 * The copy's checkpoint (and the -wal beside it) is not inside the source or a target on this
 * machine, by identity: `rsync --delete` and `--wipe-target` would remove it while the copy writes
 * it, and a copy would carry a half-written database into the target.
 */
export async function checkStatePath(file: string, source: DirIdentity, target: TargetFacts): Promise<void> {
  const state = await localIdentity(await realLocalPath(file));
  const places: Array<[string, string, DirIdentity | null]> = [
    ['source', source.real, source],
    ...(target.sameMachine && target.real !== null
      ? [['target', target.real, target.identity] as [string, string, DirIdentity | null]]
      : []),
  ];
  for (const [what, real, identity] of places) {
    const r = identity === null ? pathRelation(state.real, real) : relationOf(state, identity);
    if (r === 'inside' || r === 'same')
      throw new CopyRefusedError(
        'state-path-overlap',
        `the checkpoint ${file} is inside the ${what} ${real}${byIdentity(r, state.real, real)}; the copy would write it there (and rsync --delete or --wipe-target remove it): give --state a path outside both`,
      );
  }
}

/** When the real paths alone do not show the overlap, how the identities do. */
export function byIdentity(relation: Relation, a: string, b: string): string {
  return pathRelation(a, b) === null
    ? `; ${a} is ${describeRelation(relation)} ${b} under another name (a bind mount, or one file system mounted twice)`
    : '';
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
