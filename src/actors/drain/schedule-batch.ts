/**
 * Scheduling a batch of items in throttled mode: intents committed in one transaction before any
 * POST, the POSTs sent together, their answers recorded in one transaction, ambiguous answers
 * reconciled from the instance's state.
 */
import type { ScheduleResult } from '../../api/types.js';
import type { ItemRow } from '../../store/types.js';
import { arrivedOn, destinationOf, event } from './context.js';
import { placementOf } from './placement.js';
import type { DrainCtx } from './context.js';
import { abortError, classifyPostError } from '../errors.js';
import { stopAskedNow } from '../write-gate.js';
import { applyMove, recordFailure } from './outcome.js';
import { arrivalOf, locate } from './locate.js';
import type { Arrival, Location } from './locate.js';
import { reconcileItem } from './reconcile.js';
import { relistIfStale } from './relist.js';
import { listedOnSource, markUnreachable } from './unreachable.js';
import { judgeNow, selectionOf } from '../select.js';
import { recordFingerprints } from './content.js';

/** Items out of attempts are quarantined instead of scheduled; returns the rest. */
function dropExhausted(ctx: DrainCtx, rows: ItemRow[]): ItemRow[] {
  const max = ctx.deps.plan.retry.maxAttempts;
  // The common case: no transaction at all (one per scheduling chunk was measurable CPU).
  if (rows.every((row) => row.attempts < max)) return rows;
  const keep: ItemRow[] = [];
  ctx.store.batch(() => {
    for (const row of rows) {
      if (row.attempts < max) {
        keep.push(row);
        continue;
      }
      const reason = row.lastError ?? `no attempts left (${row.attempts})`;
      ctx.store.markQuarantined(ctx.kind, row.id, reason, null);
      event(ctx, 'move.quarantined', { id: row.id, attempts: row.attempts, reason });
    }
  });
  return keep;
}

/**
 * Applies a per-item read's answer to a claimed row: true when the item is to be POSTed (on the
 * source, or unknown: the POST then decides, and a 404 on it means gone). Elsewhere or deleted:
 * the row leaves (or counts as moved when it is on the destination) and is not POSTed.
 */
function keepLocated(ctx: DrainCtx, row: ItemRow, where: Location, arrival: Arrival | null): boolean {
  const { deps, store, kind, source } = ctx;
  const now = deps.clock.now();
  if (where.at === 'source') {
    store.touchListed(kind, source, [row.id], now);
    return true;
  }
  if (where.at === 'unknown') return true;
  if (where.at === 'unreachable') {
    markUnreachable(ctx, row);
    return false;
  }
  if (where.at === 'gone') store.markLeft(kind, row.id, now, 'deleted from the instance');
  else if (arrivedOn(ctx, row, where.storage)) {
    const a = arrival ?? { moveId: null, moveState: null, note: 'already on the destination' };
    store.markMoved(kind, row.id, a.moveId, a.moveState, now, a.note);
  } else store.markLeft(kind, row.id, now, `now on ${where.storage}`);
  event(ctx, 'item.not_on_source', { id: row.id, storage: where.at === 'gone' ? null : where.storage });
  return false;
}

/** Reads each row's item on its own and applies the answers in one transaction; returns the ids not to POST. */
async function dropLocatedOffSource(ctx: DrainCtx, rows: readonly ItemRow[]): Promise<Set<number>> {
  const seen = await Promise.all(rows.map((r) => locate(ctx, r.id)));
  const arrivals = await Promise.all(
    rows.map((r, i) => {
      const where = seen[i] as Location;
      return where.at === 'elsewhere' && arrivedOn(ctx, r, where.storage) ? arrivalOf(ctx, r, where.storage) : null;
    }),
  );
  const drop = new Set<number>();
  ctx.store.batch(() => {
    rows.forEach((row, i) => {
      if (!keepLocated(ctx, row, seen[i] as Location, arrivals[i] ?? null)) drop.add(row.id);
    });
  });
  return drop;
}

/**
 * A retry's item is read again before its POST: a failed or unverified move may still have changed
 * the item's storage, and a move onto the storage an item is already on is how data gets lost
 * (gitaly#3752). First attempts rely on the fresh listing. Returns the rows still to POST.
 */
async function dropNotOnSource(ctx: DrainCtx, claimed: ItemRow[]): Promise<ItemRow[]> {
  const retries = claimed.filter((r) => r.attempts > 0);
  if (retries.length === 0) return claimed;
  const skip = await dropLocatedOffSource(ctx, retries);
  return claimed.filter((r) => !skip.has(r.id));
}

/** Items per freshness listing page. */
const REFRESH_PAGE = 100;
/**
 * Shortest age at which a listing counts as stale. Re-listing on every fast poll would put a
 * listing before most POST batches (slower moves, more requests); an item moved by someone else
 * within these seconds before its POST is the accepted race (current GitLab finishes a move onto
 * the storage an item is already on as a no-op, reference §1.5).
 */
const FRESH_MIN_MS = 10_000;

/**
 * An item is POSTed only if the instance showed it on the source recently (within the poll
 * interval, at least FRESH_MIN_MS): one run can take days, and an item moved by someone else since
 * it was listed must not get a move onto the storage it is now on. Projects: stale rows are
 * re-listed a keyset page at a time (from the lowest stale id), about one request per hundred
 * items. Snippets and groups have only offset pages (snippets newest first), which cannot start at
 * an id: when more of the pair's pending items are stale than its listing has pages, the whole
 * source is listed again for the kind (./relist.ts, once for every batch that needs it), which
 * makes them all fresh at a page per hundred; otherwise each stale row is read on its own. The one
 * schedule takes these small items last, long after their listing. Absence from a page is never
 * enough to drop a row: a row a page did not show is read on its own too (hidden projects,
 * unreadable pages, an offset page that shifted while items left).
 */
async function dropUnlisted(ctx: DrainCtx, claimed: ItemRow[]): Promise<ItemRow[]> {
  const { deps, store, kind, source } = ctx;
  const now = deps.clock.now();
  const maxAge = Math.max(deps.plan.poll.intervalMs, FRESH_MIN_MS);
  const stale = claimed.filter((r) => now - r.listedAt >= maxAge).sort((a, b) => a.id - b.id);
  if (stale.length === 0) return claimed;
  const listed = kind === 'projects' ? null : await relistIfStale(ctx, now - maxAge);
  const unseen: ItemRow[] = kind === 'projects' ? [] : stale.filter((r) => !listed?.has(r.id));
  let i = 0;
  while (kind === 'projects' && i < stale.length) {
    const from = (stale[i] as ItemRow).id - 1;
    let page: { id: number }[] = [];
    for await (const p of deps.api.listItemsOnStorage(kind, source, { afterId: from, perPage: REFRESH_PAGE })) {
      page = p;
      break;
    }
    const listed = new Set(page.map((it) => it.id));
    // The page covers ids up to its last one; an empty page covers everything after `from`.
    const upTo = page.length === 0 ? Infinity : Math.max(...listed);
    store.touchListed(kind, source, [...listed], deps.clock.now());
    for (; i < stale.length && (stale[i] as ItemRow).id <= upTo; i++) {
      const row = stale[i] as ItemRow;
      if (!listed.has(row.id)) unseen.push(row);
    }
  }
  if (unseen.length === 0) return claimed;
  const drop = await dropLocatedOffSource(ctx, unseen);
  return claimed.filter((r) => !drop.has(r.id));
}

/**
 * `move.select` judged again on the instance's current state, right before the POSTs: an item
 * transferred since it was listed (or since a reviewed list was made) into an excluded namespace,
 * or out of every selected one, is not moved. It becomes `unselected` with the reason (it stays on
 * the source, as the plan now asks), the intent's attempt given back. One read per item (a project
 * snippet's project too): a listing shows storages, not a transfer made a second ago. An item that
 * cannot be judged now (the read failed) is not posted either: it waits for its next turn, that
 * attempt counted.
 */
async function dropOutOfSelection(ctx: DrainCtx, rows: ItemRow[]): Promise<ItemRow[]> {
  const selection = selectionOf(ctx.deps.plan);
  if (!selection || rows.length === 0) return rows;
  const { deps, store, kind } = ctx;
  const judged = await Promise.allSettled(rows.map((r) => judgeNow(deps, selection, kind, r.id, r.name)));
  const keep: ItemRow[] = [];
  store.batch(() => {
    rows.forEach((row, i) => {
      const res = judged[i] as PromiseSettledResult<Awaited<ReturnType<typeof judgeNow>>>;
      if (res.status === 'rejected') {
        if (deps.signal.aborted) return;
        const why = res.reason instanceof Error ? res.reason.message : String(res.reason);
        // The attempt counts: an item that can never be read again ends quarantined, not retried forever.
        store.markPending(
          kind,
          row.id,
          deps.clock.now() + deps.plan.poll.intervalMs,
          `cannot check move.select now: ${why}`,
          false,
        );
        return;
      }
      if (res.value.chosen) {
        keep.push(row);
        return;
      }
      const reason = res.value.reason ?? 'left the selection';
      store.leaveSelection(kind, row.id, reason);
      event(ctx, 'item.left_selection', { id: row.id, reason });
      deps.log.warn({ kind, id: row.id, source: ctx.source, reason }, 'not moved: move.select no longer chooses it');
    });
  });
  if (deps.signal.aborted) throw abortError(deps.signal);
  return keep;
}

/** Schedules `rows` (pending, due); returns how many POSTs were sent. */
export async function scheduleBatch(ctx: DrainCtx, candidates: ItemRow[]): Promise<number> {
  const { deps, store, kind } = ctx;
  const rows = dropExhausted(ctx, candidates);
  if (rows.length === 0) return 0;
  const now = deps.clock.now();
  const placement = placementOf(deps);
  // Intent first, committed, with the item's destination (chosen once, among `move.to`'s storages): a kill after this
  // line leaves `scheduling` rows that are reconciled, and a resume posts them where they were placed.
  const claimed = store.batch(() =>
    rows.flatMap((row) => {
      const destination = placement.choose(kind, row);
      if (!store.markIntent(kind, row.id, now, destination)) return [];
      if (!row.destination) placement.note(kind, row, destination);
      event(ctx, 'move.intent', { id: row.id, attempt: row.attempts + 1, destination });
      return [{ ...row, destination }];
    }),
  );
  const toPost = await dropOutOfSelection(ctx, await dropNotOnSource(ctx, await dropUnlisted(ctx, claimed)));
  // The sampled projects' fingerprints, as late as can be before their moves (verify.content).
  const fingerprinted = await recordFingerprints(ctx, toPost);
  // Reads came between the cap this batch was claimed under and its POSTs (a stale listing, a
  // retry's item: each returns a new array then; a fingerprint), and they can take seconds: a stop
  // asked for meanwhile sends none of them. The rows go back to waiting, their attempt not counted.
  if ((toPost !== claimed || fingerprinted > 0) && toPost.length > 0 && stopAskedNow(deps)) {
    store.batch(() => {
      for (const row of toPost) store.markPending(kind, row.id, deps.clock.now(), null, true);
    });
    deps.log.warn({ kind, items: toPost.length }, 'moves not posted: a stop was asked for while their items were read');
    return 0;
  }
  const settled = await Promise.allSettled(
    toPost.map((row) => deps.api.scheduleMove(kind, row.id, destinationOf(ctx, row))),
  );
  const followUp: { row: ItemRow; cause: 'ambiguous' | 'read-only' }[] = [];
  const gone: ItemRow[] = [];
  let fatal: unknown = null;
  store.batch(() => {
    settled.forEach((res, i) => {
      const row = {
        ...(toPost[i] as ItemRow),
        state: 'scheduling' as const,
        attempts: (toPost[i] as ItemRow).attempts + 1,
        intentAt: now,
      };
      if (res.status === 'fulfilled') {
        const r: ScheduleResult = res.value;
        if (r.outcome === 'scheduled') {
          event(ctx, 'move.scheduled', { id: row.id, moveId: r.move.id, moveState: r.move.state });
          applyMove(ctx, row, r.move, now);
        } else {
          event(ctx, 'move.read_only', { id: row.id });
          followUp.push({ row, cause: 'read-only' });
        }
        return;
      }
      const failure = classifyPostError(res.reason);
      const message = res.reason instanceof Error ? res.reason.message : String(res.reason);
      event(ctx, 'move.post_failed', { id: row.id, failure: failure.kind, error: message });
      if (failure.kind === 'ambiguous') followUp.push({ row, cause: 'ambiguous' });
      else if (failure.kind === 'gone') gone.push(row);
      else if (failure.kind === 'rejected') recordFailure(ctx, row, `schedule rejected: ${failure.message}`);
      else {
        // Certainly not applied: the attempt does not count.
        const wait = failure.kind === 'throttled' ? (failure.retryAfterMs ?? deps.plan.poll.intervalMs) : 0;
        store.markPending(kind, row.id, deps.clock.now() + wait, null, true);
        if (failure.kind === 'fatal') fatal ??= res.reason;
      }
    });
  });
  if (fatal) throw fatal;
  await settleGone(ctx, gone);
  for (const { row, cause } of followUp) await reconcileItem(ctx, row, cause);
  return toPost.length;
}

/**
 * Rows whose POST answered 404. A project may only be out of the per-item routes' reach (hidden or
 * pending deletion before 16.7): the listing's count on the source tells it from a deleted one.
 */
async function settleGone(ctx: DrainCtx, rows: readonly ItemRow[]): Promise<void> {
  if (rows.length === 0) return;
  const listed =
    ctx.kind === 'projects' ? await Promise.all(rows.map((r) => listedOnSource(ctx, r.id))) : rows.map(() => false);
  ctx.store.batch(() => {
    rows.forEach((row, i) => {
      if (listed[i] === true) markUnreachable(ctx, row);
      // The count could not be read: not proof of a deletion, so the POST is tried again later.
      else if (listed[i] === null)
        ctx.store.markPending(
          ctx.kind,
          row.id,
          ctx.deps.clock.now() + ctx.deps.plan.poll.intervalMs,
          'POST answered 404 and the listing could not be read',
          true,
        );
      else ctx.store.markLeft(ctx.kind, row.id, ctx.deps.clock.now(), 'deleted from the instance');
    });
  });
}
