/** The property tests' seed (test/support/property-seed.ts): fixed under CI, replayable, drawn elsewhere. */
import { describe, expect, it } from 'vitest';
import { FIXED_PROPERTY_SEED, propertySeed } from './support/property-seed.js';

describe('the property tests seed', () => {
  it('is the fixed seed under CI', () => {
    expect(propertySeed({ CI: 'true' })).toBe(FIXED_PROPERTY_SEED);
  });

  it('replays a seed given by SHARDMOVE_PROPERTY_SEED, under CI or not, negative seeds too', () => {
    expect(propertySeed({ CI: 'true', SHARDMOVE_PROPERTY_SEED: '852593084' })).toBe(852593084);
    expect(propertySeed({ SHARDMOVE_PROPERTY_SEED: '-17' })).toBe(-17);
  });

  it('draws an integer seed outside CI and when asked for random', () => {
    for (const env of [{}, { CI: 'true', SHARDMOVE_PROPERTY_SEED: 'random' }]) {
      const drawn = new Set(Array.from({ length: 20 }, () => propertySeed(env)));
      expect([...drawn].every(Number.isSafeInteger)).toBe(true);
      expect(drawn.size).toBeGreaterThan(1);
    }
  });

  it('refuses a seed that is not an integer, naming the variable', () => {
    expect(() => propertySeed({ SHARDMOVE_PROPERTY_SEED: '12abc' })).toThrow(
      /SHARDMOVE_PROPERTY_SEED must be an integer/,
    );
  });
});
