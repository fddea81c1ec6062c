import { describe, expect, it } from 'vitest';
import { createRandom } from '../random.js';
import { MIN_MOVE_MS, moveDuration, pickStorage, splitDuration } from './policy.js';

const STORAGES = ['default', 'nfs-1', 'nfs-2', 'cluster'];

describe('pickStorage', () => {
  it('only picks storages with a positive weight', () => {
    const rand = createRandom(7);
    for (let i = 0; i < 200; i++)
      expect(pickStorage({ default: 0, 'nfs-2': 30, cluster: 70 }, STORAGES, rand)).toMatch(/^(nfs-2|cluster)$/);
  });

  it('follows the weights roughly', () => {
    const rand = createRandom(3);
    const counts: Record<string, number> = {};
    for (let i = 0; i < 10_000; i++) {
      const s = pickStorage({ 'nfs-1': 25, cluster: 75 }, STORAGES, rand);
      counts[s] = (counts[s] ?? 0) + 1;
    }
    expect(counts.cluster! / 10_000).toBeGreaterThan(0.7);
    expect(counts.cluster! / 10_000).toBeLessThan(0.8);
  });

  it('ignores storages that are not configured and falls back to default when all weights are 0', () => {
    const rand = createRandom(1);
    expect(pickStorage({ gone: 100, default: 0 }, STORAGES, rand)).toBe('default');
    expect(pickStorage({}, ['a', 'b'], rand)).toBe('a');
  });

  it('can pick the source storage, as GitLab does', () => {
    expect(pickStorage({ 'nfs-1': 100 }, STORAGES, createRandom(1))).toBe('nfs-1');
  });
});

describe('move timing', () => {
  it('is proportional to size and divided by speed, with a floor', () => {
    expect(moveDuration(40, 1)).toBe(2000);
    expect(moveDuration(40, 4)).toBe(500);
    expect(moveDuration(0.01, 1)).toBe(MIN_MOVE_MS);
    expect(moveDuration(4000, 1, 20)).toBe(20);
  });

  it('splits into copy and cleanup that add up', () => {
    const { copyMs, cleanupMs } = splitDuration(20);
    expect(copyMs + cleanupMs).toBe(20);
    expect(copyMs).toBeGreaterThan(cleanupMs);
  });
});
