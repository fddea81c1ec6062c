/**
 * Repository storage move endpoints for projects, snippets and groups (reference §1.2): list all,
 * get one, list for an item, get one for an item, schedule for an item (201), schedule for a whole
 * storage (202). Admin only. The group routes live in GitLab's `ee/` tree
 * (`ee/lib/api/group_repository_storage_moves.rb`): absent on the Community Edition (Grape's
 * catch-all `{"error":"404 Not Found"}` before any authentication), and on every EE tier an admin
 * endpoint like the others, with no licence check: on EE Free (a lapsed licence) the group wiki
 * repositories are still there and are moved (see moves/engine.ts).
 *
 * Lists are offset-paginated, newest first by `created_at` (GitLab's `order_created_at_desc`, no
 * tie-breaker; see `moveStatements`). Parameters follow Grape's coercion: a string
 * parameter accepts a string or a number; arrays and objects are `<name> is invalid`; JSON null
 * counts as absent.
 */
import type { RequestContext, Reply } from '../http/context.js';
import type { ItemKind, ItemRow } from '../db.js';
import { SandboxHttpError, badRequest, invalidParam, notFound } from '../http/errors.js';
import { activeRecordId, intParam } from '../http/coerce.js';
import type { Router } from '../http/router.js';
import type { OffsetPage } from '../http/pagination.js';
import { TOTAL_COUNT_LIMIT, countCapped, offsetHeaders, parseOffset } from '../http/pagination.js';
import { itemStatements, requireItem } from '../inventory/items.js';
import { requireProject } from '../inventory/redirects.js';
import { createMoveRenderer } from './entities.js';
import { moveRoutesFindHidden } from './releases.js';
import type { MoveListRow } from './store.js';
import { countMoves, moveStatements } from './store.js';

const PLURAL: Record<ItemKind, string> = { project: 'projects', snippet: 'snippets', group: 'groups' };
const MOVE_ID = 'repository_storage_move_id';
const ADMIN = { level: 'admin' } as const;

export function register(router: Router): void {
  for (const kind of ['project', 'snippet', 'group'] as const) {
    const collection = `/api/v4/${kind}_repository_storage_moves`;
    const perItem = `/api/v4/${PLURAL[kind]}/:id/repository_storage_moves`;
    const options = { ee: kind === 'group' };
    router.get(collection, ADMIN, (ctx) => listAll(ctx, kind), options);
    router.get(`${collection}/:${MOVE_ID}`, ADMIN, (ctx) => showOne(ctx, kind), options);
    router.post(collection, ADMIN, (ctx) => scheduleBulk(ctx, kind), options);
    router.get(perItem, ADMIN, (ctx) => listForItem(ctx, itemOf(ctx, kind)), options);
    router.get(`${perItem}/:${MOVE_ID}`, ADMIN, (ctx) => showOne(ctx, kind, itemOf(ctx, kind)), options);
    router.post(perItem, ADMIN, (ctx) => scheduleOne(ctx, itemOf(ctx, kind)), options);
  }
}

/**
 * The item of a per-item route, found where GitLab finds it; the handler calls the result once
 * its parameters are validated. Projects and groups: in the endpoint (`user_project`,
 * `user_group`, by id or full path), so after Grape's validation. Snippets: in a `before` filter
 * (`not_found!('Snippet') unless user_snippet`), so first, with `Snippet.find_by(id: params[:id])`
 * on a String `:id`: ActiveRecord's cast makes `abc` find nothing (404 `Snippet Not Found`, never
 * Grape's 400) and `12abc` find snippet 12.
 */
function itemOf(ctx: RequestContext, kind: ItemKind): () => ItemRow {
  // Before the move routes overrode GitLab's default project scope, hidden and pending-delete
  // projects are 404 here as on `GET /projects/:id` (./releases.ts).
  if (kind === 'project')
    return () => requireProject(ctx, { scope: moveRoutesFindHidden(ctx.state.config.version) ? 'all' : 'default' });
  if (kind !== 'snippet') return () => requireItem(ctx.state.db, kind, ctx.params.id);
  const id = activeRecordId(ctx.params.id ?? '');
  const snippet = id === undefined ? undefined : itemStatements(ctx.state.db).byId.get('snippet', id);
  if (!snippet) throw notFound('Snippet');
  return () => snippet;
}

/**
 * Reads an optional string parameter the way Grape coerces `type: String`: numbers become strings,
 * null or absence is undefined, anything else is 400 `<name> is invalid`.
 */
export function readStringParam(ctx: RequestContext, name: string): string | undefined {
  const v = ctx.input[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  throw invalidParam(`${name} is invalid`);
}

function listAll(ctx: RequestContext, kind: ItemKind): Reply {
  const page = parseOffset(ctx);
  const rows = moveStatements(ctx.state.db).listMoves.all(kind, page.limit, page.offset);
  const total = countMoves(ctx.state.db, kind, TOTAL_COUNT_LIMIT);
  return pageReply(ctx, page, rows, total);
}

function listForItem(ctx: RequestContext, itemRef: () => ItemRow): Reply {
  const page = parseOffset(ctx);
  const item = itemRef();
  const rows = moveStatements(ctx.state.db).listItemMoves.all(item.kind, item.id, page.limit, page.offset);
  const total = countCapped(ctx.state.db, 'moves WHERE kind = ? AND item_id = ?', [item.kind, item.id]);
  return pageReply(ctx, page, rows, total);
}

function pageReply(ctx: RequestContext, page: OffsetPage, rows: MoveListRow[], total: number | null): Reply {
  const render = createMoveRenderer(ctx.state.db, ctx.origin, ctx.state.config.version);
  return {
    body: rows.slice(0, page.perPage).map((m) => render(m)),
    headers: offsetHeaders(ctx, { page: page.page, perPage: page.perPage, total, hasNext: rows.length > page.perPage }),
  };
}

/**
 * One move by id; with `itemRef` it must belong to that item (else 404, ActiveRecord's not found,
 * `{"message":"404 Not found"}`).
 */
function showOne(ctx: RequestContext, kind: ItemKind, itemRef?: () => ItemRow): Reply {
  const id = intParam(ctx.params[MOVE_ID], MOVE_ID);
  const itemId = itemRef ? itemRef().id : null;
  const move = moveStatements(ctx.state.db).moveByKindId.get(kind, id);
  if (!move || (itemId !== null && move.item_id !== itemId)) throw notFound();
  return { body: createMoveRenderer(ctx.state.db, ctx.origin, ctx.state.config.version)(move) };
}

function scheduleOne(ctx: RequestContext, itemRef: () => ItemRow): Reply {
  const destination = readStringParam(ctx, 'destination_storage_name');
  const item = itemRef();
  const outcome = ctx.state.engine.schedule(item, destination);
  if (!outcome.ok) throw badRequest(outcome.errors);
  // The item as read before scheduling: only its read-only flag changed, which the JSON omits.
  return {
    status: 201,
    body: createMoveRenderer(ctx.state.db, ctx.origin, ctx.state.config.version)(outcome.move, item),
  };
}

/** GitLab validates both names against the configured storages (Grape `values:`), then enqueues. */
function scheduleBulk(ctx: RequestContext, kind: ItemKind): Reply {
  const storages = ctx.state.config.storages;
  const errors: string[] = [];
  let source: string | undefined;
  let destination: string | undefined;
  try {
    source = readStringParam(ctx, 'source_storage_name');
    if (source === undefined) errors.push('source_storage_name is missing');
    else if (!storages.includes(source)) errors.push('source_storage_name does not have a valid value');
  } catch (err) {
    if (!(err instanceof SandboxHttpError)) throw err;
    errors.push('source_storage_name is invalid');
  }
  try {
    destination = readStringParam(ctx, 'destination_storage_name');
    if (destination !== undefined && !storages.includes(destination))
      errors.push('destination_storage_name does not have a valid value');
  } catch (err) {
    if (!(err instanceof SandboxHttpError)) throw err;
    errors.push('destination_storage_name is invalid');
  }
  if (errors.length > 0 || source === undefined) throw invalidParam(errors.join(', '));
  ctx.state.engine.scheduleBulk(kind, source, destination);
  return { status: 202, body: { message: '202 Accepted' } };
}
