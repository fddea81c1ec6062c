/**
 * The first half of content verification (the plan's `verify.content`): right before a sampled
 * project's move is posted, its repository fingerprint is read (./../../api/fingerprint.ts) and kept
 * as a `content.recorded` event; verification compares it with the project as it is then
 * (../verify-content.ts). Read at the last moment, so pushes before the move do not count as
 * differences; a read that fails is recorded as such and never holds the move back (verification
 * then says that project was not compared, and why). Every attempt records again: a failed move
 * leaves the repository writable, and the last reading before the move that worked is the one compared.
 */
import { verifyContentOf } from '../../plan/verify-field.js';
import type { ItemRow } from '../../store/types.js';
import { event, throwIfAborted } from './context.js';
import type { DrainCtx } from './context.js';

/** Whether project `id` is in the sample: a fixed hash of the id against the share, the same on every resume. */
export function inContentSample(id: number, fraction: number): boolean {
  if (fraction >= 1) return true;
  // A 32-bit multiplicative hash spreads consecutive ids; the share is then a threshold.
  const h = Math.imul(id ^ 0x9e3779b9, 0x85ebca6b) >>> 0;
  return h / 2 ** 32 < fraction;
}

/** Reads at once when the rows are many (a bulk move's): each project costs four GETs. */
const BULK_PARALLEL = 8;

/**
 * Reads and records the fingerprints of the sampled projects among `rows`; returns how many were
 * read. `parallel` bounds the reads at once (all of them at once when not given: a batch of moves).
 */
export async function recordFingerprints(ctx: DrainCtx, rows: readonly ItemRow[], parallel?: number): Promise<number> {
  const content = verifyContentOf(ctx.deps.plan.verify);
  if (content === null || ctx.kind !== 'projects' || ctx.deps.dryRun) return 0;
  const sampled = rows.filter((r) => inContentSample(r.id, content.fraction));
  if (sampled.length === 0) return 0;
  const step = parallel ?? sampled.length;
  for (let i = 0; i < sampled.length; i += step) {
    throwIfAborted(ctx);
    await recordSome(ctx, sampled.slice(i, i + step));
  }
  return sampled.length;
}

/**
 * Before a bulk move's first POST: the fingerprints of every sampled pending project of the
 * source, read in bounded batches. The bulk job moves them all, so this is the last moment before
 * any of their moves (a push between the reading and a project's own move, which the job may start
 * much later, shows as a difference: the report says when each move ended). Once a POST may have
 * been sent (a `bulk.intent` of this bulk is recorded), nothing is read: a project the job has
 * moved since would be read on its destination and pass for its own "before"; such projects are
 * named as not compared by verification instead.
 */
export async function recordBulkFingerprints(ctx: DrainCtx, intentAt: number): Promise<number> {
  const content = verifyContentOf(ctx.deps.plan.verify);
  if (content === null || ctx.kind !== 'projects' || ctx.deps.dryRun) return 0;
  const { store, kind, source } = ctx;
  for (let after = 0; ;) {
    const page = store.eventsOf(['bulk.intent'], after, 1000);
    if (page.some((e) => e.data.kind === kind && e.data.source === source && e.at >= intentAt)) return 0;
    if (page.length < 1000) break;
    after = page[page.length - 1]!.seq;
  }
  return recordFingerprints(ctx, store.itemsInState(kind, source, 'pending', Number.MAX_SAFE_INTEGER), BULK_PARALLEL);
}

async function recordSome(ctx: DrainCtx, sampled: readonly ItemRow[]): Promise<void> {
  const read = await Promise.allSettled(sampled.map((r) => ctx.deps.api.repositoryFingerprint(r.id)));
  ctx.store.batch(() => {
    sampled.forEach((row, i) => {
      const res = read[i] as PromiseSettledResult<Awaited<ReturnType<typeof ctx.deps.api.repositoryFingerprint>>>;
      const none = { defaultBranch: null, head: null, branches: null, tags: null };
      if (res.status === 'fulfilled' && res.value !== null)
        event(ctx, 'content.recorded', { id: row.id, ...res.value });
      else {
        const error =
          res.status === 'fulfilled'
            ? 'the instance did not find the project'
            : res.reason instanceof Error
              ? res.reason.message
              : String(res.reason);
        event(ctx, 'content.recorded', { id: row.id, ...none, error });
      }
    });
  });
}
