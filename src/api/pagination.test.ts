import { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createStaticTokenProvider } from './auth.js';
import { createClient } from './client.js';
import { nextPageNumber, paginateKeyset, paginateOffset, parseLinkNext } from './pagination.js';

const ORIGIN = 'http://gitlab.test';
let agent: MockAgent | undefined;

function setup() {
  const mock = new MockAgent();
  agent = mock;
  mock.disableNetConnect();
  const client = createClient({
    baseUrl: ORIGIN,
    credentials: createStaticTokenProvider('glpat-x'),
    timeoutMs: 1000,
    dispatcher: mock,
  });
  return { pool: mock.get(ORIGIN), client };
}

async function collect<T>(gen: AsyncIterable<T[]>): Promise<T[][]> {
  const pages: T[][] = [];
  for await (const p of gen) pages.push(p);
  return pages;
}

const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i }));

afterEach(async () => {
  agent?.assertNoPendingInterceptors();
  await agent?.close();
  agent = undefined;
});

describe('parseLinkNext', () => {
  it('finds rel="next" among several links', () => {
    const link =
      '<https://g.test/api/v4/projects?id_after=42&per_page=2>; rel="next", <https://g.test/api/v4/projects?page=1>; rel="first"';
    expect(parseLinkNext(link)).toBe('https://g.test/api/v4/projects?id_after=42&per_page=2');
    expect(parseLinkNext('<https://g.test/x?page=1>; rel="first", <https://g.test/x?page=3>; rel=next')).toBe(
      'https://g.test/x?page=3',
    );
    expect(parseLinkNext('<https://g.test/x?page=1>; rel="prev"')).toBeNull();
    expect(parseLinkNext('<https://g.test/x?page=1>; rel="nextish"')).toBeNull();
    expect(parseLinkNext(undefined)).toBeNull();
  });

  it('reads the next page from x-next-page, an empty x-next-page, or the Link header', () => {
    expect(nextPageNumber({ 'x-next-page': '3' })).toBe(3);
    expect(nextPageNumber({ 'x-next-page': '', link: '<http://g/x?page=9>; rel="next"' })).toBeNull();
    expect(nextPageNumber({ link: '<http://g/x?page=9&per_page=100>; rel="next"' })).toBe(9);
    expect(nextPageNumber({})).toBeNull();
  });
});

describe('offset pagination', () => {
  it('follows x-next-page without x-total (over 10,000 records)', async () => {
    const { pool, client } = setup();
    const q = (page: number) => `/api/v4/snippets/all?repository_storage=nfs-1&page=${page}&per_page=2`;
    pool
      .intercept({ path: q(1), method: 'GET' })
      .reply(200, ids(1, 2), { headers: { 'x-next-page': '2', 'x-page': '1' } });
    pool
      .intercept({ path: q(2), method: 'GET' })
      .reply(200, ids(3, 2), { headers: { 'x-next-page': '3', 'x-page': '2' } });
    pool
      .intercept({ path: q(3), method: 'GET' })
      .reply(200, ids(5, 1), { headers: { 'x-next-page': '', 'x-page': '3' } });
    const pages = await collect(
      paginateOffset(client, '/snippets/all', { repository_storage: 'nfs-1' }, { perPage: 2 }),
    );
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
  });

  it('uses x-total headers when present without depending on them', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/api/v4/groups?page=1&per_page=100', method: 'GET' })
      .reply(200, ids(1, 3), { headers: { 'x-total': '3', 'x-total-pages': '1', 'x-next-page': '' } });
    expect(await collect(paginateOffset(client, '/groups', {}))).toEqual([ids(1, 3)]);
  });

  it('falls back to the Link header when x-next-page is missing, and stops on an empty page', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/api/v4/groups?page=1&per_page=100', method: 'GET' })
      .reply(200, ids(1, 1), { headers: { link: `<${ORIGIN}/api/v4/groups?page=2&per_page=100>; rel="next"` } });
    pool
      .intercept({ path: '/api/v4/groups?page=2&per_page=100', method: 'GET' })
      .reply(200, [], { headers: { link: `<${ORIGIN}/api/v4/groups?page=3&per_page=100>; rel="next"` } });
    const pages = await collect(paginateOffset(client, '/groups', {}));
    expect(pages).toEqual([ids(1, 1), []]);
  });
});

describe('keyset pagination', () => {
  it('sends the keyset parameters and follows Link rel="next" until it is absent', async () => {
    const { pool, client } = setup();
    pool
      .intercept({
        path: '/api/v4/projects?repository_storage=nfs-1&pagination=keyset&order_by=id&sort=asc&per_page=2',
        method: 'GET',
      })
      .reply(200, ids(1, 2), {
        headers: {
          link: `<${ORIGIN}/api/v4/projects?id_after=2&order_by=id&pagination=keyset&per_page=2&repository_storage=nfs-1&sort=asc>; rel="next"`,
        },
      });
    pool
      .intercept({
        path: '/api/v4/projects?id_after=2&order_by=id&pagination=keyset&per_page=2&repository_storage=nfs-1&sort=asc',
        method: 'GET',
      })
      .reply(200, ids(3, 1), {});
    const pages = await collect(paginateKeyset(client, '/projects', { repository_storage: 'nfs-1' }, { perPage: 2 }));
    expect(pages).toEqual([ids(1, 2), ids(3, 1)]);
  });

  it('rejects a body that is not an array', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: (p) => p.startsWith('/api/v4/projects'), method: 'GET' })
      .reply(200, { message: 'nope' }, { headers: { 'content-type': 'application/json' } });
    await expect(collect(paginateKeyset(client, '/projects', {}))).rejects.toMatchObject({
      code: 'SHARDMOVE_API_INVALID_RESPONSE',
    });
  });
});
