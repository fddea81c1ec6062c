/**
 * The errors of every module, seen together: each carries its code and its own class name; every
 * code is declared the one way (a `defineErrorCodes` table in an errors.ts) and appears in
 * docs/errors.md, which is what `npm run docs` generates; README's exit codes are the catalogue's.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS_PAGE, SRC, errorFiles, readErrorCatalogue, renderErrorsPage } from '../scripts/error-docs.js';
import { ApiTimeoutError } from '../src/api/errors.js';
import { ArgsError } from '../src/cli/errors.js';
import { EXIT_BY_CODE, EXIT_MEANINGS } from '../src/cli/exit-codes.js';
import { FaultOptionsError } from '../src/sandbox/faults.js';
import { SeedError } from '../src/sandbox/seed.js';
import { hookVariableNames } from '../src/notify/hook-variables.js';
import { TWIN_TOKEN_VAR, TWIN_URL_VAR } from '../src/twin/rehearsal-plan.js';
import { OUTAGE_RETRY_ENV } from '../src/runtime/holds/outage-hold.js';
import { ShardmoveError, codeOf } from '../src/shared/errors.js';
import { LockedError } from '../src/store/errors.js';

const ROOT = join(import.meta.dirname, '..');

/**
 * Names of the code's form that are no error codes: the environment variables the examples pass
 * the instance's URL and token in, the constant holding shardmove's version, the variable that tells
 * the checkpoint's check in a worker thread where tsx is, the variables a twin's rehearsal plan reads
 * the twin from, and the variables a `notify:` command is given.
 */
const NOT_CODES = new Set([
  'SHARDMOVE_URL',
  'SHARDMOVE_TOKEN',
  'SHARDMOVE_VERSION',
  'SHARDMOVE_TSX_API',
  // The seed the property tests replay (test/support/property.ts).
  'SHARDMOVE_PROPERTY_SEED',
  OUTAGE_RETRY_ENV,
  TWIN_URL_VAR,
  TWIN_TOKEN_VAR,
  ...hookVariableNames(),
]);
const NAME = /\bSHARDMOVE_[A-Z0-9]+(?:_[A-Z0-9]+)*\b/g;

/** Every name of the code's form in `files`, with where it is, that is neither declared nor in NOT_CODES. */
function undeclared(files: string[], declared: Set<string>): string[] {
  return files.flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(NAME)]
      .map((m) => m[0])
      .filter((name) => !declared.has(name) && !NOT_CODES.has(name))
      .map((name) => `${relative(ROOT, file)}: ${name}`),
  );
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|js)$/.test(e.name) && !/\.test\.ts$/.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

describe('ShardmoveError and codeOf', () => {
  it('gives every error its code and its own class name', () => {
    const errors = [
      new ArgsError('bad'),
      new LockedError('x.db', { pid: 1, host: 'h', startedAt: 0 }),
      new ApiTimeoutError({ method: 'GET', path: '/x' }, 'headers'),
    ];
    expect(errors.map((e) => [e instanceof ShardmoveError, e.name, codeOf(e)])).toEqual([
      [true, 'ArgsError', 'SHARDMOVE_ARGS_INVALID'],
      [true, 'LockedError', 'SHARDMOVE_LOCKED'],
      [true, 'ApiTimeoutError', 'SHARDMOVE_API_TIMEOUT'],
    ]);
  });

  it("gives the sandbox's errors their codes and names the same way", () => {
    const errors = [new SeedError(['seed.yaml:1:1: bad']), new FaultOptionsError('bad rate')];
    expect(errors.map((e) => [e instanceof ShardmoveError, e.name, codeOf(e), e.message])).toEqual([
      [true, 'SeedError', 'SHARDMOVE_SEED_INVALID', 'invalid seed:\n  seed.yaml:1:1: bad'],
      [true, 'FaultOptionsError', 'SHARDMOVE_SANDBOX_FAULTS_INVALID', 'bad rate'],
    ]);
  });
});

describe('the catalogue of error codes', async () => {
  const entries = await readErrorCatalogue();
  const declared = new Set(entries.map((e) => e.code));

  it('is docs/errors.md as checked in (run `npm run docs` after declaring or changing a code)', () => {
    const page = readFileSync(ERRORS_PAGE, 'utf8');
    expect(page === renderErrorsPage(entries), 'docs/errors.md is stale: run `npm run docs` and commit it').toBe(true);
  });

  it("is found in every module's errors.ts, the sandbox's on the shared floor included", () => {
    expect(errorFiles().map((f) => relative(SRC, f))).toEqual(
      expect.arrayContaining(['api/errors.ts', 'plan/errors.ts', 'shared/sandbox-errors.ts', 'time/errors.ts']),
    );
    expect([...new Set(entries.map((e) => e.module))].sort()).toEqual(
      expect.arrayContaining(['actors', 'api', 'cli', 'copy', 'machine', 'plan', 'runtime', 'sandbox', 'store']),
    );
    expect(entries.length).toBeGreaterThanOrEqual(50);
  });

  it('names every code that src/ uses, and nothing else: a code is declared in a table before it is used', () => {
    expect(undeclared(sourceFiles(join(ROOT, 'src')), declared)).toEqual([]);
  });

  it('names every code that README and docs/ mention', () => {
    const docs = readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join(ROOT, 'docs', f));
    expect(undeclared([join(ROOT, 'README.md'), ...docs], declared)).toEqual([]);
  });

  it('maps only declared codes to exit codes', () => {
    expect(Object.keys(EXIT_BY_CODE).filter((code) => !declared.has(code))).toEqual([]);
  });

  it('refuses a code declared twice', async () => {
    const file = join(SRC, 'plan/errors.ts');
    await expect(readErrorCatalogue([file, file])).rejects.toThrow(
      'SHARDMOVE_PLAN_INVALID is declared twice: in plan/errors.ts and in plan/errors.ts',
    );
  });
});

describe("README's exit codes", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(
    readme.indexOf('\n## Exit codes\n'),
    readme.indexOf('\n## ', readme.indexOf('\n## Exit codes\n') + 1),
  );

  it('are the exit codes of the catalogue, in its order', () => {
    const rows = [...section.matchAll(/^\| (\d+) \|/gm)].map((m) => Number(m[1]));
    expect(rows).toEqual(
      Object.keys(EXIT_MEANINGS)
        .map(Number)
        .sort((a, b) => a - b),
    );
  });

  it('link to the catalogue for the error codes', () => {
    expect(section).toContain('[docs/errors.md](docs/errors.md)');
  });
});
