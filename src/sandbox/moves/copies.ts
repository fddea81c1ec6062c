/**
 * What a move writes onto its destination and the copies moves leave behind (`stale_copies`), kept
 * in step with the room ledger (./room.ts). A copy left on a storage is reused by a later move of
 * its item onto that storage (Gitaly's ReplicateRepository fetches into a valid existing
 * repository), so such a move writes only what the copy lacks, and the copy is its repository from
 * the switch on.
 */
import type { ItemKind } from '../db.js';
import type { PoolKeeper } from './pools.js';
import type { RoomLedger } from './room.js';
import type { MoveStatements } from './store.js';

/** A move as this module needs it. */
export interface CopyingMove {
  id: number;
  kind: ItemKind;
  itemId: number;
  destination: string;
}

/** A running move's copy as this module sees it. */
export interface RunningCopy {
  phase: 'started' | 'replicated';
  destination: string;
  /** The fork network whose pool this copy also copies onto the destination, when it does. */
  poolCopyOf?: number;
}

export interface CopyBook {
  /**
   * MiB a move's copy writes onto its destination (`sizeMb`, the item's size, when it copies at
   * all): the item, with its pool's objects and the pool copy for a fork (./pools.ts), less what a
   * copy left there by an earlier move already holds. A network's pool is copied onto a storage
   * once: not again by a member whose copy starts while another member's copy onto the same
   * storage is making it (`poolCopyOf`: the network, when this copy makes it).
   */
  writes(q: CopyingMove, sizeMb: number, copies: boolean): { mb: number; poolCopyOf?: number };
  /** A copy of the item that `m` leaves on `storage` (`mb` MiB), replacing any copy left there before. */
  leave(m: CopyingMove, storage: string, mb: number): void;
  /** The copy left on `storage` is gone: reused by a move onto it (the switch), or removed. */
  drop(kind: ItemKind, itemId: number, storage: string): void;
}

export function createCopyBook(
  s: MoveStatements,
  room: RoomLedger,
  pools: PoolKeeper,
  running: () => readonly RunningCopy[],
): CopyBook {
  return {
    writes(q, sizeMb, copies) {
      if (!copies) return { mb: sizeMb };
      let extra = 0;
      let poolCopyOf: number | undefined;
      if (q.kind === 'project') {
        const alternates = pools.alternatesMb(q.itemId, q.destination);
        const copy = pools.copyExtraMb(q.itemId, q.destination) - alternates;
        const network = pools.networkOf(q.itemId);
        const making = running().some(
          (r) => r.phase === 'started' && r.destination === q.destination && r.poolCopyOf === network,
        );
        extra = alternates + (copy > 0 && !making ? copy : 0);
        if (copy > 0 && !making) poolCopyOf = network;
      }
      const held = s.staleCopyMb.get(q.kind, q.itemId, q.destination)?.size_mb ?? 0;
      const mb = Math.max(0, sizeMb + extra - held);
      return poolCopyOf === undefined ? { mb } : { mb, poolCopyOf };
    },
    leave(m, storage, mb) {
      const before = s.staleCopyMb.get(m.kind, m.itemId, storage)?.size_mb ?? 0;
      s.insertStaleCopy.run(m.kind, m.itemId, storage, mb, m.id);
      room.staleCopy(storage, mb - before, 1);
    },
    drop(kind, itemId, storage) {
      const before = s.staleCopyMb.get(kind, itemId, storage)?.size_mb;
      if (before === undefined) return;
      s.deleteStaleCopy.run(kind, itemId, storage);
      room.staleCopy(storage, before, -1);
    },
  };
}
