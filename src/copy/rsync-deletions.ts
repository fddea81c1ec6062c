/**
 * The rsync method's last line of defence: before the real `rsync -a --delete SRC/. TGT/` runs, its
 * own `--dry-run --itemize-changes` says what it would delete, and a copy that would delete the
 * source, anything in it, or a parent of it is refused, whatever the earlier checks concluded.
 *
 * Mapping an itemised name to what it deletes: rsync changes into the target directory (following a
 * symlinked target) and names everything relative to it, so a name is the target's real path joined
 * with the name. Below the target rsync follows no symlink (no -K): deleting `link` removes the
 * link, not what it points at, so the name itself is not resolved further. Names are printed with
 * rsync's escapes (`\#ooo`, one byte in octal, for control and, outside a UTF-8 locale, non-ASCII
 * bytes) and a directory ends in `/`; both are undone before comparing. Each named file is then
 * compared with the source by identity (./identity.ts), not by its path: through a bind mount of
 * the source's parent, `src/x` under the target is the source's own `x`.
 */
import { lstat } from 'node:fs/promises';
import { posix } from 'node:path';
import { CopyRefusedError } from './errors.js';
import type { DirIdentity } from './identity.js';
import {
  describeRelation,
  fsPlaceOf,
  localIdentity,
  pathRelation,
  placeRelation,
  readMounts,
  relationOf,
} from './identity.js';

/** `%i` of a deletion in rsync's itemised output, padded to the 11 characters of every item field. */
const DELETING = '*deleting  ';

/** Undoes rsync's `\#ooo` escapes: each is one byte, so the bytes are decoded together as UTF-8. */
export function unescapeRsyncName(name: string): string {
  if (!name.includes('\\#')) return name;
  const parts = name.split(/\\#([0-7]{3})/);
  // split with a capture group alternates text, octal, text, ...
  const bytes = parts.map((p, i) => (i % 2 === 1 ? Buffer.from([parseInt(p, 8)]) : Buffer.from(p, 'utf8')));
  return Buffer.concat(bytes).toString('utf8');
}

/** Whether an itemised line is a deletion. */
export function isDeletionLine(line: string): boolean {
  return line.startsWith(`${DELETING} `);
}

/** The names an itemised dry run would delete, relative to the target, without a directory's `/`. */
export function parseDeletions(lines: readonly string[]): string[] {
  return lines.filter(isDeletionLine).map((l) => unescapeRsyncName(l.slice(DELETING.length + 1)).replace(/\/$/, ''));
}

/**
 * The paths, among the deletions, that are the source, inside it or a parent of it, for each path
 * the target is known by on this machine (its real path resolved on its host, and here). A deletion
 * reaches the source when the source's identity is the deleted file's or one of its parents' (the
 * deleted file is the source or inside it), when the deleted file's identity is one of the source's
 * parents', when the mount table puts them in one another, or when their paths do.
 */
export async function deletionsReachingSource(
  deleted: readonly string[],
  targetReals: readonly string[],
  source: DirIdentity,
): Promise<string[]> {
  const out = new Set<string>();
  const ids = new Map<string, string | null>();
  const idOf = async (p: string): Promise<string | null> => {
    if (!ids.has(p)) {
      const st = await lstat(p, { bigint: true }).catch(() => null);
      ids.set(p, st === null ? null : `${st.dev}:${st.ino}`);
    }
    return ids.get(p)!;
  };
  const sourceId = source.chain[0];
  const mounts = readMounts();
  const sourcePlace = fsPlaceOf(source.real, mounts);
  for (const base of targetReals) {
    const baseChain = (await localIdentity(base)).chain;
    for (const name of deleted) {
      const full = posix.join(base, name);
      const parts = name.split('/');
      const chain: Array<string | null> = [];
      for (let i = parts.length; i > 0; i--) chain.push(await idOf(posix.join(base, ...parts.slice(0, i))));
      const own = chain[0] ?? null;
      const reaches =
        (sourceId !== undefined && (chain.includes(sourceId) || baseChain.includes(sourceId))) ||
        (own !== null && source.chain.includes(own)) ||
        placeRelation(fsPlaceOf(full, mounts), sourcePlace) !== null ||
        pathRelation(full, source.real) !== null;
      if (reaches) out.add(full);
    }
  }
  return [...out];
}

/**
 * Refuses (rule `rsync-deletes-source`) an rsync into a target that is on this machine when the
 * target overlaps the source (by identity or real path), or when its itemised dry run would delete
 * the source, something in it or a parent of it.
 */
export async function checkRsyncDeletions(
  itemized: readonly string[],
  targetReals: readonly string[],
  source: DirIdentity,
): Promise<void> {
  for (const t of targetReals) {
    const relation = relationOf(await localIdentity(t), source);
    if (relation !== null) {
      throw new CopyRefusedError(
        'rsync-deletes-source',
        `the target resolves to ${t}, which overlaps the source ${source.real} (it is ${describeRelation(relation)} it); rsync --delete would rewrite the source`,
      );
    }
  }
  const hits = await deletionsReachingSource(parseDeletions(itemized), targetReals, source);
  if (hits.length > 0) {
    throw new CopyRefusedError(
      'rsync-deletes-source',
      `rsync's dry run would delete ${hits.length} paths that are the source ${source.real}, inside it or a parent of it (${hits.slice(0, 5).join(', ')}${hits.length > 5 ? ', ...' : ''}); nothing was copied`,
    );
  }
}
