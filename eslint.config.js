// Lint runs as part of `npm test`. typescript-eslint's recommended rules plus the import direction
// rules from STYLE.md: the machine stays pure and the sandbox and orchestrator never import each other.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const orchestrator = [
  'cli',
  'runtime',
  'machine',
  'actors',
  'api',
  'store',
  'plan',
  'report',
  'metrics',
  'schedule',
  'copy',
  'time',
  'twin',
  'secrets',
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
      'no-restricted-imports': ['error', { patterns: ['node:*/../*'] }],
    },
  },
  {
    files: ['src/machine/**/*.ts'],
    ignores: ['src/machine/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['node:*', 'undici', 'better-sqlite3', 'pino'],
              message: 'The machine is pure: effects live in actors/ and runtime/.',
            },
            {
              group: ['../runtime/*', '../actors/*', '../api/*', '../store/*', '../sandbox/*', '../cli/*', '../time/*'],
              message: 'The machine imports nothing with effects.',
            },
          ],
        },
      ],
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'Inject the clock.' }],
    },
  },
  {
    files: ['src/sandbox/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: orchestrator.map((d) => ({
            group: [`../${d}/*`, `../../${d}/*`],
            message: 'The sandbox imports none of the orchestrator.',
          })),
        },
      ],
    },
  },
  {
    files: orchestrator.filter((d) => d !== 'cli').map((d) => `src/${d}/**/*.ts`),
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [{ group: ['../sandbox/*', '../../sandbox/*'], message: 'Only cli/ and tests start the sandbox.' }],
        },
      ],
    },
  },
);
