/**
 * bin/shardmove in the two layouts it meets, built here as small stand-ins: an installed package
 * (dist/ only) runs the compiled code; a clone runs dist/ only while no source is newer than the
 * build's stamp, and the TypeScript through tsx otherwise, so a stale build never runs. Judged from
 * which main() ran (each stand-in prints its own name). The root has spaces in its name, and the bin is
 * also started through a symlink, as npm's global bin directory starts it.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '..');
const base = mkdtempSync(join(tmpdir(), 'shardmove bin '));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const HOUR_AGO = new Date(Date.now() - 3_600_000);
const NOW = new Date();

type Layout = { src?: boolean; dist?: boolean; tsx?: boolean };
let n = 0;

/** A root with package.json (type module), bin/shardmove, and the parts the layout asks for. */
function makeRoot(layout: Layout): string {
  const root = join(base, `root ${++n}`);
  mkdirSync(join(root, 'bin'), { recursive: true });
  writeFileSync(join(root, 'package.json'), '{ "type": "module" }\n');
  copyFileSync(join(REPO, 'bin', 'shardmove'), join(root, 'bin', 'shardmove'));
  copyFileSync(join(REPO, 'bin', 'build-current.js'), join(root, 'bin', 'build-current.js'));
  if (layout.dist) {
    mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
    writeFileSync(
      join(root, 'dist', 'cli', 'main.js'),
      "export async function main(argv) { process.stdout.write('dist ' + argv.join(' ')); }\n",
    );
    writeFileSync(join(root, 'dist', '.build-stamp'), 'stand-in\n');
  }
  if (layout.src) {
    mkdirSync(join(root, 'src', 'cli'), { recursive: true });
    const typed = 'export async function main(argv: string[]): Promise<void> {\n';
    writeFileSync(join(root, 'src', 'cli', 'main.ts'), `${typed}  process.stdout.write('src ' + argv.join(' '));\n}\n`);
    writeFileSync(join(root, 'src', 'cli', 'main.test.ts'), '// a test: not part of the build\n');
    writeFileSync(join(root, 'tsconfig.json'), '{}\n');
    writeFileSync(join(root, 'tsconfig.build.json'), '{}\n');
    for (const f of ['src/cli/main.ts', 'src/cli/main.test.ts', 'tsconfig.json', 'tsconfig.build.json']) {
      utimesSync(join(root, f), HOUR_AGO, HOUR_AGO);
    }
  }
  if (layout.tsx) symlinkSync(join(REPO, 'node_modules'), join(root, 'node_modules'), 'dir');
  return root;
}

function touch(root: string, file: string, at: Date): void {
  utimesSync(join(root, file), at, at);
}

function start(bin: string, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const { PATH, HOME } = process.env;
    execFile(
      process.execPath,
      [bin, '--flag', 'a b'],
      { cwd, env: { PATH, HOME }, timeout: 20_000 },
      (err, stdout, stderr) => {
        done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

const run = (root: string) => start(join(root, 'bin', 'shardmove'), base);

describe('bin/shardmove', () => {
  it('an installed package (no src/) runs dist/ with plain node, also through a symlinked bin', async () => {
    const root = makeRoot({ dist: true });
    expect(await run(root)).toEqual({ code: 0, stdout: 'dist --flag a b', stderr: '' });
    mkdirSync(join(base, 'global bin'), { recursive: true });
    const link = join(base, 'global bin', 'shardmove');
    symlinkSync(join(root, 'bin', 'shardmove'), link);
    expect((await start(link, tmpdir())).stdout).toBe('dist --flag a b');
  });

  it('a clone whose build is newer than every source runs dist/, whatever the tests say', async () => {
    const root = makeRoot({ src: true, dist: true, tsx: true });
    touch(root, 'src/cli/main.test.ts', NOW);
    expect((await run(root)).stdout).toBe('dist --flag a b');
  });

  it('a clone with a source newer than the build runs the TypeScript, never the stale dist/', async () => {
    const root = makeRoot({ src: true, dist: true, tsx: true });
    touch(root, 'dist/.build-stamp', HOUR_AGO);
    touch(root, 'src/cli/main.ts', NOW);
    expect(await run(root)).toEqual({ code: 0, stdout: 'src --flag a b', stderr: '' });
  });

  it('a changed build configuration also makes dist/ stale', async () => {
    const root = makeRoot({ src: true, dist: true, tsx: true });
    touch(root, 'dist/.build-stamp', HOUR_AGO);
    touch(root, 'tsconfig.build.json', NOW);
    expect((await run(root)).stdout).toBe('src --flag a b');
  });

  it('a clone never built runs the TypeScript; a dist/ without its stamp counts as not built', async () => {
    expect((await run(makeRoot({ src: true, tsx: true }))).stdout).toBe('src --flag a b');
    const unstamped = makeRoot({ src: true, dist: true, tsx: true });
    rmSync(join(unstamped, 'dist', '.build-stamp'));
    expect((await run(unstamped)).stdout).toBe('src --flag a b');
  });

  it('a stale build and no tsx: exit 1 with what to run, nothing started', async () => {
    const root = makeRoot({ src: true, dist: true });
    touch(root, 'dist/.build-stamp', HOUR_AGO);
    touch(root, 'src/cli/main.ts', NOW);
    const r = await run(root);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'shardmove: src/ is newer than dist/ (or dist/ is missing) and tsx is not installed:\n' +
        '  run `npm run build`, or `npm ci`\n',
    );
  });

  it('a package without its compiled code: exit 1 naming the missing file', async () => {
    const root = makeRoot({});
    const r = await run(root);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${join(root, 'dist', 'cli', 'main.js')} is missing; reinstall the package`);
  });
});
