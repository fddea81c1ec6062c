/**
 * The sandbox's one source of reproducible randomness. The seed's generator draws the inventory
 * from it, and the fault injector its request faults and move fates, so that the same seed gives
 * the same instance and the same faults. Its own module, below both, so neither imports the other.
 */

/** A small, fast, seedable PRNG (mulberry32): the same seed gives the same sequence. */
export function createRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
