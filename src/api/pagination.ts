/**
 * GitLab's two paginations as async generators of pages. Offset pagination follows `x-next-page`
 * (or the Link `rel="next"`), never `x-total`: over 10,000 records GitLab leaves totals out.
 * Keyset pagination (/projects, `order_by=id`) has only the Link `rel="next"` header to go on.
 */
import type { ApiClient, RequestOptions } from './client.js';
import { ApiInvalidResponseError } from './errors.js';

type Query = NonNullable<RequestOptions['query']>;

/** The URL of Link's `rel="next"`, or null. Tolerates several links and parameters in any order. */
export function parseLinkNext(link: string | string[] | undefined): string | null {
  const value = Array.isArray(link) ? link.join(',') : link;
  if (!value) return null;
  for (const part of value.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>(.*)$/s.exec(part);
    const rel = m ? /;\s*rel\s*=\s*"?([^";]*)"?/i.exec(m[2] ?? '') : null;
    if (m && rel?.[1]?.split(/\s+/).includes('next')) return m[1] ?? null;
  }
  return null;
}

/** The next page number from `x-next-page`, else from Link `rel="next"`'s `page`, else null. */
export function nextPageNumber(headers: Record<string, string | string[] | undefined>): number | null {
  const raw = headers['x-next-page'];
  const v = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (v) {
    const n = Number(v);
    return Number.isInteger(n) && n > 0 ? n : null;
  }
  if (v === '') return null;
  const next = parseLinkNext(headers['link']);
  if (!next) return null;
  const page = Number(new URL(next, 'http://x').searchParams.get('page'));
  return Number.isInteger(page) && page > 0 ? page : null;
}

/** Pages of an offset-paginated list, from `startPage`, until there is no next page. */
export async function* paginateOffset(
  client: ApiClient,
  path: string,
  query: Query,
  opts: { perPage?: number; startPage?: number; signal?: AbortSignal } = {},
): AsyncGenerator<unknown[]> {
  let page: number | null = opts.startPage ?? 1;
  while (page !== null) {
    const res = await client.request({
      method: 'GET',
      path,
      query: { ...query, page, per_page: opts.perPage ?? 100 },
      signal: opts.signal,
    });
    const items = asArray(res.body, path);
    yield items;
    const next = nextPageNumber(res.headers);
    // Guard against a server that repeats a page number: stop rather than loop forever.
    page = next !== null && next > page && items.length > 0 ? next : null;
  }
}

/**
 * Pages of a keyset-paginated list: the first request carries the keyset parameters, each next one
 * follows the Link `rel="next"` query exactly (it holds the `id_after` cursor).
 */
export async function* paginateKeyset(
  client: ApiClient,
  path: string,
  query: Query,
  opts: { perPage?: number; signal?: AbortSignal } = {},
): AsyncGenerator<unknown[]> {
  let q: Query | null = { ...query, pagination: 'keyset', order_by: 'id', sort: 'asc', per_page: opts.perPage ?? 100 };
  while (q !== null) {
    const res = await client.request({ method: 'GET', path, query: q, signal: opts.signal });
    const items = asArray(res.body, path);
    yield items;
    const next = items.length > 0 ? parseLinkNext(res.headers['link']) : null;
    q = next ? Object.fromEntries(new URL(next, 'http://x').searchParams) : null;
  }
}

function asArray(body: unknown, path: string): unknown[] {
  if (!Array.isArray(body)) throw new ApiInvalidResponseError({ method: 'GET', path }, 'expected a JSON array');
  return body as unknown[];
}
