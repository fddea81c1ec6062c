/**
 * GitLab's two pagination styles for any SQL-backed list (reference §8).
 *
 * Offset: `page` (default 1) and `per_page` (default 20, values above 100 are clamped to 100, as
 * GitLab does), headers `x-page`, `x-per-page`, `x-next-page`, `x-prev-page`, `x-total`,
 * `x-total-pages` and `Link`. Totals and `rel="last"` are left out when the total exceeds 10,000,
 * so counting never reads more than 10,001 index entries (GitLab since 14.10, when
 * `api_kaminari_count_with_limit` was removed; default-on in 14.9, off before). Endpoints that also
 * support keyset pagination may set a maximum offset (50,000): beyond it, 405.
 *
 * Keyset: `pagination=keyset&order_by=id&sort=asc|desc`; the next page is only announced by
 * `Link: <...id_after=N>; rel="next"` (or `id_before` when descending), no other headers. When a
 * list announces it (after every non-empty page, or only when more rows exist) is the caller's.
 *
 * Typical use (both styles):
 * ```ts
 * const page = parseOffset(ctx);
 * const rows = db.prepare(`SELECT ... WHERE kind = ? ORDER BY id DESC LIMIT ? OFFSET ?`).all(kind, page.limit, page.offset);
 * const total = countCapped(db, 'moves WHERE kind = ?', [kind]);
 * return { body: rows.slice(0, page.perPage).map(toJson), headers: offsetHeaders(ctx, { ...page, total, hasNext: rows.length > page.perPage }) };
 * ```
 */
import type { RequestContext } from './context.js';
import type { Db } from '../db.js';
import { SandboxHttpError, invalidParam } from './errors.js';

/** Above this many records, `x-total`, `x-total-pages` and `rel="last"` are omitted. */
export const TOTAL_COUNT_LIMIT = 10_000;
/** GitLab's `per_page` maximum. */
export const MAX_PER_PAGE = 100;
export const DEFAULT_PER_PAGE = 20;
/** GitLab's default `offset_pagination_limit`, applied to endpoints that support keyset pagination. */
export const DEFAULT_OFFSET_LIMIT = 50_000;

export interface OffsetPage {
  page: number;
  perPage: number;
  /** Rows to fetch: one more than `perPage`, so the extra row tells whether a next page exists. */
  limit: number;
  offset: number;
}

export interface OffsetLimit {
  /** Largest allowed `page * per_page`; 0 turns the limit off. */
  maxOffset: number;
  /** Class name for the message, e.g. `Project`. */
  entity: string;
}

type Input = Pick<RequestContext, 'input'>;

/** Grape's Integer coercion: digits with an optional sign, or a JSON number that is an integer. */
function parseInteger(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (typeof value === 'string' && /^\s*[+-]?\d{1,15}\s*$/.test(value)) return Number.parseInt(value, 10);
  return undefined;
}

/** An optional positive integer parameter; 400 `{"error":"<name> is invalid"}` otherwise. */
export function readPositiveInt(ctx: Input, name: string): number | undefined {
  const raw = ctx.input[name];
  if (raw === undefined || raw === '') return undefined;
  const n = parseInteger(raw);
  if (n === undefined || n < 1) throw invalidParam(`${name} is invalid`);
  return n;
}

function readPerPage(ctx: Input): number {
  return Math.min(readPositiveInt(ctx, 'per_page') ?? DEFAULT_PER_PAGE, MAX_PER_PAGE);
}

/**
 * Reads `page` and `per_page`. Non-integers and values below 1 give 400 `{"error":"page is invalid"}`
 * (or `per_page`); `per_page` above 100 is clamped. With `limit`, `page * per_page` beyond the
 * maximum offset gives GitLab's 405.
 */
export function parseOffset(ctx: Input, limit?: OffsetLimit): OffsetPage {
  const page = readPositiveInt(ctx, 'page') ?? 1;
  const perPage = readPerPage(ctx);
  if (limit && limit.maxOffset > 0 && page * perPage > limit.maxOffset) {
    throw new SandboxHttpError(405, {
      error: `Offset pagination has a maximum allowed offset of ${limit.maxOffset} for requests that return objects of type ${limit.entity}. Remaining records can be retrieved using keyset pagination.`,
    });
  }
  return { page, perPage, limit: perPage + 1, offset: (page - 1) * perPage };
}

/**
 * `count(*)` of `fromWhere` (SQL after FROM, e.g. `items WHERE kind = ?`), or null when there are
 * more than TOTAL_COUNT_LIMIT rows: the count stops reading at 10,001.
 */
export function countCapped(db: Db, fromWhere: string, params: readonly unknown[] = []): number | null {
  const row = db
    .prepare(`SELECT count(*) AS n FROM (SELECT 1 FROM ${fromWhere} LIMIT ${TOTAL_COUNT_LIMIT + 1})`)
    .get(...params) as { n: number };
  return row.n > TOTAL_COUNT_LIMIT ? null : row.n;
}

/** The URL of this request with some query parameters replaced (others, in order, kept). */
export function pageUrl(
  ctx: Pick<RequestContext, 'origin' | 'path' | 'query'>,
  set: Record<string, string>,
  drop: string[] = [],
): string {
  const q = new URLSearchParams(ctx.query);
  for (const d of drop) q.delete(d);
  for (const [k, v] of Object.entries(set)) q.set(k, v);
  return `${ctx.origin}${ctx.path}?${q.toString()}`;
}

export interface OffsetHeaderInput {
  page: number;
  perPage: number;
  /** Total rows, or null when over TOTAL_COUNT_LIMIT (headers omitted). */
  total: number | null;
  hasNext: boolean;
}

/** GitLab's offset pagination headers for one page. */
export function offsetHeaders(
  ctx: Pick<RequestContext, 'origin' | 'path' | 'query'>,
  p: OffsetHeaderInput,
): Record<string, string> {
  const totalPages = p.total === null ? null : Math.max(1, Math.ceil(p.total / p.perPage));
  const hasNext = totalPages === null ? p.hasNext : p.page < totalPages;
  const hasPrev = p.page > 1;
  const link = (page: number, rel: string) =>
    `<${pageUrl(ctx, { page: String(page), per_page: String(p.perPage) })}>; rel="${rel}"`;
  const links: string[] = [];
  // When the requested page is past the end, GitLab's prev still points at page - 1.
  if (hasPrev) links.push(link(p.page - 1, 'prev'));
  if (hasNext) links.push(link(p.page + 1, 'next'));
  links.push(link(1, 'first'));
  if (totalPages !== null) links.push(link(totalPages, 'last'));
  const headers: Record<string, string> = {
    link: links.join(', '),
    'x-page': String(p.page),
    'x-per-page': String(p.perPage),
    'x-next-page': hasNext ? String(p.page + 1) : '',
    'x-prev-page': hasPrev ? String(p.page - 1) : '',
  };
  if (p.total !== null && totalPages !== null) {
    headers['x-total'] = String(p.total);
    headers['x-total-pages'] = String(totalPages);
  }
  return headers;
}

export interface KeysetPage {
  perPage: number;
  /** Rows to fetch (perPage + 1). */
  limit: number;
  sort: 'asc' | 'desc';
  /** `id_after`: only ids greater than this. */
  after?: number;
  /** `id_before`: only ids smaller than this. */
  before?: number;
}

/** Orders accepted by `order_by` anywhere in the sandbox (others: 400, as Grape's `values:`). */
export const KNOWN_ORDERS = [
  'id',
  'name',
  'path',
  'created_at',
  'updated_at',
  'last_activity_at',
  'similarity',
  'star_count',
  'storage_size',
  'repository_size',
] as const;

/** Reads `sort` (asc|desc, default desc); 400 `{"error":"sort does not have a valid value"}` otherwise. */
export function readSort(ctx: Input, dflt: 'asc' | 'desc' = 'desc'): 'asc' | 'desc' {
  const raw = ctx.input.sort;
  if (raw === undefined || raw === '') return dflt;
  if (raw !== 'asc' && raw !== 'desc') throw invalidParam('sort does not have a valid value');
  return raw;
}

/** Reads `order_by` (default `dflt`); unknown values give 400 `{"error":"order_by does not have a valid value"}`. */
export function readOrderBy(ctx: Input, dflt = 'created_at', known: readonly string[] = KNOWN_ORDERS): string {
  const raw = ctx.input.order_by;
  if (raw === undefined || raw === '') return dflt;
  if (typeof raw !== 'string' || !known.includes(raw)) throw invalidParam('order_by does not have a valid value');
  return raw;
}

/** True when the request asks for keyset pagination (`pagination=keyset`). */
export function isKeyset(ctx: Input): boolean {
  const p = ctx.input.pagination;
  if (p === undefined || p === '' || p === 'offset') return false;
  if (p === 'keyset') return true;
  throw invalidParam('pagination does not have a valid value');
}

/**
 * Reads a keyset request. Only `order_by=id` is supported (the sandbox's choice when `order_by` is
 * absent, so `pagination=keyset` alone works); any other order, or an endpoint without keyset
 * support (`supported: false`), gives GitLab's 405.
 */
export function parseKeyset(ctx: Input, supported = true): KeysetPage {
  const orderBy = readOrderBy(ctx, 'id');
  const sort = readSort(ctx);
  if (!supported || orderBy !== 'id')
    throw new SandboxHttpError(405, { message: 'Keyset pagination is not yet available for this type of request' });
  const perPage = readPerPage(ctx);
  const after = readIdBound(ctx, 'id_after');
  const before = readIdBound(ctx, 'id_before');
  return {
    perPage,
    limit: perPage + 1,
    sort,
    ...(after !== undefined ? { after } : {}),
    ...(before !== undefined ? { before } : {}),
  };
}

/**
 * `id_after` and `id_before` alone, for lists that filter by them under offset pagination too
 * (GitLab's `ProjectsFinder#by_ids`); 400 `<name> is invalid` for a non-integer.
 */
export function parseIdBounds(ctx: Input): Pick<KeysetPage, 'after' | 'before'> {
  const after = readIdBound(ctx, 'id_after');
  const before = readIdBound(ctx, 'id_before');
  return { ...(after !== undefined ? { after } : {}), ...(before !== undefined ? { before } : {}) };
}

function readIdBound(ctx: Input, name: string): number | undefined {
  const raw = ctx.input[name];
  if (raw === undefined || raw === '') return undefined;
  const n = parseInteger(raw);
  if (n === undefined) throw invalidParam(`${name} is invalid`);
  return n;
}

/** SQL condition and parameters for a keyset page over the column `col` (AND-joined, may be empty). */
export function keysetWhere(page: Pick<KeysetPage, 'after' | 'before'>, col = 'id'): { sql: string; params: number[] } {
  const parts: string[] = [];
  const params: number[] = [];
  if (page.after !== undefined) {
    parts.push(`${col} > ?`);
    params.push(page.after);
  }
  if (page.before !== undefined) {
    parts.push(`${col} < ?`);
    params.push(page.before);
  }
  return { sql: parts.join(' AND '), params };
}

/**
 * The keyset headers: only `Link rel="next"` (when more rows exist), carrying the last id of this
 * page as `id_after` (ascending) or `id_before` (descending).
 */
export function keysetHeaders(
  ctx: Pick<RequestContext, 'origin' | 'path' | 'query'>,
  page: KeysetPage,
  lastId: number | undefined,
  hasNext: boolean,
): Record<string, string> {
  if (!hasNext || lastId === undefined) return {};
  const key = page.sort === 'asc' ? 'id_after' : 'id_before';
  // The other bound, if the caller gave one, still applies to later pages.
  const url = pageUrl(ctx, { [key]: String(lastId), per_page: String(page.perPage) }, ['page']);
  return { link: `<${url}>; rel="next"` };
}
