// Regression tests from a hostile probe of `shardmove copy --wipe-target` (tar): what it empties
// when the target is a symlink, and which directories it refuses to empty at all. Refusals are
// checked with --dry-run where a regression would otherwise empty a real system directory.
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './support/cli-harness.js';
import type { Storage } from './support/git-storage.js';
import { createStorage, fakeSshDir, git, tempDir, treeDigest } from './support/git-storage.js';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

let base: string;
let storage: Storage;
let ssh: ReturnType<typeof fakeSshDir>;

beforeAll(() => {
  base = tempDir('shardmove-copy-wipe-');
  storage = createStorage(base);
  ssh = fakeSshDir(join(base, 'ssh'));
});

function cli(args: string[], env: Record<string, string> = {}): Result {
  const PATH = `${ssh.bin}:${process.env['PATH']}`;
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: base, env: { ...process.env, PATH, ...env }, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function writePlan(name: string, target: string, host?: string): string {
  const file = join(base, `${name}.yaml`);
  writeFileSync(file, `version: 1\nname: ${name}\ncopy:\n  method: tar\n  source: { path: ${storage.root} }\n  target: { path: ${JSON.stringify(target)}${host ? `, host: ${host}` : ''} }\n`);
  return file;
}

/** A directory holding what an interrupted tar leaves: a stale repository and a stray file. */
function staleTarget(dir: string): string {
  git(['init', '-q', '--bare', join(dir, 'old.git')]);
  writeFileSync(join(dir, 'leftover.txt'), 'stale\n');
  return dir;
}

describe('--wipe-target on a symlinked target empties the directory it points at', () => {
  it.each([
    ['local', undefined],
    ['over ssh', 'git@gitaly-here'],
  ])('%s: the dry run and the real run agree, and nothing stale is left', (_, host) => {
    const name = host ? 'wipe-link-ssh' : 'wipe-link';
    const real = staleTarget(join(base, `${name}-real`));
    const link = join(base, name);
    symlinkSync(real, link);
    const plan = writePlan(name, link, host);
    const dry = cli(['copy', plan, '--wipe-target', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`would empty ${real} (--wipe-target; ${link} resolves to it): 2 entries: leftover.txt, old.git`);
    expect(existsSync(join(real, 'old.git'))).toBe(true);

    const r = cli(['copy', plan, '--wipe-target']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`emptying ${real} (--wipe-target; ${link} resolves to it)`);
    expect(existsSync(join(real, 'old.git'))).toBe(false);
    expect(existsSync(join(real, 'leftover.txt'))).toBe(false);
    expect(treeDigest(real)).toEqual(treeDigest(storage.root));
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });
});
