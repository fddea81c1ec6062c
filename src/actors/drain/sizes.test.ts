import { describe, expect, it } from 'vitest';
import { parseItem } from '../../api/records.js';
import { DESIGN_ALLOWANCE, SIZE_ALLOWANCE, bytesOf } from './sizes.js';

const MIB = 2 ** 20;
const ref = { method: 'GET', path: '/projects' } as never;

describe('the bytes an item counts for', () => {
  it("counts a project's repository, its wiki and a design allowance; other kinds by their allowance", () => {
    const item = parseItem(
      'projects',
      { id: 1, path_with_namespace: 'g/p', statistics: { repository_size: 100 * MIB, wiki_size: 200 * MIB } },
      ref,
    );
    expect(item.sizeBytes).toBe(300 * MIB);
    expect(item.wikiBytes).toBe(200 * MIB);
    expect(bytesOf('projects', item.sizeBytes)).toBe(300 * MIB + DESIGN_ALLOWANCE);
    expect(bytesOf('snippets', 5)).toBe(SIZE_ALLOWANCE.snippets);
    expect(bytesOf('groups', 5)).toBe(SIZE_ALLOWANCE.groups);
  });

  it('takes a missing, zero or non-numeric wiki_size as no wiki, and a project without statistics by the allowance', () => {
    for (const wiki of [undefined, 0, null, '7']) {
      const item = parseItem(
        'projects',
        { id: 1, path_with_namespace: 'g/p', statistics: { repository_size: 10, wiki_size: wiki } },
        ref,
      );
      expect(item.sizeBytes).toBe(10);
      expect(item.wikiBytes).toBeUndefined();
    }
    // A wiki size without a repository size is no size: the project counts by its allowance.
    const bare = parseItem('projects', { id: 2, path_with_namespace: 'g/q', statistics: { wiki_size: 5 } }, ref);
    expect(bare.sizeBytes).toBeNull();
    expect(bytesOf('projects', bare.sizeBytes)).toBe(SIZE_ALLOWANCE.projects);
  });
});
