import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Builds dist/ first when it is stale, so the CLI processes the tests start run compiled code.
    globalSetup: ['test/support/global-build.ts'],
    pool: 'forks',
    // Four test files at once on the 2-core development machine: a quarter of the files still wait on
    // processes, Prometheus's scrapes or a browser rather than the CPU, so two workers left the cores
    // idle (whole suite 476-503 s at 2, 370 s at 4, slower again at 6; docs/benchmarks.md). No test
    // depends on how fast it runs, so more contention may only make the suite slower, never red.
    maxWorkers: 4,
    reporters: ['default'],
  },
});
