/**
 * A tar failure is a full destination only when its free space says so. Gitaly's snapshot
 * extraction ends with tar's exit status 2 whatever the cause (a full disk, or a snapshot stream
 * cut short), and from 16.1 its text says no more. Where the plan tells shardmove a destination's
 * free space (`capacity.storages`, declared or from Prometheus), a failed move's reason gets a note
 * when that space is below what the copy needs, and is then `no-space`; otherwise it stays a copy
 * failure in tar (src/report/failure-class.ts). The free space is read after the failure, when
 * Gitaly has already removed the partial copy: below the copy's size, the copy could not have fit.
 */
import type { MoveRecord } from '../../api/types.js';
import type { Kind } from '../../plan/types.js';
import { isTarFailure, noteNoSpace } from '../../events/failure-class.js';
import type { ItemRow } from '../../store/types.js';
import { bytesOf, freeBytesOf } from './placement.js';
import type { ActorDeps } from '../types.js';
import type { DrainStore } from '../../store/views.js';

/**
 * The reasons to record for the failed tar moves among `rows` (by move id) whose destination's
 * free space confirms it was full; each destination is read once. A free space that cannot be
 * read confirms nothing.
 */
export async function confirmNoSpace(
  deps: Pick<ActorDeps<DrainStore>, 'plan' | 'log'> & Partial<Pick<ActorDeps<DrainStore>, 'prometheus'>>,
  kind: Kind,
  rows: readonly ItemRow[],
  found: ReadonlyMap<number, MoveRecord>,
): Promise<Map<number, string>> {
  const notes = new Map<number, string>();
  if (!deps.plan.capacity) return notes;
  const free = new Map<string, number | null>();
  for (const row of rows) {
    const move = row.moveId === null ? undefined : found.get(row.moveId);
    if (!move || move.state !== 'failed' || !isTarFailure(move.errorMessage)) continue;
    const destination = move.destinationStorage;
    if (!free.has(destination)) {
      try {
        free.set(destination, await freeBytesOf(deps, destination));
      } catch (err) {
        deps.log.warn(
          { storage: destination, err: (err as Error).message },
          'the free space could not be read to tell a tar failure from no space',
        );
        free.set(destination, null);
      }
    }
    const bytes = free.get(destination);
    if (bytes === null || bytes === undefined) continue;
    const reason = noteNoSpace(move.errorMessage as string, destination, bytes, bytesOf(kind, row.sizeBytes));
    if (reason !== move.errorMessage) notes.set(move.id, reason);
  }
  return notes;
}
