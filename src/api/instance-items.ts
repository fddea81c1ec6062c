/**
 * The InstanceApi's item calls: listing and counting what is on a storage, one item by id or
 * path, a namespace by path, a repository's fingerprint.
 */
import type { Kind } from '../plan/types.js';
import type { ApiClient } from './client.js';
import { ApiInvalidResponseError } from './errors.js';
import { readFingerprint } from './fingerprint.js';
import { getOrNull } from './instance-read.js';
import { listKeysetIsolating, listOffsetIsolating } from './listing.js';
import { nextPageNumber, paginateOffset, parseLinkNext } from './pagination.js';
import { parseItem } from './records.js';
import type { InstanceApi, ItemRecord, NamespaceRecord } from './types.js';

type Json = Record<string, unknown>;

/** Pages of a group search read at most before a digit path counts as unknown. */
const DIGIT_SEARCH_PAGES = 20;

/** The item calls of the InstanceApi over the client. */
export function itemCalls(
  c: ApiClient,
): Pick<
  InstanceApi,
  'listItemsOnStorage' | 'countItemsOnStorage' | 'getItem' | 'findProject' | 'repositoryFingerprint' | 'getNamespace'
> {
  return {
    listItemsOnStorage(kind, storage, o = {}): AsyncIterable<ItemRecord[]> {
      const path = kind === 'projects' ? '/projects' : kind === 'snippets' ? '/snippets/all' : '/groups';
      const ref = { method: 'GET', path: `/api/v4${path}` };
      const perPage = o.perPage ?? 100;
      const base: Record<string, string | number | boolean> = { repository_storage: storage };
      if (kind === 'projects') {
        // Admin-only flags; include_hidden is EE. Elsewhere GitLab ignores them (docs/gitlab-behaviour.md §1.3).
        Object.assign(base, {
          statistics: true,
          include_hidden: true,
          include_pending_delete: true,
          pagination: 'keyset',
          order_by: 'id',
          sort: 'asc',
        });
        if (o.leaveOut) {
          delete base[o.leaveOut === 'hidden' ? 'include_hidden' : 'include_pending_delete'];
          delete base['statistics'];
        }
        return listKeysetIsolating(
          async (q) => {
            const query = {
              ...base,
              id_after: q.idAfter,
              per_page: q.perPage,
              ...(q.idBefore !== undefined ? { id_before: q.idBefore } : {}),
            };
            const res = await c.request({ method: 'GET', path, query });
            const items = asItems(kind, res.body, ref);
            return { items, hasNext: parseLinkNext(res.headers['link']) !== null };
          },
          { kind, perPage, afterId: o.afterId ?? 0, onUnlistable: o.onUnlistable },
        );
      }
      // Groups honour order_by=id (stable order); /snippets/all declares no order and is newest first.
      if (kind === 'groups') Object.assign(base, { order_by: 'id', sort: 'asc' });
      return listOffsetIsolating(
        async (page, size) => {
          const res = await c.request({ method: 'GET', path, query: { ...base, page, per_page: size } });
          const items = asItems(kind, res.body, ref);
          const next = nextPageNumber(res.headers);
          return { items, hasNext: next !== null && next > page };
        },
        { kind, perPage, onUnlistable: o.onUnlistable },
      );
    },

    async countItemsOnStorage(storage, o): Promise<number | null> {
      // An offset page of one project: its x-total is the count, sent when it is at most 10,000
      // (docs/gitlab-behaviour.md, offset headers); id_after/id_before filter offset pages too.
      const query: Record<string, string | number | boolean> = {
        repository_storage: storage,
        include_hidden: true,
        include_pending_delete: true,
        order_by: 'id',
        sort: 'asc',
        simple: true,
        id_after: o.afterId,
        page: 1,
        per_page: 1,
        ...(o.beforeId !== undefined ? { id_before: o.beforeId } : {}),
      };
      if (o.leaveOut) delete query[o.leaveOut === 'hidden' ? 'include_hidden' : 'include_pending_delete'];
      const res = await c.request({ method: 'GET', path: '/projects', query });
      const total = res.headers['x-total'];
      const n = Number(Array.isArray(total) ? total[0] : total);
      return total === undefined || total === '' || !Number.isSafeInteger(n) || n < 0 ? null : n;
    },

    async getItem(kind, id, opts) {
      const query = kind === 'projects' && opts?.statistics ? { statistics: true } : undefined;
      const body = await getOrNull(c, `/${kind}/${id}`, query);
      return body === null ? null : parseItem(kind, body, { method: 'GET', path: `/api/v4/${kind}/${id}` });
    },

    async findProject(ref) {
      // A full path goes in one path segment, URL-encoded (`acme%2Ftools`), as GitLab's routes take it.
      const id = encodeURIComponent(String(ref));
      const body = await getOrNull(c, `/projects/${id}`);
      if (body !== null) return parseItem('projects', body, { method: 'GET', path: `/api/v4/projects/${id}` });
      // Hidden and pending-delete projects are 404 above, even to admins; the move API finds them.
      const moves = await getOrNull(c, `/projects/${id}/repository_storage_moves`, { per_page: 1 });
      return moves === null ? null : 'hidden';
    },

    repositoryFingerprint: (id) => readFingerprint(c, id),

    async getNamespace(fullPath): Promise<NamespaceRecord | null> {
      // GitLab reads an all-digit :id as an id (`find_namespace`, `find_group`), so a top-level
      // group or user whose path is all digits ("2024") is found by name instead.
      if (/^\d+$/.test(fullPath)) return digitNamespace(c, fullPath);
      const path = `/namespaces/${encodeURIComponent(fullPath)}`;
      const body = (await getOrNull(c, path)) as Json | null;
      if (body === null) return null;
      const ref = { method: 'GET', path: `/api/v4${path}` };
      if (typeof body !== 'object' || typeof body['id'] !== 'number' || typeof body['full_path'] !== 'string')
        throw new ApiInvalidResponseError(ref, 'a namespace without an id or full_path');
      return { id: body['id'], kind: String(body['kind'] ?? ''), fullPath: body['full_path'] };
    },
  };
}

/**
 * A top-level namespace whose path is all digits: a group by `GET /groups?search=` (matching name
 * or path; the one whose full path is exactly it), else a user by `GET /users?username=`.
 */
async function digitNamespace(c: ApiClient, fullPath: string): Promise<NamespaceRecord | null> {
  const want = fullPath.toLowerCase();
  let pages = 0;
  for await (const page of paginateOffset(c, '/groups', { search: fullPath }, { perPage: 100 })) {
    for (const g of page as Json[]) {
      if (typeof g === 'object' && g !== null && typeof g['id'] === 'number' && typeof g['full_path'] === 'string')
        if (g['full_path'].toLowerCase() === want) return { id: g['id'], kind: 'group', fullPath: g['full_path'] };
    }
    if (++pages >= DIGIT_SEARCH_PAGES) break;
  }
  const users = (await getOrNull(c, '/users', { username: fullPath })) as Json[] | null;
  const user = Array.isArray(users) ? users.find((u) => typeof u === 'object' && u !== null) : undefined;
  if (user && typeof user['id'] === 'number' && typeof user['username'] === 'string')
    return { id: user['id'], kind: 'user', fullPath: user['username'] };
  return null;
}

function asItems(kind: Kind, body: unknown, ref: { method: string; path: string }): ItemRecord[] {
  if (!Array.isArray(body)) throw new ApiInvalidResponseError(ref, 'expected a JSON array');
  return body.map((r) => parseItem(kind, r, ref));
}
