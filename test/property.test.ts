/** The property tests' helper (test/support/property.ts): fixed seeds, one reported random seed, replays. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  FIXED_PROPERTY_SEEDS,
  requestedSeed,
  runProperty,
  seedRuns,
  type PropertyContext,
} from './support/property.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A context that records what it prints, with a failures file of its own. */
function context(env: NodeJS.ProcessEnv, randomSeed = 123_456_789) {
  const dir = mkdtempSync(join(tmpdir(), 'property-'));
  dirs.push(dir);
  const logged: string[] = [];
  const warned: string[] = [];
  const ctx: PropertyContext = {
    env,
    randomSeed,
    file: 'src/example.test.ts',
    test: 'example > a property',
    log: (line) => logged.push(line),
    warn: (text) => warned.push(text),
    failuresFile: join(dir, 'cache', 'property-failures.log'),
  };
  const failures = () => {
    try {
      return readFileSync(ctx.failuresFile, 'utf8');
    } catch {
      return '';
    }
  };
  return { ctx, logged, warned, failures };
}

/** The first integer fc.integer() draws from a seed: a property refusing it fails from that seed only. */
const firstDraw = (seed: number) => fc.sample(fc.integer(), { seed, numRuns: 1 })[0];

const RANDOM = 987_654_321;

/** A property that fails from `seed` (one run per seed) and passes from the other seeds here. */
function failsOnlyFrom(seed: number) {
  const bad = firstDraw(seed);
  for (const other of [...FIXED_PROPERTY_SEEDS, RANDOM])
    if (other !== seed) expect(firstDraw(other), `the first draw of ${other}`).not.toBe(bad);
  // An expect that fails inside the property, as the property tests write them: the failure is the
  // helper's to judge, not vitest's.
  return fc.property(fc.integer(), (n) => {
    expect(n).not.toBe(bad);
  });
}

describe('a property run from the fixed seeds and one random seed', () => {
  it('fails the test when a fixed seed fails, under CI too, naming the seed and the replay command', () => {
    for (const env of [{ CI: 'true' }, {}]) {
      const { ctx, warned, failures } = context(env, RANDOM);
      const fixed = FIXED_PROPERTY_SEEDS[1]!;
      expect(() => runProperty(failsOnlyFrom(fixed), { numRuns: 4 }, ctx)).toThrow(
        `property failed under fixed seed ${fixed}: example > a property\n` +
          `replay: SHARDMOVE_PROPERTY_SEED=${fixed} npx vitest run src/example.test.ts\n` +
          `Property failed after 1 tests\n{ seed: ${fixed}`,
      );
      expect(warned).toEqual([]);
      expect(failures()).toBe('');
    }
  });

  it('under CI passes when only the random seed fails, and reports it on stderr and in the failures file', () => {
    const { ctx, warned, failures } = context({ CI: 'true' }, RANDOM);
    const bad = firstDraw(RANDOM);
    expect(() => runProperty(failsOnlyFrom(RANDOM), { numRuns: 4 }, ctx)).not.toThrow();
    expect(warned).toHaveLength(1);
    const report = warned[0]!;
    expect(report).toContain(`property failed under random seed ${RANDOM}: example > a property`);
    expect(report).toContain(`replay: SHARDMOVE_PROPERTY_SEED=${RANDOM} npx vitest run src/example.test.ts`);
    expect(report).toContain(`Counterexample: [${bad}]`);
    expect(report).toContain(`Error: expected ${bad} not to be ${bad}`);
    expect(report).toContain('under CI=true the test passes');
    // Appended, with when and where: a second failure adds to the first.
    runProperty(failsOnlyFrom(RANDOM), { numRuns: 4 }, ctx);
    const file = failures();
    expect(file.split(`Counterexample: [${bad}]`)).toHaveLength(3);
    expect(file).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z src\/example\.test\.ts\nproperty failed under random seed/);
  });

  it('outside CI fails the test when the random seed fails', () => {
    const { ctx, warned, failures } = context({}, RANDOM);
    expect(() => runProperty(failsOnlyFrom(RANDOM), { numRuns: 4 }, ctx)).toThrow(
      `property failed under random seed ${RANDOM}: example > a property\n` +
        `replay: SHARDMOVE_PROPERTY_SEED=${RANDOM} npx vitest run src/example.test.ts`,
    );
    expect(warned).toEqual([]);
    expect(failures()).toBe('');
  });

  it('prints the seeds it runs from, the random one with its replay command', () => {
    const { ctx, logged } = context({ CI: 'true' }, RANDOM);
    runProperty(
      fc.property(fc.integer(), () => true),
      { numRuns: 8 },
      ctx,
    );
    expect(logged).toEqual([
      `property seeds: fixed ${FIXED_PROPERTY_SEEDS.join(', ')} + random ${RANDOM}, src/example.test.ts` +
        ` (replay: SHARDMOVE_PROPERTY_SEED=${RANDOM} npx vitest run src/example.test.ts)`,
    ]);
  });

  it('runs about the runs asked for, split across the seeds, the examples once', () => {
    const { ctx } = context({}, RANDOM);
    const seen: number[] = [];
    runProperty(
      fc.property(fc.integer(), (n) => void seen.push(n)),
      { numRuns: 100, examples: [[42]] },
      ctx,
    );
    expect(seen).toHaveLength(100);
    expect(seen.filter((n) => n === 42)).toHaveLength(1);
    // Each seed's share is what fast-check draws from that seed: the runs replay from the seeds alone.
    const seeds = [...FIXED_PROPERTY_SEEDS, RANDOM];
    const expected = seeds.flatMap((seed, i) =>
      i === 0
        ? [42, ...fc.sample(fc.integer(), { seed, numRuns: 24 })]
        : fc.sample(fc.integer(), { seed, numRuns: 25 }),
    );
    expect(seen).toEqual(expected);
  });

  it('runs an async property and fails on a fixed seed as a sync one', async () => {
    const { ctx } = context({ CI: 'true' }, RANDOM);
    const fixed = FIXED_PROPERTY_SEEDS[0]!;
    const bad = firstDraw(fixed);
    await expect(
      runProperty(
        fc.asyncProperty(fc.integer(), async (n) => n !== bad),
        { numRuns: 4 },
        ctx,
      ),
    ).rejects.toThrow(`property failed under fixed seed ${fixed}`);
    const calm = context({ CI: 'true' }, RANDOM);
    await expect(
      runProperty(
        fc.asyncProperty(fc.integer(), async (n) => n !== firstDraw(RANDOM)),
        { numRuns: 4 },
        calm.ctx,
      ),
    ).resolves.toBeUndefined();
    expect(calm.warned).toHaveLength(1);
  });
});

describe('SHARDMOVE_PROPERTY_SEED', () => {
  it('replays one seed only, with all the runs, and its failure fails under CI too', () => {
    expect(seedRuns(100, { CI: 'true', SHARDMOVE_PROPERTY_SEED: '852593084' }, RANDOM)).toEqual([
      { kind: 'replay', seed: 852593084, numRuns: 100 },
    ]);
    const { ctx, logged } = context({ CI: 'true', SHARDMOVE_PROPERTY_SEED: String(RANDOM) });
    expect(() => runProperty(failsOnlyFrom(RANDOM), { numRuns: 4 }, ctx)).toThrow(
      `property failed under seed ${RANDOM} (SHARDMOVE_PROPERTY_SEED): example > a property\n` +
        `replay: SHARDMOVE_PROPERTY_SEED=${RANDOM} npx vitest run src/example.test.ts`,
    );
    expect(logged).toEqual([`property seeds: SHARDMOVE_PROPERTY_SEED ${RANDOM} only, src/example.test.ts`]);
  });

  it('reads negative seeds, and random as the drawn seed alone', () => {
    expect(requestedSeed({ SHARDMOVE_PROPERTY_SEED: '-17' })).toBe(-17);
    expect(requestedSeed({})).toBeUndefined();
    expect(seedRuns(40, { CI: 'true', SHARDMOVE_PROPERTY_SEED: 'random' }, RANDOM)).toEqual([
      { kind: 'replay', seed: RANDOM, numRuns: 40 },
    ]);
  });

  it('refuses a seed that is not an integer, naming the variable', () => {
    for (const bad of ['12abc', '1.5', '1e3', '99999999999999999999'])
      expect(() => requestedSeed({ SHARDMOVE_PROPERTY_SEED: bad })).toThrow(
        `SHARDMOVE_PROPERTY_SEED must be an integer or "random", not ${bad}`,
      );
  });
});

describe('the seeds without a request', () => {
  it('are the fixed seeds and the random one, a quarter of the runs each, at least one', () => {
    expect(seedRuns(60, {}, RANDOM)).toEqual([
      ...FIXED_PROPERTY_SEEDS.map((seed) => ({ kind: 'fixed', seed, numRuns: 15 })),
      { kind: 'random', seed: RANDOM, numRuns: 15 },
    ]);
    expect(seedRuns(1, { CI: 'true' }, RANDOM).map((r) => r.numRuns)).toEqual([1, 1, 1, 1]);
  });
});
