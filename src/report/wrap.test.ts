import { describe, expect, it } from 'vitest';
import { fitLine, hangOf, headThenWrapped, wrapWords } from './wrap.js';

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

describe('the one wrapper of the text outputs', () => {
  it('hangs a continuation under the text after the label, a bullet or a parenthesis', () => {
    const line = 'Verification: passed: nothing of the moved kinds is left on nfs-1, nfs-2 and default';
    expect(fitLine(line, { width: 80 })).toEqual([
      'Verification: passed: nothing of the moved kinds is left on nfs-1, nfs-2 and',
      '              default',
    ]);
    expect(hangOf('  - a warning: with a colon', 80)).toBe(4);
    expect(hangOf('  (the checkpoint is temporary: keep one)', 80)).toBe(3);
    expect(hangOf('Weights now:    default=0', 80)).toBe(16);
    // A label that ends past half the width: two columns in instead.
    expect(hangOf(`${'x'.repeat(50)}: rest`, 80)).toBe(2);
  });

  it('keeps a command whole, on a line of its own when the rest of the line cannot hold it', () => {
    const cmd = 'shardmove weights restore plans/retire-nfs.yaml --state state/retire-nfs.db';
    const lines = fitLine(`  (to put the "before" values back: ${cmd})`, { width: 80, whole: [cmd] });
    expect(lines).toEqual(['  (to put the "before" values back:', `   ${cmd})`]);
    // Without being told, the same line breaks inside the command.
    expect(fitLine(`  (to put the "before" values back: ${cmd})`, { width: 80 }).some((l) => l.includes(cmd))).toBe(
      false,
    );
  });

  it('keeps a backtick-quoted command whole and a word longer than the width where it stands', () => {
    const text = 'find them with `praefect metadata -virtual-storage <storage> -relative-path <path>`, and remove';
    const lines = fitLine(text, { width: 78, hang: 0 });
    expect(lines).toContain('`praefect metadata -virtual-storage <storage> -relative-path <path>`, and');
    const path = `@hashed/1a/65/${'a'.repeat(64)}.git,`;
    expect(fitLine(`    at ${path} with its .wiki.git beside it`, { width: 80 })).toEqual([
      `    at ${path}`,
      '      with its .wiki.git beside it',
    ]);
  });

  it('returns a line that fits as it is, its spaces kept', () => {
    expect(fitLine('  cluster     360 item(s)', { width: 80 })).toEqual(['  cluster     360 item(s)']);
  });
});
