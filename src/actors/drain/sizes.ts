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

/** Bytes an item counts for: its size, or the kind's allowance when the API gives none. */
export function bytesOf(kind: Kind, sizeBytes: number | null): number {
  return kind === 'projects' && sizeBytes !== null ? sizeBytes : SIZE_ALLOWANCE[kind];
}
