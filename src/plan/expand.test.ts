import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expandVars } from './expand.js';
import { assertProperty } from '../../test/support/property.js';

describe('expandVars', () => {
  const env = { A: 'alpha', B: '', URL: 'https://x' };

  it('replaces references and keeps other text', () => {
    expect(expandVars('${URL}/api and ${A}', env)).toMatchObject({
      value: 'https://x/api and alpha',
      onlyRefs: false,
      missing: [],
    });
  });

  it('knows a value written only as references', () => {
    expect(expandVars('${A}', env)).toMatchObject({ value: 'alpha', onlyRefs: true });
    expect(expandVars('${A}${B}', env).onlyRefs).toBe(true);
    expect(expandVars('x${A}', env).onlyRefs).toBe(false);
    expect(expandVars('plain', env).onlyRefs).toBe(false);
  });

  it('$${ writes a literal ${ and is not a reference', () => {
    expect(expandVars('$${A} costs $5', env)).toMatchObject({ value: '${A} costs $5', refs: [] });
  });

  it('reports missing variables with where they are, and malformed references', () => {
    const r = expandVars('a ${NOPE} ${A} ${bad-name} ${', env);
    expect(r.missing).toEqual([{ name: 'NOPE', index: 2 }]);
    expect(r.malformed).toEqual([15, 27]);
  });

  it('treats an empty variable as set', () => {
    expect(expandVars('${B}', env)).toMatchObject({ value: '', missing: [] });
  });

  it('text without $ is returned unchanged', () => {
    assertProperty(
      fc.property(
        fc.string().filter((s) => !s.includes('$')),
        (s) => expandVars(s, {}).value === s,
      ),
    );
  });
});
