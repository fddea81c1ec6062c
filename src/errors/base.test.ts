import { describe, expect, it } from 'vitest';
import { ApiTimeoutError } from '../api/errors.js';
import { ArgsError } from '../cli/errors.js';
import { LockedError } from '../store/errors.js';
import { codeOf, ShardmoveError } from './base.js';

describe('ShardmoveError and codeOf', () => {
  it('gives every error its code and its own class name', () => {
    const errors = [
      new ArgsError('bad'),
      new LockedError('x.db', { pid: 1, host: 'h', startedAt: 0 }),
      new ApiTimeoutError({ method: 'GET', path: '/x' }, 'headers'),
    ];
    expect(errors.map((e) => [e instanceof ShardmoveError, e.name, codeOf(e)])).toEqual([
      [true, 'ArgsError', 'SHARDMOVE_ARGS_INVALID'],
      [true, 'LockedError', 'SHARDMOVE_LOCKED'],
      [true, 'ApiTimeoutError', 'SHARDMOVE_API_TIMEOUT'],
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
