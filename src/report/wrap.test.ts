import { describe, expect, it } from 'vitest';
import { headThenWrapped, wrapWords } from './wrap.js';

describe('lines a terminal of 80 columns holds', () => {
  it('keeps a short head and its rest on one line', () => {
    expect(headThenWrapped('  ', '"eu" (site 2): requested for', 'PROJECT_REPOSITORY_REGISTRY')).toEqual([
      '  "eu" (site 2): requested for PROJECT_REPOSITORY_REGISTRY',
    ]);
  });

  it('puts a long head (a path to paste) whole on its own line and wraps the rest within 80 columns', () => {
    const path = `@hashed/1a/65/${'a'.repeat(64)}.git, with its .wiki.git and .design.git beside it`;
    const lines = headThenWrapped('    ', `at ${path}`, "(relative to nfs-2's path; those that exist)");
    expect(lines[0]).toBe(`    at ${path}`);
    expect(lines.slice(1)).toEqual(["      (relative to nfs-2's path; those that exist)"]);
  });

  it('wraps a list of Geo registries so that no line passes 80 columns', () => {
    const classes = [
      'PROJECT_REPOSITORY_REGISTRY',
      'PROJECT_WIKI_REPOSITORY_REGISTRY',
      'DESIGN_MANAGEMENT_REPOSITORY_REGISTRY',
      'SNIPPET_REPOSITORY_REGISTRY',
      'GROUP_WIKI_REPOSITORY_REGISTRY',
    ];
    const lines = headThenWrapped('  ', '"secondary" (site 2): requested for', classes.join(', '));
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(80);
    expect(lines.join(' ').replace(/\s+/g, ' ')).toContain(classes.join(', '));
  });

  it('leaves a word longer than the width alone on its line', () => {
    expect(wrapWords(`a ${'x'.repeat(20)} b`, 10)).toEqual(['a', 'x'.repeat(20), 'b']);
  });
});
