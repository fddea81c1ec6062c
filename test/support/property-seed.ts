/**
 * vitest's per-file set-up for the property tests (fast-check): which seed they draw from.
 * - Under CI (CI=true) every property runs from one fixed seed, so a CI run is green or red by the code,
 *   not by the draw.
 * - Elsewhere each test file draws a fresh seed, so the development machine keeps exploring new cases.
 * - SHARDMOVE_PROPERTY_SEED=N replays a seed; fast-check prints the seed of every failure
 *   ("seed: N, path: ..."), and SHARDMOVE_PROPERTY_SEED=random draws one even under CI.
 * A case a random draw found is kept as an explicit example in its test, so the fixed run covers it too.
 */
import fc from 'fast-check';

/** The seed CI runs every property from. */
export const FIXED_PROPERTY_SEED = 20_261_202;

export function propertySeed(env: NodeJS.ProcessEnv = process.env): number {
  const asked = env.SHARDMOVE_PROPERTY_SEED;
  if (asked !== undefined && asked !== '' && asked !== 'random') {
    const n = Number(asked);
    if (!Number.isSafeInteger(n))
      throw new Error(`SHARDMOVE_PROPERTY_SEED must be an integer or "random", not ${asked}`);
    return n;
  }
  if (asked === 'random' || env.CI !== 'true') return (Math.random() * 2 ** 31) | 0;
  return FIXED_PROPERTY_SEED;
}

fc.configureGlobal({ seed: propertySeed() });
