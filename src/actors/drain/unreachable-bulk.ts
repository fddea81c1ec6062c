/**
 * The end of a project drain whose source holds projects the per-item move routes cannot reach
 * (./unreachable.ts): one bulk move of the source, where the plan allows it, followed through its
 * move records until those projects have moved or the job has settled. The bulk job takes every
 * project still on the source, so by then that is only these and the quarantined ones, which it
 * retries once too (./bulk.ts).
 */
import { runBulkPhase } from './bulk.js';
import type { DrainCtx } from './context.js';
import { event, waitWhilePaused } from './context.js';
import { bulkBlockedBy, bulkForbiddenBy, unreachableReason, unreachableRows } from './unreachable.js';

/**
 * Moves the source's unreachable projects with a bulk move of the source, when there are some and
 * the plan allows it; returns how many were waiting for it. The destination is theirs (placement
 * chose it when their per-item move was due), the plan's first when they disagree or have none.
 */
export async function moveUnreachableByBulk(ctx: DrainCtx): Promise<number> {
  const { deps, kind, source } = ctx;
  if (kind !== 'projects' || deps.dryRun || bulkForbiddenBy(deps) !== null) return 0;
  const rows = unreachableRows(ctx);
  if (rows.length === 0) return 0;
  const held = bulkBlockedBy(ctx);
  if (held !== null) {
    // They stay quarantined, their reason naming what holds the bulk move back.
    deps.store.batch(() => {
      for (const r of rows) deps.store.markQuarantined(kind, r.id, unreachableReason(ctx, held), null);
    });
    deps.log.warn(
      { kind, source, items: rows.length, held },
      'hidden or pending-delete projects: the bulk move is held back',
    );
    return 0;
  }
  const chosen = new Set(rows.map((r) => r.destination ?? ctx.destination));
  const destination = chosen.size === 1 ? [...chosen][0]! : ctx.destination;
  event(ctx, 'drain.unreachable_bulk', { items: rows.length, destination });
  deps.log.info(
    { kind, source, items: rows.length, destination },
    'hidden or pending-delete projects move by the bulk move of their source',
  );
  await waitWhilePaused(ctx);
  await runBulkPhase({ ...ctx, destination }, { wanted: () => unreachableRows(ctx).length });
  return rows.length;
}
