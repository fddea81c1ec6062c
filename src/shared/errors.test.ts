import { describe, expect, it } from 'vitest';
import { ShardmoveError, codeOf, defineErrorCodes, errorCodeEntries } from './errors.js';
import { SANDBOX_CODES } from './sandbox-errors.js';

describe('ShardmoveError and codeOf', () => {
  it('gives an error its code and its own class name', () => {
    class ExampleError extends ShardmoveError<'SHARDMOVE_EXAMPLE'> {}
    const err = new ExampleError('SHARDMOVE_EXAMPLE', 'bad', { cause: 'why' });
    expect([err instanceof Error, err.name, codeOf(err), err.message, err.cause]).toEqual([
      true,
      'ExampleError',
      'SHARDMOVE_EXAMPLE',
      'bad',
      'why',
    ]);
  });

  it("reads a system error's code, and none from what carries none", () => {
    expect(codeOf(Object.assign(new Error('no'), { code: 'ENOENT' }))).toBe('ENOENT');
    expect(codeOf(new Error('plain'))).toBeNull();
    expect(codeOf({ code: 42 })).toBeNull();
    expect(codeOf('text')).toBeNull();
    expect(codeOf(null)).toBeNull();
  });
});

describe('defineErrorCodes', () => {
  it('maps each code to itself and keeps its entries, in order, out of sight of Object.keys', () => {
    const codes = defineErrorCodes('example', {
      SHARDMOVE_EXAMPLE_ONE: 'The first.',
      SHARDMOVE_EXAMPLE_2: 'The second.',
    });
    const one: 'SHARDMOVE_EXAMPLE_ONE' = codes.SHARDMOVE_EXAMPLE_ONE;
    expect(one).toBe('SHARDMOVE_EXAMPLE_ONE');
    expect(Object.keys(codes)).toEqual(['SHARDMOVE_EXAMPLE_ONE', 'SHARDMOVE_EXAMPLE_2']);
    expect(Object.isFrozen(codes)).toBe(true);
    expect(errorCodeEntries(codes)).toEqual([
      { code: 'SHARDMOVE_EXAMPLE_ONE', module: 'example', meaning: 'The first.' },
      { code: 'SHARDMOVE_EXAMPLE_2', module: 'example', meaning: 'The second.' },
    ]);
  });

  it('refuses a code that is not SHARDMOVE_ and capitals, and a meaning that is not one line', () => {
    // @ts-expect-error: a code without the prefix does not type-check either
    expect(() => defineErrorCodes('example', { EXAMPLE: 'Bad.' })).toThrow(/EXAMPLE \(example\)/);
    expect(() => defineErrorCodes('example', { SHARDMOVE_lower: 'Bad.' })).toThrow(/SHARDMOVE_lower/);
    expect(() => defineErrorCodes('example', { SHARDMOVE_X_: 'Bad.' })).toThrow(/SHARDMOVE_X_/);
    expect(() => defineErrorCodes('example', { SHARDMOVE_X: ' ' })).toThrow(/one line/);
    expect(() => defineErrorCodes('example', { SHARDMOVE_X: 'One.\nTwo.' })).toThrow(/one line/);
  });

  it('finds no entries in anything else', () => {
    expect(errorCodeEntries({ SHARDMOVE_X: 'SHARDMOVE_X' })).toBeUndefined();
    expect(errorCodeEntries('SHARDMOVE_X')).toBeUndefined();
    expect(errorCodeEntries(null)).toBeUndefined();
  });

  it("declares the sandbox's codes, which the sandbox throws and the CLI maps", () => {
    expect(errorCodeEntries(SANDBOX_CODES)?.map((e) => [e.module, e.code])).toEqual([
      ['sandbox', 'SHARDMOVE_SEED_INVALID'],
      ['sandbox', 'SHARDMOVE_SANDBOX_FAULTS_INVALID'],
    ]);
  });
});
