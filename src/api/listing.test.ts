import { describe, expect, it } from 'vitest';
import { ApiHttpError } from './errors.js';
import { listKeysetIsolating, listOffsetIsolating } from './listing.js';
import type { ItemRecord, UnlistableGap } from './types.js';

const item = (id: number): ItemRecord => ({ kind: 'projects', id, storage: 'nfs-1', name: `p${id}`, sizeBytes: null });
const fail = () =>
  new ApiHttpError({ method: 'GET', path: '/api/v4/projects' }, 500, '500 Internal Server Error', null);

/** Ids 1..n with `broken` unrenderable: any page holding it fails, as GitLab's does. */
function instance(n: number, broken: number) {
  const ids = Array.from({ length: n }, (_, i) => i + 1);
  let requests = 0;
  const page = (chosen: number[]) => {
    requests++;
    if (chosen.includes(broken)) throw fail();
    return chosen.map(item);
  };
  return {
    ids,
    requests: () => requests,
    keyset: async (q: { idAfter: number; idBefore?: number; perPage: number }) => {
      const after = ids.filter((id) => id > q.idAfter && (q.idBefore === undefined || id < q.idBefore));
      return { items: page(after.slice(0, q.perPage)), hasNext: after.length > q.perPage };
    },
    offset: async (p: number, perPage: number) => {
      const start = (p - 1) * perPage;
      return { items: page(ids.slice(start, start + perPage)), hasNext: start + perPage < ids.length };
    },
  };
}

async function collect(pages: AsyncIterable<ItemRecord[]>): Promise<number[]> {
  const out: number[] = [];
  for await (const p of pages) out.push(...p.map((i) => i.id));
  return out;
}

describe('listings that survive an unrenderable item', () => {
  it('keyset: every other item is listed and the broken id is named exactly', async () => {
    const inst = instance(250, 137);
    const gaps: UnlistableGap[] = [];
    const got = await collect(
      listKeysetIsolating(inst.keyset, {
        kind: 'projects',
        perPage: 100,
        afterId: 0,
        onUnlistable: (g) => gaps.push(g),
      }),
    );
    expect(got).toEqual(inst.ids.filter((id) => id !== 137));
    expect(gaps.map((g) => g.id)).toEqual([137]);
  });

  it('offset: every other item is listed and the gap is reported after its listed neighbour, at every page size (one per page too)', async () => {
    for (const perPage of [100, 20, 7, 1]) {
      const inst = instance(45, 23);
      const gaps: UnlistableGap[] = [];
      const got = await collect(
        listOffsetIsolating(inst.offset, { kind: 'projects', perPage, onUnlistable: (g) => gaps.push(g) }),
      );
      expect(got, `per_page ${perPage}`).toEqual(inst.ids.filter((id) => id !== 23));
      expect(gaps, `per_page ${perPage}`).toEqual([expect.objectContaining({ id: null, afterId: 22 })]);
    }
  });
});
