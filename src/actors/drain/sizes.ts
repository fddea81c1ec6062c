/**
 * The bytes an item counts for in the room arithmetic (pre-flight's fit, placement, partial drains):
 * below both ./placement.ts and ./networks.ts, which use it.
 */
import type { Kind } from '../../plan/types.js';

const MIB = 2 ** 20;
/**
 * Bytes counted for an item whose size the API does not give (documented in docs/operations.md):
 * GitLab reports `statistics.repository_size` for projects only. Generous for a snippet, modest for
 * a wiki; a project whose size the instance does not report counts with the project allowance.
 */
export const SIZE_ALLOWANCE: Readonly<Record<Kind, number>> = {
  projects: 100 * MIB,
  snippets: 10 * MIB,
  groups: 100 * MIB,
};

/**
 * Bytes counted for a project's design repository beside its reported size (docs/operations.md):
 * a project move copies it after the repository and the wiki, and no statistic gives its size.
 * It holds only the designs' history; their files are LFS objects, which a move does not copy.
 */
export const DESIGN_ALLOWANCE = MIB;

/**
 * Bytes a fork network's pool is estimated at: its root's repository (the root's size without its
 * wiki, whose objects are in no pool, and without the design allowance), or the project allowance.
 */
export function poolBytesOf(root: { sizeBytes: number | null; wikiBytes?: number | undefined }): number {
  return root.sizeBytes === null ? SIZE_ALLOWANCE.projects : Math.max(0, root.sizeBytes - (root.wikiBytes ?? 0));
}

/**
 * Bytes an item counts for: a project's reported size (its repository and wiki, api/records.ts)
 * and the design allowance, or the kind's allowance when the API gives no size.
 */
export function bytesOf(kind: Kind, sizeBytes: number | null): number {
  return kind === 'projects' && sizeBytes !== null ? sizeBytes + DESIGN_ALLOWANCE : SIZE_ALLOWANCE[kind];
}
