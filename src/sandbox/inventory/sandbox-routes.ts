/**
 * Sandbox-only routes under `/-/sandbox/`: what GitLab keeps internal and a rehearsal or a test may
 * still want to see. GitLab has no such routes; nothing here is part of the API the orchestrator
 * may rely on against a real instance.
 *
 * `GET /-/sandbox/items/:kind/:id` (kind `project`, `snippet` or `group`; id an integer or, for
 * projects and groups, a full path), effective administrators only:
 * `{ kind, id, storage, read_only, hidden, pending_delete, size_mb, commit_count, checksum,
 * stale_copies }`, the last the storages (in name order) that still hold a copy a move left behind
 * (`cleanup failed`, or a job killed after the switch).
 * It finds every item, hidden and pending-delete projects included (the move routes' scope). Paths
 * under `/-/` are exempt from request faults, like the health probes.
 *
 * `GET /-/sandbox/moves/:kind/:id` (effective administrators): what the move's Sidekiq job logged,
 * `{ kind, id, state, exception }`, `exception` the message the service raised, untruncated, or
 * null. Before 16.7 GitLab records no reason on the move, so its worker's log (exceptions_json.log,
 * Sidekiq's log of `Projects::UpdateRepositoryStorageWorker`) is the only place that says why.
 */
import type { RequestContext, Reply } from '../http/context.js';
import type { Db, ItemKind } from '../db.js';
import { ITEM_KINDS, perDatabase } from '../db.js';
import { SandboxHttpError } from '../http/errors.js';
import type { Router } from '../http/router.js';
import { itemStatements, requireItem } from './items.js';

const staleCopies = perDatabase((db: Db) =>
  db.prepare<[string, number], { storage: string }>(
    'SELECT storage FROM stale_copies WHERE kind = ? AND item_id = ? ORDER BY storage',
  ),
);

const moveLog = perDatabase((db: Db) =>
  db.prepare<[string, number], { state: string; error_message: string | null }>(
    'SELECT state, error_message FROM moves WHERE kind = ? AND id = ?',
  ),
);

/** Adds the `/-/sandbox/` routes. */
export function register(router: Router): void {
  router.get('/-/sandbox/items/:kind/:id', { level: 'admin' }, showItemState);
  router.get('/-/sandbox/moves/:kind/:id', { level: 'admin' }, showMoveLog);
}

function showMoveLog(ctx: RequestContext): Reply {
  const kind = ctx.params.kind as ItemKind;
  const id = Number(ctx.params.id);
  const move = ITEM_KINDS.includes(kind) && Number.isSafeInteger(id) ? moveLog(ctx.state.db).get(kind, id) : undefined;
  if (!move) throw new SandboxHttpError(404, { message: '404 Not found' });
  return { body: { kind, id, state: move.state, exception: move.error_message } };
}

function showItemState(ctx: RequestContext): Reply {
  const kind = ctx.params.kind as ItemKind;
  if (!ITEM_KINDS.includes(kind)) throw new SandboxHttpError(404, { error: '404 Not Found' });
  const item = requireItem(ctx.state.db, kind, ctx.params.id, { scope: 'all' });
  const state = itemStatements(ctx.state.db).stateById.get(kind, item.id);
  return {
    body: {
      kind,
      id: item.id,
      storage: item.storage,
      read_only: item.read_only === 1,
      hidden: state?.hidden === 1,
      pending_delete: state?.pending_delete === 1,
      size_mb: item.size_mb,
      commit_count: item.commit_count,
      checksum: item.checksum,
      stale_copies: staleCopies(ctx.state.db)
        .all(kind, item.id)
        .map((r) => r.storage),
    },
  };
}
