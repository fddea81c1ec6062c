/**
 * The rsync method's last line of defence: before the real `rsync -a --delete SRC/. TGT/` runs, its
 * own `--dry-run --itemize-changes` says what it would delete, and a copy that would delete the
 * source, anything in it, or a parent of it is refused, whatever the earlier checks concluded.
 *
 * Mapping an itemised name to a real path: rsync changes into the target directory (following a
 * symlinked target) and names everything relative to it, so a name is the target's real path joined
 * with the name. Below the target rsync follows no symlink (no -K): deleting `link` removes the
 * link, not what it points at, so the name itself is not resolved further. Names are printed with
 * rsync's escapes (`\#ooo`, one byte in octal, for control and, outside a UTF-8 locale, non-ASCII
 * bytes) and a directory ends in `/`; both are undone before comparing.
 */
import { posix } from 'node:path';
import { isSameOrInside } from '../plan/copy-schema.js';
import { CopyRefusedError } from './errors.js';

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
 * The real paths, among the deletions, that are the source, inside it or a parent of it, for each
 * real path the target is known by (resolved on its host, and here when that is the same machine).
 */
export function deletionsReachingSource(
  deleted: readonly string[],
  targetReals: readonly string[],
  sourceReal: string,
): string[] {
  const out = new Set<string>();
  for (const base of targetReals) {
    for (const name of deleted) {
      const real = posix.join(base, name);
      if (isSameOrInside(real, sourceReal) || isSameOrInside(sourceReal, real)) out.add(real);
    }
  }
  return [...out];
}

/**
 * Refuses (rule `rsync-deletes-source`) an rsync into a target that is on this machine when the
 * target's real path overlaps the source, or when its itemised dry run would delete the source,
 * something in it or a parent of it.
 */
export function checkRsyncDeletions(
  itemized: readonly string[],
  targetReals: readonly string[],
  sourceReal: string,
): void {
  const overlapping = targetReals.find((t) => isSameOrInside(t, sourceReal) || isSameOrInside(sourceReal, t));
  if (overlapping !== undefined) {
    throw new CopyRefusedError(
      'rsync-deletes-source',
      `the target resolves to ${overlapping}, which overlaps the source ${sourceReal}; rsync --delete would rewrite the source`,
    );
  }
  const hits = deletionsReachingSource(parseDeletions(itemized), targetReals, sourceReal);
  if (hits.length > 0) {
    throw new CopyRefusedError(
      'rsync-deletes-source',
      `rsync's dry run would delete ${hits.length} paths that are the source ${sourceReal}, inside it or a parent of it (${hits.slice(0, 5).join(', ')}${hits.length > 5 ? ', ...' : ''}); nothing was copied`,
    );
  }
}
