/**
 * The errors of every module, seen together: each carries its code and its own class name.
 */
import { describe, expect, it } from 'vitest';
import { ApiTimeoutError } from '../src/api/errors.js';
import { ArgsError } from '../src/cli/errors.js';
import { FaultOptionsError } from '../src/sandbox/faults.js';
import { SeedError } from '../src/sandbox/seed.js';
import { ShardmoveError, codeOf } from '../src/shared/errors.js';
import { LockedError } from '../src/store/errors.js';

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

  it("gives the sandbox's errors their codes and names the same way", () => {
    const errors = [new SeedError(['seed.yaml:1:1: bad']), new FaultOptionsError('bad rate')];
    expect(errors.map((e) => [e instanceof ShardmoveError, e.name, codeOf(e), e.message])).toEqual([
      [true, 'SeedError', 'SHARDMOVE_SEED_INVALID', 'invalid seed:\n  seed.yaml:1:1: bad'],
      [true, 'FaultOptionsError', 'SHARDMOVE_SANDBOX_FAULTS_INVALID', 'bad rate'],
    ]);
  });
});
