// Lint runs as part of `npm test`. typescript-eslint's recommended rules plus the import direction
// rules of docs/architecture.md: the machine stays pure; the sandbox and the orchestrator never
// import each other; both stand on the shared floor (src/shared/), which imports neither.
// test/import-graph.test.ts checks the same walls on the resolved files.
import { readdirSync } from 'node:fs';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The shared floor: both sides may import it, it imports nothing of src/ outside itself. */
const FLOOR = 'shared';
/** Every other folder of src/ is the orchestrator's, read from the tree so that a new folder is walled in too. */
const orchestrator = readdirSync(new URL('./src/', import.meta.url), { withFileTypes: true })
  .filter((e) => e.isDirectory() && e.name !== 'sandbox' && e.name !== FLOOR)
  .map((e) => e.name);

/** Patterns for imports of `dirs` from a file of src/ one or two folders deep. */
const into = (dirs) => dirs.flatMap((d) => [`../${d}/*`, `../../${d}/*`]);

/** Kept in every block: a later block's no-restricted-imports replaces an earlier one's for its files. */
const NODE_TRAVERSAL = { group: ['node:*/../*'], message: 'A node: import names a built-in module, never a path.' };

/** The runtime reaches the actors through their face (actors/index.ts), never a file behind it. */
const FACE_OF_ACTORS = {
  // From runtime/ and from its rooms (runtime/revert/, runtime/lists/, ...).
  group: ['../actors/*', '!../actors/index.js', '../../actors/*', '!../../actors/index.js'],
  message: 'The runtime imports actors/ through actors/index.ts only.',
};

/** What each folder may not import (each folder's patterns are one list: see NODE_TRAVERSAL). */
const walls = Object.fromEntries([
  [
    'sandbox',
    [{ group: into(orchestrator), message: 'The sandbox imports none of the orchestrator (only the shared floor).' }],
  ],
  [FLOOR, [{ group: into(['sandbox', ...orchestrator]), message: 'The shared floor imports nothing above it.' }]],
  ...orchestrator.map((d) => [
    d,
    [
      ...(d === 'cli' ? [] : [{ group: into(['sandbox']), message: 'Only cli/ and tests start the sandbox.' }]),
      ...(d === 'runtime' ? [FACE_OF_ACTORS] : []),
    ],
  ]),
]);

const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns: [NODE_TRAVERSAL, ...patterns] }] });

/**
 * One clock owns every timer (src/shared/clock.ts): code in src/ waits through the injected Clock,
 * so a test on a simulated clock skips the wait. The real timers are started in that file only;
 * code that must wait in real time whatever the clock (a child process's kill timeout) says so by
 * using `systemClock` itself. A turn of the event loop (setImmediate) is not a wait and stays free.
 */
const REAL_TIMER_GLOBALS = ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval'].map((name) => ({
  name,
  message: `Use the injected Clock's ${name} (src/shared/clock.ts), so a simulated clock owns the timer.`,
}));
const REAL_TIMER_MODULES = {
  group: ['node:timers', 'node:timers/*', 'timers', 'timers/*'],
  message: "Use the injected Clock's sleep and timers (src/shared/clock.ts).",
};
const REAL_TIMER_PROPERTIES = [
  { object: 'AbortSignal', property: 'timeout', message: 'A timeout on the injected Clock, or say why it is real.' },
  ...['setTimeout', 'setInterval'].map((property) => ({
    object: 'globalThis',
    property,
    message: "Use the injected Clock's timers (src/shared/clock.ts).",
  })),
];

export default tseslint.config(
  { ignores: ['node_modules/**', 'state/**', 'dist/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      ...restrict([]),
    },
  },
  ...Object.entries(walls).map(([d, patterns]) => ({
    files: [`src/${d}/**/*.ts`],
    rules: restrict([...patterns, REAL_TIMER_MODULES]),
  })),
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.test.ts', 'src/shared/clock.ts'],
    rules: {
      'no-restricted-globals': ['error', ...REAL_TIMER_GLOBALS],
      'no-restricted-properties': ['error', ...REAL_TIMER_PROPERTIES],
    },
  },
  {
    files: ['src/machine/**/*.ts'],
    ignores: ['src/machine/**/*.test.ts'],
    rules: {
      ...restrict([
        ...walls.machine,
        REAL_TIMER_MODULES,
        {
          group: ['node:*', 'undici', 'better-sqlite3', 'pino'],
          message: 'The machine is pure: effects live in actors/ and runtime/.',
        },
        {
          group: into(['runtime', 'actors', 'api', 'store', 'sandbox', 'cli', 'time']),
          // A type is erased: types.ts names the API's access modes it keeps in its context.
          allowTypeImports: true,
          message: 'The machine imports nothing with effects.',
        },
      ]),
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Inject the clock.' },
        ...REAL_TIMER_PROPERTIES,
      ],
    },
  },
);
