import { defineConfig } from 'vitest/config';

// The files in test/ that run the command line and the sandbox in this process (sim-harness) or test
// pure code and touch no process-wide state (process.env, process.on, fake timers, vi.mock): they
// share a module graph with the unit files (a CLI process some of them also start shares nothing).
// Left out although it looks alike: cli-revert-instance (it closes a sandbox and opens another on
// the same port, and a keep-alive socket of the shared fetch pool met the closed one).
const SHARED_TEST = [
  'api-client',
  'api-kind-access',
  'authz-matrix',
  'cli-capacity',
  'cli-destinations',
  'cli-fork-networks',
  'cli-left-behind',
  'cli-only-counts',
  'cli-only-stays',
  'cli-only',
  'cli-plan-change',
  'cli-rate-limits',
  'cli-releases',
  'cli-retry-quarantined',
  'cli-revert-forks',
  'cli-revert-older',
  'cli-revert-only',
  'cli-revert-weights',
  'cli-revert',
  'cli-room-wikis',
  'cli-run-auto',
  'cli-run-gitlab-quirks',
  'cli-run-hidden-old-release',
  'cli-run-instance-fidelity',
  'cli-run-kind',
  'cli-run-old-releases',
  'cli-run-schedule',
  'cli-run-throttle',
  'cli-run-upgraded-release',
  'cli-select-current',
  'cli-select-former-path',
  'cli-select-names',
  'cli-select',
  'cli-status-failures',
  'cli-terminal-escapes',
  'cli-verify-content',
  'docs-links',
  'docs-paths',
  'error-catalogue',
  'failure-classes',
  'fake-clock',
  'fork-networks',
  'function-length',
  'import-graph',
  'metrics-file',
  'notify-exec',
  'notify-plan',
  'notify-webhook',
  'notify-worker',
  'old-event-names',
  'package-files',
  'run-events',
  'sandbox-auth',
  'sandbox-bad-input-inventory',
  'sandbox-bulk-queue',
  'sandbox-faults',
  'sandbox-fuzz-lifecycle',
  'sandbox-fuzz',
  'sandbox-geo-nodes',
  'sandbox-geo-unreachable',
  'sandbox-group-storage-filter',
  'sandbox-inventory',
  'sandbox-moves',
  'sandbox-project-statistics',
  'sandbox-project-storage',
  'sandbox-rate-limits',
  'sandbox-settings-health-geo',
  'sandbox-smoke',
  'sandbox-snippet-lists',
  'sandbox-snippet-visibility',
  'sandbox-snippet-web-url',
  'sandbox-tokens',
  'sandbox-url-file',
  'sandbox-writes',
  'status-watch-frame',
  'timer-guard',
].map((name) => `test/${name}.test.ts`);

// Test files that change what the process shares (process.env at module level, fake timers not put
// back, vi.mock): they keep a fresh module graph of their own even among the in-process unit files.
const OWN_MODULES = ['src/runtime/precheck/precheck.test.ts'];

export default defineConfig({
  test: {
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
    projects: [
      {
        // The unit files beside the sources run in-process and put back what they change, so a worker
        // imports src/ once for all the files it runs instead of once per file (isolate: false): on
        // the 157 files, 60 s of CPU against 92 s isolated (docs/benchmarks.md).
        extends: true,
        test: { name: 'unit', include: ['src/**/*.test.ts', ...SHARED_TEST], exclude: OWN_MODULES, isolate: false },
      },
      {
        extends: true,
        test: { name: 'isolated', include: ['test/**/*.test.ts', ...OWN_MODULES], exclude: SHARED_TEST },
      },
    ],
  },
});
