import { describe, expect, it } from 'vitest';
import { compareRefs } from './verify.js';

describe('compareRefs', () => {
  it('reports missing, extra and moved refs', () => {
    expect(
      compareRefs(
        'r.git',
        { 'refs/heads/a': '1'.repeat(40), 'refs/heads/b': '2'.repeat(40) },
        { 'refs/heads/a': '3'.repeat(40), 'refs/tags/t': '4'.repeat(40) },
      ),
    ).toEqual([
      { repo: 'r.git', kind: 'different-ref', ref: 'refs/heads/a', source: '1'.repeat(40), target: '3'.repeat(40) },
      { repo: 'r.git', kind: 'missing-ref', ref: 'refs/heads/b', source: '2'.repeat(40) },
      { repo: 'r.git', kind: 'extra-ref', ref: 'refs/tags/t', target: '4'.repeat(40) },
    ]);
  });
});
