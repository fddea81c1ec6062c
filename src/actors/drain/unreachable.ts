/**
 * Projects the per-item move routes cannot reach: hidden (a banned owner's, EE) and pending-delete
 * projects on GitLab releases before the project move routes overrode `find_project_scopes`
 * (GitLab MR 135748, 16.6 or 16.7). There `GET /projects/:id`, `GET` and `POST
 * /projects/:id/repository_storage_moves` all answer 404 `Project Not Found`, exactly as for a
 * deleted project, while the storage listing (with `include_hidden` and `include_pending_delete`)
 * still shows them and the bulk move (`ProjectRepository.for_shard`) still moves them. So a 404
 * on every per-item route is taken for a deletion only once a one-project count of the listing
 * says the project is not on the source any more.
 *
 * Such a project is never recorded as deleted. It is quarantined with a reason that says which way
 * it goes: where the plan lets a bulk move take everything on the source (no `move.select`, no
 * `move.until`, no reviewed list or revert), the drain ends with one bulk move of the source and
 * follows the job's move records (./bulk.ts: moves for quarantined items are followed as one more
 * attempt); otherwise it stays quarantined with that reason and the remedy.
 */
import type { DrainOutput, UnreachableOutput } from '../../machine/types.js';
import type { ItemRow } from '../../store/types.js';
import type { ActorDeps } from '../types.js';
import type { DrainCtx } from './context.js';
import { event } from './context.js';
import type { DrainStore } from '../../store/views.js';

/** How every reason given to such a project starts (the failure class reads it: events/failure-class.ts). */
export const UNREACHABLE_REASON = 'hidden or pending deletion';

/**
 * Whether project `id` is still listed on the drain's source (hidden and pending-delete ones
 * included): one count of the ids (id-1, id+1). Null when the count cannot be read.
 */
export async function listedOnSource(
  ctx: Pick<DrainCtx, 'source'> & { deps: Pick<DrainCtx['deps'], 'api' | 'signal'> },
  id: number,
): Promise<boolean | null> {
  try {
    const n = await ctx.deps.api.countItemsOnStorage(ctx.source, { afterId: id - 1, beforeId: id + 1 });
    return n === null ? null : n > 0;
  } catch (err) {
    if (ctx.deps.signal.aborted) throw err;
    return null;
  }
}

/** Why the plan forbids a bulk move of a source, or null when it allows one (it takes everything there). */
export function bulkForbiddenBy(deps: Pick<ActorDeps<DrainStore>, 'plan' | 'itemsGiven'>): string | null {
  if (deps.itemsGiven === 'list') return 'the reviewed list (run --only)';
  if (deps.itemsGiven) return 'a revert';
  if (deps.plan.move.select) return 'move.select';
  if (deps.plan.move.until) return 'move.until';
  return null;
}

/** How a bulk move held back by other quarantined projects is named (the report's remedy keys on it). */
export const HELD_BY_QUARANTINE = 'quarantine';

/**
 * Why no bulk move of the source is made for its unreachable projects: what the plan forbids, or
 * the source's other quarantined projects, which a bulk move would move again (GitLab's bulk
 * service takes every project still on the storage) although they were quarantined to stop trying.
 */
export function bulkBlockedBy(ctx: Pick<DrainCtx, 'deps' | 'store' | 'kind' | 'source'>): string | null {
  const forbidden = bulkForbiddenBy(ctx.deps);
  if (forbidden !== null) return forbidden;
  const others = ctx.store.countStates(ctx.kind, ctx.source).quarantined - unreachableRows(ctx).length;
  if (others <= 0) return null;
  return `${HELD_BY_QUARANTINE} (${others} other project${others === 1 ? '' : 's'} on ${ctx.source} would be moved again)`;
}

/** The release as the reason names it. */
function releaseText(deps: Pick<ActorDeps<DrainStore>, 'instanceVersion'>): string {
  const v = deps.instanceVersion?.() ?? null;
  return v ? `GitLab ${v}` : 'this GitLab release';
}

/** The reason such a project is quarantined with, for the plan in force. */
export function unreachableReason(
  ctx: Pick<DrainCtx, 'deps' | 'source' | 'store'>,
  forbidden: string | null = bulkForbiddenBy(ctx.deps),
): string {
  const routes = `${releaseText(ctx.deps)} answers 404 for it on every per-item move route (they find such projects from 16.7)`;
  if (forbidden === null && ctx.store.getBulk('projects', ctx.source)?.state === 'posted')
    return `${UNREACHABLE_REASON}: ${routes}; the bulk move of ${ctx.source} did not move it (see its move records)`;
  if (forbidden === null) return `${UNREACHABLE_REASON}: ${routes}; it moves by the bulk move of ${ctx.source}`;
  return (
    `${UNREACHABLE_REASON}: ${routes}, and only the bulk move of ${ctx.source} reaches it, ` +
    `which ${forbidden} forbids (a bulk move takes everything on the storage)`
  );
}

/** Records project `row` as unreachable one by one: quarantined with the reason, never as deleted. */
export function markUnreachable(ctx: DrainCtx, row: Pick<ItemRow, 'id'>): void {
  const { store, kind, deps } = ctx;
  const byBulk = bulkForbiddenBy(deps) === null;
  store.markQuarantined(kind, row.id, unreachableReason(ctx), null);
  event(ctx, 'item.unreachable', { id: row.id, by: byBulk ? 'bulk' : 'quarantine' });
  deps.log.warn(
    { kind, id: row.id, source: ctx.source, byBulk },
    byBulk
      ? 'project is hidden or pending deletion: the per-item move routes cannot reach it; the bulk move of its source will'
      : 'project is hidden or pending deletion: the per-item move routes cannot reach it and the plan forbids the bulk move',
  );
}

/** The source's projects quarantined as unreachable one by one (at most `limit`). */
export function unreachableRows(ctx: Pick<DrainCtx, 'store' | 'kind' | 'source'>, limit = 1_000_000): ItemRow[] {
  if (ctx.kind !== 'projects') return [];
  return ctx.store
    .itemsInState(ctx.kind, ctx.source, 'quarantined', limit)
    .filter((r) => r.lastError?.startsWith(UNREACHABLE_REASON) === true);
}

/** The first release whose project move routes find hidden and pending-delete projects (16.6 or 16.7: taken as 16.7). */
const MOVE_ROUTES_FIND_HIDDEN_SINCE: readonly [number, number] = [16, 7];

/** Whether the per-item move routes of `version` are known to miss hidden and pending-delete projects. */
export function routesMissHidden(version: string | null): boolean {
  const m = /^(\d+)\.(\d+)/.exec(version ?? '');
  if (!m) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  const [M, N] = MOVE_ROUTES_FIND_HIDDEN_SINCE;
  return major !== M ? major < M : minor < N;
}

/**
 * `result` with what became of the source's unreachable projects: `viaBulk` of them went to the
 * bulk move; those still quarantined as unreachable are `left`. Unchanged when there were none.
 */
export function withUnreachable(ctx: DrainCtx, result: DrainOutput, viaBulk: number): DrainOutput {
  const left = unreachableRows(ctx).length;
  if (viaBulk + left === 0) return result;
  const forbidden = viaBulk > 0 ? null : bulkBlockedBy(ctx);
  const unreachable: UnreachableOutput = {
    items: Math.max(viaBulk, left),
    by: forbidden === null ? 'bulk' : 'quarantine',
    ...(forbidden !== null ? { forbiddenBy: forbidden } : {}),
    left,
    release: ctx.deps.instanceVersion?.() ?? null,
  };
  return { ...result, unreachable };
}

/**
 * A dry run's word on them: on a release whose move routes miss them, the projects of the source
 * the census found hidden or pending deletion are the ones the run could move only by the bulk
 * move (or would quarantine). Unchanged when the release finds them or none was found.
 */
export function dryRunUnreachable(ctx: DrainCtx, result: DrainOutput): DrainOutput {
  const release = ctx.deps.instanceVersion?.() ?? null;
  if (ctx.kind !== 'projects' || !routesMissHidden(release)) return result;
  const flagged = new Set([
    ...ctx.store.shape.flaggedIds(ctx.kind, 'hidden'),
    ...ctx.store.shape.flaggedIds(ctx.kind, 'pending_delete'),
  ]);
  const items = ctx.store
    .itemsByIds(ctx.kind, [...flagged])
    .filter((r) => r.source === ctx.source && r.state === 'pending').length;
  if (items === 0) return result;
  const forbidden = bulkForbiddenBy(ctx.deps);
  return {
    ...result,
    unreachable: {
      items,
      by: forbidden === null ? 'bulk' : 'quarantine',
      ...(forbidden !== null ? { forbiddenBy: forbidden } : {}),
      left: forbidden === null ? 0 : items,
      release,
    },
  };
}
