import { describe, expect, it } from 'vitest';
import { openDatabase } from '../db.js';
import { SandboxHttpError } from './errors.js';
import {
  countCapped,
  isKeyset,
  keysetHeaders,
  keysetWhere,
  offsetHeaders,
  parseKeyset,
  parseOffset,
} from './pagination.js';

const ctxOf = (query: string) => {
  const q = new URLSearchParams(query);
  return {
    input: Object.fromEntries(q) as Record<string, unknown>,
    query: q,
    origin: 'http://h:1',
    path: '/api/v4/projects',
  };
};

const statusOf = (f: () => unknown): [number, unknown] => {
  try {
    f();
  } catch (err) {
    if (err instanceof SandboxHttpError) return [err.status, err.body];
    throw err;
  }
  return [0, null];
};

describe('offset pagination', () => {
  it('defaults to page 1 of 20 and clamps per_page to 100', () => {
    expect(parseOffset(ctxOf(''))).toEqual({ page: 1, perPage: 20, limit: 21, offset: 0 });
    expect(parseOffset(ctxOf('page=3&per_page=500'))).toEqual({ page: 3, perPage: 100, limit: 101, offset: 200 });
  });

  it.each(['page=abc', 'page=-1', 'page=0', 'page=1.5', 'per_page=x', 'per_page=0'])('refuses %s with 400', (q) => {
    const [status, body] = statusOf(() => parseOffset(ctxOf(q)));
    expect(status).toBe(400);
    expect((body as { error: string }).error).toMatch(/^(page|per_page) is invalid$/);
  });

  it('gives 405 past the maximum offset', () => {
    const limit = { maxOffset: 50_000, entity: 'Project' };
    expect(parseOffset(ctxOf('page=500&per_page=100'), limit).offset).toBe(49_900);
    expect(statusOf(() => parseOffset(ctxOf('page=501&per_page=100'), limit))).toEqual([
      405,
      {
        error:
          'Offset pagination has a maximum allowed offset of 50000 for requests that return objects of type Project. Remaining records can be retrieved using keyset pagination.',
      },
    ]);
    expect(parseOffset(ctxOf('page=9999'), { maxOffset: 0, entity: 'Project' }).page).toBe(9999);
  });

  it('builds headers and links that keep other query parameters', () => {
    const h = offsetHeaders(ctxOf('repository_storage=nfs-1&page=2&per_page=10'), {
      page: 2,
      perPage: 10,
      total: 35,
      hasNext: true,
    });
    expect(h['x-total']).toBe('35');
    expect(h['x-total-pages']).toBe('4');
    expect(h['x-next-page']).toBe('3');
    expect(h['x-prev-page']).toBe('1');
    expect(h.link).toBe(
      [
        '<http://h:1/api/v4/projects?repository_storage=nfs-1&page=1&per_page=10>; rel="prev"',
        '<http://h:1/api/v4/projects?repository_storage=nfs-1&page=3&per_page=10>; rel="next"',
        '<http://h:1/api/v4/projects?repository_storage=nfs-1&page=1&per_page=10>; rel="first"',
        '<http://h:1/api/v4/projects?repository_storage=nfs-1&page=4&per_page=10>; rel="last"',
      ].join(', '),
    );
  });

  it('omits totals and rel=last when the total is unknown (over 10,000)', () => {
    const h = offsetHeaders(ctxOf(''), { page: 1, perPage: 20, total: null, hasNext: true });
    expect(h).not.toHaveProperty('x-total');
    expect(h).not.toHaveProperty('x-total-pages');
    expect(h.link).not.toContain('rel="last"');
    expect(h['x-next-page']).toBe('2');
    expect(h['x-prev-page']).toBe('');
  });

  it('counts up to 10,000 and gives null beyond', () => {
    const db = openDatabase();
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    db.prepare(
      'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10001) INSERT INTO t SELECT x FROM c',
    ).run();
    expect(countCapped(db, 't WHERE id <= ?', [10_000])).toBe(10_000);
    expect(countCapped(db, 't')).toBeNull();
    db.close();
  });
});

describe('keyset pagination', () => {
  it('recognises pagination=keyset and refuses unknown styles', () => {
    expect(isKeyset(ctxOf('pagination=keyset'))).toBe(true);
    expect(isKeyset(ctxOf(''))).toBe(false);
    expect(statusOf(() => isKeyset(ctxOf('pagination=cursor')))[0]).toBe(400);
  });

  it('supports order_by=id only', () => {
    expect(parseKeyset(ctxOf('order_by=id&sort=asc&id_after=5&per_page=1000'))).toEqual({
      perPage: 100,
      limit: 101,
      sort: 'asc',
      after: 5,
    });
    expect(statusOf(() => parseKeyset(ctxOf('order_by=name&sort=asc')))).toEqual([
      405,
      { message: 'Keyset pagination is not yet available for this type of request' },
    ]);
    expect(statusOf(() => parseKeyset(ctxOf('order_by=id'), false))[0]).toBe(405);
    expect(statusOf(() => parseKeyset(ctxOf('order_by=bogus')))[0]).toBe(400);
    expect(statusOf(() => parseKeyset(ctxOf('sort=up')))[0]).toBe(400);
  });

  it('links to the next page only, with id_after or id_before', () => {
    const asc = parseKeyset(ctxOf('pagination=keyset&order_by=id&sort=asc'));
    expect(keysetHeaders(ctxOf('pagination=keyset&order_by=id&sort=asc'), asc, 42, true)).toEqual({
      link: '<http://h:1/api/v4/projects?pagination=keyset&order_by=id&sort=asc&id_after=42&per_page=20>; rel="next"',
    });
    const desc = parseKeyset(ctxOf('order_by=id&sort=desc&id_after=3'));
    expect(keysetHeaders(ctxOf('order_by=id&sort=desc&id_after=3'), desc, 42, true).link).toContain(
      'id_after=3&id_before=42',
    );
    expect(keysetHeaders(ctxOf(''), desc, 42, false)).toEqual({});
    expect(keysetWhere(desc)).toEqual({ sql: 'id > ?', params: [3] });
  });
});
