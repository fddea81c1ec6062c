import { describe, expect, it } from 'vitest';
import { replicatesPoolsOnMove } from './pools.js';

describe('replicatesPoolsOnMove', () => {
  it('follows replicate_object_pool_on_move: absent before 16.3, default off to 16.5, default on in 16.6, gone from 16.7', () => {
    const table: [string, boolean | undefined, boolean][] = [
      ['15.11.0', undefined, false],
      ['16.2.5', true, false],
      ['16.3.0', undefined, false],
      ['16.3.0', true, true],
      ['16.5.9', undefined, false],
      ['16.5.1', true, true],
      ['16.6.0', undefined, true],
      ['16.6.2', false, false],
      ['16.7.0', false, true],
      ['17.11.0', undefined, true],
      ['18.0', false, true],
    ];
    for (const [version, flag, expected] of table)
      expect([version, flag, replicatesPoolsOnMove(version, flag)]).toEqual([version, flag, expected]);
  });
});
