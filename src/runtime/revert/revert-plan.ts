/**
 * What a revert starts from: a forward run's checkpoint (a real run, not a dry run's or a revert's),
 * the plan of the revert (the forward plan with the directions swapped), and the refusal while
 * moves of the forward run may still land. Its secrets are observe/logger.ts's secretsOf, as a run's.
 */
import type { Plan } from '../../plan/types.js';
import type { ItemRow } from '../../store/types.js';
import { CHECKPOINT_MODE, MOVES_IN_FLIGHT, RuntimeError } from '../errors.js';
import type { AliveMove, RevertItem } from '../../actors/index.js';
import type { ForwardCheckpoint } from '../../store/views.js';

/** The forward checkpoint must hold a real run: a dry run moved nothing; a revert's is not reverted. */
export function assertForward(store: ForwardCheckpoint, file: string, revertFile: string): void {
  if (store.mode() === 'dry-run') {
    throw new RuntimeError(
      CHECKPOINT_MODE,
      `refusing: ${file} holds a dry run, which moved nothing; name the real run's checkpoint (state/<plan>.db beside the plan unless it ran with --state)`,
    );
  }
  if (store.mode() === 'revert') {
    throw new RuntimeError(
      CHECKPOINT_MODE,
      `refusing: ${file} holds a revert, not a forward run; to move those items again, run the plan (shardmove run) on its own checkpoint. Its revert would be kept in ${revertFile}`,
    );
  }
}

/**
 * The storage the forward run moved a row's item to: its recorded destination (many destinations), or, in a
 * checkpoint written before items had one, the run's only destination (`only`: as its snapshot
 * recorded it, the plan's when it has none).
 */
export function forwardDestination(only: string, row: ItemRow): string {
  return row.destination ?? only;
}

/**
 * The revert's plan: the forward plan with the directions swapped, every item pinned to the storage
 * it came from. Throttled whatever the forward mode was (a bulk POST would move everything on the
 * storage); no capacity section and no `move.until` (they are about the forward run's
 * destinations); the kinds and storages the forward run moved items of. Fork networks stay
 * together: each member goes back where it came from, which is where the network was.
 */
export function planOfRevert(
  plan: Plan,
  drains: { kinds: Plan['move']['kinds']; sources: string[] },
  items: readonly RevertItem[],
): Plan {
  const to = [...new Set(items.map((i) => i.to))].sort();
  const { capacity: _capacity, ...rest } = plan;
  const { until: _until, ...move } = plan.move;
  return { ...rest, move: { ...move, from: drains.sources, to, kinds: drains.kinds, mode: 'throttled' } };
}

/** Moves named in a refusal before the rest are counted. */
const NAMED = 5;

/** Refuses (exit 4) while the forward checkpoint has moves of its own in flight or being posted. */
export function inFlightRefusal(file: string, n: number, forwardCommand: string, command: string): RuntimeError {
  return new RuntimeError(
    MOVES_IN_FLIGHT,
    `refusing: ${file} has ${n} move(s) of the forward run in flight or being posted, which would land after the revert read it. Nothing was written. ` +
      `Resume the forward run (${forwardCommand}), pause it once nothing more should start (${forwardCommand.replace(/^shardmove run /, 'shardmove control ')} --pause), wait until status shows nothing in flight, stop it, then: ${command}`,
  );
}

/**
 * Refuses (exit 4) while moves of the forward run are still queued or running on the instance (a
 * move quarantined as stuck is still GitLab's to run): they would land on the storage the revert
 * empties, after it said the item was back.
 */
export function aliveRefusal(alive: readonly AliveMove[], file: string, command: string): RuntimeError {
  const named = alive
    .slice(0, NAMED)
    .map((m) => `${m.kind.slice(0, -1)} ${m.id}: move ${m.moveId} ${m.state}, ${m.source} -> ${m.destination}`);
  if (alive.length > NAMED) named.push(`and ${alive.length - NAMED} more`);
  return new RuntimeError(
    MOVES_IN_FLIGHT,
    `refusing: ${alive.length} move(s) of the forward run in ${file} are still queued or running on the instance (${named.join('; ')}); ` +
      'they would land after the revert and leave those items where the forward run sent them. Nothing was written. ' +
      'Wait until GitLab ends them (a move quarantined as stuck is still in its queue), or, if a job is lost for good, fail the move in the Rails console ' +
      `(docs/failures.md, stuck-queued and stuck-running); then: ${command}`,
  );
}
