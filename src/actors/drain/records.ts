/**
 * The drain of a kind whose storage the instance does not expose (pre-flight's `records` mode): no
 * listing can say what is on the source, so the instance's own bulk job does. Each sweep is one bulk
 * POST for the source, followed through the move records it creates; those records are how items
 * become known. Failed moves are retried per item by id. Then a new sweep asks again; a sweep whose
 * job creates no move except for items already quarantined confirms that nothing else of the kind is
 * on the source (`confirmedAt`, which verification reads). A sweep resumed after a restart may have
 * missed its own count, so it never confirms: the next one does.
 *
 * A job that created no move proves nothing by itself: GitLab's bulk POST only enqueues it, and a
 * job still waiting in Sidekiq's queue shows the same records as one that ran and found nothing. So
 * a sweep confirms only when its job is known to have run (a move of it seen, or Sidekiq's queue
 * showing it gone: ./bulk-queue.ts); otherwise it sweeps again, and when no sweep can prove it the
 * drain ends unconfirmed, which verification reports with the check to make by hand. Confirming
 * only a job seen to have left the queue is what keeps a late job from moving anything after the
 * run said the storage was empty.
 */
import type { DrainOutput } from '../../machine/types.js';
import type { Kind } from '../../plan/types.js';
import { newestMoveId, runBulkPhase } from './bulk.js';
import { railsCountQuery } from './bulk-queue.js';
import { event, waitWhilePaused } from './context.js';
import type { DrainCtx } from './context.js';
import { moveItems } from './loop.js';
import { MAX_EXTRA_ROUNDS, drainResult } from './result.js';

/** Sweeps until the source is confirmed empty of the kind (or the sweeps run out); returns the counts. */
export async function drainByRecords(ctx: DrainCtx): Promise<DrainOutput> {
  await sweepUntilConfirmed(ctx);
  const res = { ...drainResult(ctx), byRecords: true };
  event(ctx, 'drain.finished', { ...res, by: 'records' });
  ctx.deps.log.info({ kind: ctx.kind, source: ctx.source, ...res }, 'drain finished (by move records)');
  return res;
}

async function sweepUntilConfirmed(ctx: DrainCtx): Promise<void> {
  const { store, kind, source, deps } = ctx;
  let unproven: string | undefined;
  for (let sweep = 1; sweep <= 1 + MAX_EXTRA_ROUNDS; sweep++) {
    let bulk = store.getBulk(kind, source);
    if (bulk?.confirmedAt) return;
    // Only the first sweep of an invocation can be one a restart interrupted.
    const resumed = sweep === 1 && bulk?.state === 'posted';
    const round = (store.getCursor(kind, source)?.round ?? 0) + (resumed ? 0 : 1);
    if (!resumed) {
      store.startRound(kind, source, round);
      // A new sweep: its job's moves are those above the newest move now (our own per-item retries
      // of the last sweep are below it, and are not evidence that anything is on the source).
      bulk = {
        kind,
        source,
        state: 'intent',
        intentAt: deps.clock.now(),
        seenMaxMoveId: await newestMoveId(ctx),
        confirmedAt: null,
      };
      store.setBulk(bulk);
      event(ctx, 'records.sweep', { sweep: round, above: bulk.seenMaxMoveId });
    }
    await waitWhilePaused(ctx);
    const seen = await runBulkPhase(ctx, { learn: true, round });
    // Per-item retries of what failed, with the usual backoff and quarantine.
    await moveItems(ctx, { mode: 'moving' });
    store.finishRound(kind, source, round);
    if (!resumed && seen.found === 0 && !seen.ran) {
      // No move, and no proof the job ran: it may still wait in Sidekiq's queue. Sweep again later.
      unproven = seen.unproven ?? 'the bulk job created no move and was not seen to leave the queue';
      event(ctx, 'records.unproven', { sweep: round, reason: unproven });
      deps.log.warn(
        { kind, source, sweep: round, reason: unproven },
        'bulk move created no move, but its job was not proven to have run: not confirmed, sweeping again',
      );
      continue;
    }
    unproven = undefined;
    if (!resumed && seen.found === 0) {
      const done = store.getBulk(kind, source);
      if (done) store.setBulk({ ...done, confirmedAt: deps.clock.now() });
      event(ctx, 'records.confirmed', { sweep: round, quarantined: seen.quarantined });
      deps.log.info(
        { kind, source, sweep: round },
        'bulk move found nothing else on the source: verified by move records',
      );
      return;
    }
  }
  event(ctx, 'records.unconfirmed', { sweeps: 1 + MAX_EXTRA_ROUNDS, ...(unproven ? { unproven } : {}) });
  deps.log.warn(
    { kind, source, ...(unproven ? { unproven } : {}) },
    unproven
      ? 'no bulk move could be proven to have run: not confirmed empty'
      : 'every bulk move still found items on the source: not confirmed empty',
  );
}

/**
 * What verification says of a kind drained by records whose source was never confirmed empty: what
 * could not be confirmed, and how to check by hand (the Rails console count GitLab's bulk service
 * walks, `for_shard` of the same table), then what to run.
 */
export function unconfirmedByRecords(kind: Kind, source: string): string {
  return (
    `${kind} on ${source}: not verified. The instance does not expose their storage, and no bulk move for ${source} has yet been ` +
    "seen to run and find nothing else there: a bulk job that created no move may still wait in Sidekiq's queue (the API does not say " +
    `when it has run; GET /api/v4/sidekiq/queue_metrics shows the queue to an administrator). Check by hand in a Rails console: ` +
    `${railsCountQuery(kind, source)} (0 when nothing is left), then run again to sweep once more`
  );
}
