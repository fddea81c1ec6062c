import { defineConfig } from 'vitest/config';

// Test files that change what the process shares (process.env at module level, fake timers not put
// back, vi.mock): they keep a fresh module graph of their own even among the in-process unit files.
const OWN_MODULES = ['src/runtime/precheck/precheck.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Builds dist/ first when it is stale, so the CLI processes the tests start run compiled code.
    globalSetup: ['test/support/global-build.ts'],
    // The property tests' seed: fixed under CI, drawn afresh elsewhere (test/support/property-seed.ts).
    setupFiles: ['test/support/property-seed.ts'],
    pool: 'forks',
    // Four test files at once on the 2-core development machine: a quarter of the files still wait on
    // processes, Prometheus's scrapes or a browser rather than the CPU, so two workers left the cores
    // idle (whole suite 476-503 s at 2, 370 s at 4, slower again at 6; docs/benchmarks.md). No test
    // depends on how fast it runs, so more contention may only make the suite slower, never red.
    maxWorkers: 4,
    reporters: ['default'],
    projects: [
      {
        // The unit files beside the sources run in-process and put back what they change, so a worker
        // imports src/ once for all the files it runs instead of once per file (isolate: false): on
        // the 157 files, 60 s of CPU against 92 s isolated (docs/benchmarks.md).
        extends: true,
        test: { name: 'unit', include: ['src/**/*.test.ts'], exclude: OWN_MODULES, isolate: false },
      },
      { extends: true, test: { name: 'isolated', include: ['test/**/*.test.ts', ...OWN_MODULES] } },
    ],
  },
});
