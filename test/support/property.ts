/**
 * The one way the tests run a property (fast-check): `assertProperty(property, params)` in place of
 * `fc.assert` (test/property-calls.test.ts fails on a direct call).
 *
 * Every property runs from the fixed seeds below, then from one random seed drawn per test file:
 * - A failure under a fixed seed fails the test, always, with the seed and the command that replays it.
 * - The random seed is printed every run (`property seeds: ... random N`), once per test file.
 * - A failure under the random seed fails the test outside CI. Under CI=true it does not: CI is green
 *   or red by the code, not by the draw. It is reported instead, on stderr and appended to
 *   {@link PROPERTY_FAILURES_FILE}, with the seed, the counterexample and the replay command.
 * - SHARDMOVE_PROPERTY_SEED=N runs every property of the run from seed N only (all its runs), and a
 *   failure fails; SHARDMOVE_PROPERTY_SEED=random does the same from a freshly drawn seed.
 * The property's `numRuns` (fast-check's 100 when not given) is split evenly across the four seeds, so a
 * property costs about what one fc.assert cost. A case a random draw found is kept as an explicit
 * example in its test (or as a plain test), so the fixed runs cover it too.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import fc from 'fast-check';
import { expect } from 'vitest';

/** The seeds every property runs from, whatever the draw. */
export const FIXED_PROPERTY_SEEDS: readonly number[] = [20_261_202, 852_593_084, 41_410_007];

/** Where a random seed's failure under CI is appended (the checkout's vitest cache). */
export const PROPERTY_FAILURES_FILE = join('node_modules', '.vite', 'vitest', 'property-failures.log');

/** fast-check's parameters less what the seeds decide. */
export type PropertyParams<Ts> = Omit<fc.Parameters<Ts>, 'seed' | 'path' | 'reporter' | 'asyncReporter'>;

/** One fc.check of a property: from which seed, for how many runs, and what its failure means. */
export interface SeedRun {
  /** fixed: fails the test; random: fails outside CI, reported under it; replay: SHARDMOVE_PROPERTY_SEED, fails. */
  kind: 'fixed' | 'random' | 'replay';
  seed: number;
  numRuns: number;
}

/** What a property run reads and writes besides the property: injected so the helper can be tested. */
export interface PropertyContext {
  env: NodeJS.ProcessEnv;
  /** This test file's random seed. */
  randomSeed: number;
  /** The test file, as the replay command names it. */
  file: string;
  /** The test's name, for the report of a failure. */
  test: string;
  /** Prints which seeds run (assertProperty prints it once per test file). */
  log: (line: string) => void;
  /** Reports a random seed's failure that does not fail the test. */
  warn: (text: string) => void;
  /** The file such a failure is appended to. */
  failuresFile: string;
}

/** A seed for fast-check: a 32-bit signed integer. */
export function drawSeed(): number {
  return (Math.random() * 2 ** 32 - 2 ** 31) | 0;
}

/** SHARDMOVE_PROPERTY_SEED read: a seed, `random`, or undefined when unset. */
export function requestedSeed(env: NodeJS.ProcessEnv): number | 'random' | undefined {
  const asked = env.SHARDMOVE_PROPERTY_SEED;
  if (asked === undefined || asked === '') return undefined;
  if (asked === 'random') return 'random';
  const n = Number(asked);
  if (!/^-?\d+$/.test(asked) || !Number.isSafeInteger(n))
    throw new Error(`SHARDMOVE_PROPERTY_SEED must be an integer or "random", not ${asked}`);
  return n;
}

/**
 * The runs of one property of `numRuns` runs: the fixed seeds and the random one with a quarter each
 * (at least one), or the requested seed alone with all of them.
 */
export function seedRuns(numRuns: number, env: NodeJS.ProcessEnv, randomSeed: number): SeedRun[] {
  const asked = requestedSeed(env);
  if (asked !== undefined) return [{ kind: 'replay', seed: asked === 'random' ? randomSeed : asked, numRuns }];
  const share = Math.max(1, Math.ceil(numRuns / (FIXED_PROPERTY_SEEDS.length + 1)));
  return [
    ...FIXED_PROPERTY_SEEDS.map((seed) => ({ kind: 'fixed' as const, seed, numRuns: share })),
    { kind: 'random', seed: randomSeed, numRuns: share },
  ];
}

export function replayCommand(seed: number, file: string): string {
  return `SHARDMOVE_PROPERTY_SEED=${seed} npx vitest run ${file}`;
}

/** The line that says which seeds a test file's properties run from. */
export function seedsLine(ctx: Pick<PropertyContext, 'env' | 'randomSeed' | 'file'>): string {
  const asked = requestedSeed(ctx.env);
  if (asked !== undefined) {
    const seed = asked === 'random' ? ctx.randomSeed : asked;
    return `property seeds: SHARDMOVE_PROPERTY_SEED ${seed} only, ${ctx.file}`;
  }
  return (
    `property seeds: fixed ${FIXED_PROPERTY_SEEDS.join(', ')} + random ${ctx.randomSeed}, ${ctx.file}` +
    ` (replay: ${replayCommand(ctx.randomSeed, ctx.file)})`
  );
}

/**
 * Runs a property from each seed in turn (see the module's comment). Sync for a sync property, a
 * promise for an async one, as fc.assert.
 */
export function runProperty<Ts>(
  property: fc.IRawProperty<Ts>,
  params: PropertyParams<Ts>,
  ctx: PropertyContext,
): Promise<void> | void {
  const total = params.numRuns ?? fc.readConfigureGlobal().numRuns ?? 100;
  const runs = seedRuns(total, ctx.env, ctx.randomSeed);
  ctx.log(seedsLine(ctx));
  // The examples run once, with the first seed: from every seed they would run four times.
  const paramsOf = (run: SeedRun, i: number): fc.Parameters<Ts> => ({
    ...params,
    seed: run.seed,
    numRuns: run.numRuns,
    examples: i === 0 ? params.examples : [],
  });
  if (property.isAsync()) {
    return (async () => {
      for (const [i, run] of runs.entries()) settle(run, await fc.check(property, paramsOf(run, i)), ctx);
    })();
  }
  for (const [i, run] of runs.entries()) settle(run, fc.check(property, paramsOf(run, i)) as fc.RunDetails<Ts>, ctx);
}

/** Throws a failure that fails the test; reports one that does not. */
function settle<Ts>(run: SeedRun, details: fc.RunDetails<Ts>, ctx: PropertyContext): void {
  if (!details.failed) return;
  const underCi = ctx.env.CI === 'true';
  const which =
    run.kind === 'fixed'
      ? `fixed seed ${run.seed}`
      : run.kind === 'random'
        ? `random seed ${run.seed}`
        : `seed ${run.seed} (SHARDMOVE_PROPERTY_SEED)`;
  const report =
    `property failed under ${which}: ${ctx.test}\n` +
    `replay: ${replayCommand(run.seed, ctx.file)}\n` +
    (fc.defaultReportMessage(details) ?? '');
  if (run.kind !== 'random' || !underCi) throw new Error(report, { cause: details.errorInstance });
  // A thrown error carries the property's error as its cause; the report spells it out instead.
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : details.errorInstance;
  const text =
    `${report}\n` +
    (error === null || error === undefined ? '' : `Error: ${String(error)}\n`) +
    `The fixed seeds passed, so under CI=true the test passes: keep this case as an example in the test.`;
  ctx.warn(text);
  mkdirSync(dirname(ctx.failuresFile), { recursive: true });
  appendFileSync(ctx.failuresFile, `${new Date().toISOString()} ${ctx.file}\n${text}\n\n`);
}

/** This test file's random seed: drawn as the file imports this module (vitest loads it afresh per file). */
const fileRandomSeed = drawSeed();
let seedsPrinted = false;

/**
 * fc.assert for the tests: the property from the fixed seeds, then from this file's random seed (see
 * the module's comment).
 */
export function assertProperty<Ts>(property: fc.IAsyncProperty<Ts>, params?: PropertyParams<Ts>): Promise<void>;
export function assertProperty<Ts>(property: fc.IProperty<Ts>, params?: PropertyParams<Ts>): void;
export function assertProperty<Ts>(
  property: fc.IRawProperty<Ts>,
  params: PropertyParams<Ts> = {},
): Promise<void> | void {
  const state = expect.getState();
  return runProperty(property, params, {
    env: process.env,
    randomSeed: fileRandomSeed,
    file: relative(process.cwd(), state.testPath ?? 'unknown test file'),
    test: state.currentTestName ?? 'unknown test',
    log: (line) => {
      if (seedsPrinted) return;
      seedsPrinted = true;
      console.log(line);
    },
    warn: (text) => console.error(text),
    failuresFile: PROPERTY_FAILURES_FILE,
  });
}
