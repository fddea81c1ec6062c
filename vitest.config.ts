import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Builds dist/ first when it is stale, so the CLI processes the tests start run compiled code.
    globalSetup: ['test/support/global-build.ts'],
    // The property tests' seed: fixed under CI, drawn afresh elsewhere (test/support/property-seed.ts).
    setupFiles: ['test/support/property-seed.ts'],
    pool: 'forks',
    // Two test files at once: most integration tests wait on sandbox processes and real time rather
    // than the CPU, and vitest's default on a 2-core machine runs one file at a time (496 s against
    // 273 s for the whole suite, docs/benchmarks.md). No test depends on how fast it runs.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
