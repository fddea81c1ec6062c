// Regression tests from a hostile probe of `shardmove copy --wipe-target` (tar): what it empties
// when the target is a symlink, and which directories it refuses to empty at all. Refusals are
// checked with --dry-run where a regression would otherwise empty a real system directory.
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
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
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: base,
    env: { ...process.env, PATH, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function writePlan(name: string, target: string, host?: string): string {
  const file = join(base, `${name}.yaml`);
  writeFileSync(
    file,
    `version: 1\nname: ${name}\ncopy:\n  method: tar\n  source: { path: ${storage.root} }\n  target: { path: ${JSON.stringify(target)}${host ? `, host: ${host}` : ''} }\n`,
  );
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
    expect(dry.stdout).toContain(
      `would empty ${real} (--wipe-target; ${link} resolves to it): 2 entries: leftover.txt, old.git`,
    );
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

const refused = (r: Result, rule: string, code = 4) => {
  expect(r.code, r.stderr + r.stdout).toBe(code);
  expect(r.stderr).toContain(`[${rule}]`);
};

/** A home in this machine's password database whose parent is neither top-level nor a system tree (/var/cache for man's /var/cache/man). */
function parentOfListedHome(): string | undefined {
  const homes = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((l) => l.split(':')[5] ?? '');
  const systemish = /^\/(usr|etc|boot|bin|sbin|lib[^/]*|proc|sys|dev)(\/|$)|^\/var\/lib$/;
  return homes.map((h) => dirname(h)).find((p) => p.split('/').length > 2 && !systemish.test(p) && existsSync(p));
}

describe('--wipe-target refuses directories that are not a storage to empty (checked with --dry-run)', () => {
  it.each(['/usr/lib', '/etc/ssl', '/var/lib'])('%s: a system directory', (target) => {
    const name = `sys${target.replace(/\//g, '-')}`;
    const r = cli(['copy', writePlan(name, target), '--wipe-target', '--dry-run']);
    refused(r, 'wipe-target-system-tree');
    expect(r.stdout).not.toContain('would empty');
  });

  it('a symlink to a system directory, here and on an ssh host (resolved there)', () => {
    const link = join(base, 'to-usr-lib');
    symlinkSync('/usr/lib', link);
    refused(cli(['copy', writePlan('sys-link', link), '--wipe-target', '--dry-run']), 'wipe-target-system-tree');
    const remote = cli(['copy', writePlan('sys-link-ssh', link, 'git@gitaly-here'), '--wipe-target', '--dry-run']);
    refused(remote, 'wipe-target-system-tree');
    expect(remote.stderr).toContain('real path /usr/lib');
  });

  const listedParent = parentOfListedHome();
  it.skipIf(listedParent === undefined)('a parent of a home directory listed in the password database', () => {
    const r = cli(['copy', writePlan('home-parent', listedParent!), '--wipe-target', '--dry-run']);
    refused(r, 'wipe-target-home-ancestor');
  });

  it('a parent of $HOME', () => {
    const homes = join(base, 'homes');
    mkdirSync(join(homes, 'alice'), { recursive: true });
    git(['init', '-q', '--bare', join(homes, 'old.git')]);
    refused(
      cli(['copy', writePlan('home-parent-env', homes), '--wipe-target', '--dry-run'], { HOME: join(homes, 'alice') }),
      'wipe-target-home-ancestor',
    );
  });

  it('a directory with no repository storage in it, unless --wipe-any-target', () => {
    const notes = join(base, 'notes');
    mkdirSync(notes);
    writeFileSync(join(notes, 'todo.txt'), 'operator data\n');
    const plan = writePlan('notes', notes);
    refused(cli(['copy', plan, '--wipe-target']), 'wipe-target-not-storage');
    expect(readFileSync(join(notes, 'todo.txt'), 'utf8')).toBe('operator data\n');
    expect(existsSync(join(base, 'state', 'notes.copy.db'))).toBe(false);
    const any = cli(['copy', plan, '--wipe-target', '--wipe-any-target', '--dry-run']);
    expect(any.code, any.stderr).toBe(0);
    expect(any.stdout).toContain(`would empty ${notes} (--wipe-target): 1 entries: todo.txt`);
  });

  it.skipIf(process.getuid?.() !== 0)(
    'a directory owned by another user, unless --wipe-any-target (needs root to chown)',
    () => {
      const theirs = staleTarget(join(base, 'theirs'));
      chownSync(theirs, 65534, 65534);
      const plan = writePlan('theirs', theirs);
      refused(cli(['copy', plan, '--wipe-target']), 'wipe-target-not-owned');
      expect(existsSync(join(theirs, 'old.git'))).toBe(true);
      const any = cli(['copy', plan, '--wipe-target', '--wipe-any-target']);
      expect(any.code, any.stderr).toBe(0);
      expect(treeDigest(theirs)).toEqual(treeDigest(storage.root));
    },
  );

  it('--wipe-any-target alone is an argument error (2)', () => {
    const r = cli(['copy', writePlan('any-alone', join(base, 'any-alone')), '--wipe-any-target']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--wipe-any-target only widens --wipe-target');
  });
});
