// `shardmove copy` for real, between real directories of real bare repositories, through
// the CLI process: each method copies and verifies, every guardrail refuses with its rule and
// writes nothing, a tampered ref is caught, and SSH goes through a local fake `ssh`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './support/cli-harness.js';
import type { Storage } from './support/git-storage.js';
import { createStorage, fakeSshDir, git, refsOf, tempDir, treeDigest, wrapperDir } from './support/git-storage.js';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(cwd: string, args: string[], env: Record<string, string> = {}): Result {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function writePlan(dir: string, name: string, method: string, source: string, target: string, extra = ''): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `version: 1\nname: ${name}\ncopy:\n  method: ${method}\n  source: { path: ${source} }\n  target: { path: ${target}${extra} }\n`,
  );
  return file;
}

function expectSameRefs(storage: Storage, target: string): void {
  for (const rel of storage.repos) expect(refsOf(join(target, rel)), rel).toEqual(refsOf(join(storage.root, rel)));
}

let base: string;
let storage: Storage;

beforeAll(() => {
  base = tempDir('shardmove-copy-');
  storage = createStorage(base);
});

describe('shardmove copy: the three methods', () => {
  it('rsync copies everything with --delete and a source ending in /., removing a stale repository on the target', () => {
    const target = join(base, 'rsync-target');
    mkdirSync(join(target, 'stale', 'old.git'), { recursive: true });
    git(['init', '-q', '--bare', join(target, 'stale', 'old.git')]);
    // Written with a trailing slash and without /.: the command gets /. anyway.
    const plan = writePlan(base, 'rsync-local', 'rsync', `${storage.root}/`, target);
    const r = cli(base, ['copy', plan]);
    expect(r.stderr).toContain('repositories');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`$ rsync -a --delete '--out-format=%l %n' ${storage.root}/. ${target}/`);
    expect(r.stdout).toContain('verification: 6 repositories checked, no differences');
    expect(existsSync(join(target, 'stale'))).toBe(false);
    expect(treeDigest(target)).toEqual(treeDigest(storage.root));
    expectSameRefs(storage, target);
  });

  it('tar copies into an empty target', () => {
    const target = join(base, 'tar-target');
    const plan = writePlan(base, 'tar-local', 'tar', storage.root, target);
    const r = cli(base, ['copy', plan]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`$ tar -C ${storage.root} -cvf - . | tar -C ${target} -xf -`);
    expect(treeDigest(target)).toEqual(treeDigest(storage.root));
  });

  it('backup bundles every repository with its custom hooks, keeps a manifest, and restores bare mirrors', () => {
    const target = join(base, 'backup-target');
    const plan = writePlan(base, 'backup-local', 'backup', storage.root, target);
    const r = cli(base, ['copy', plan]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('verification: 6 repositories checked, no differences');
    expectSameRefs(storage, target);
    expect(readFileSync(join(target, storage.hooked, 'custom_hooks', 'pre-receive.d', 'check'), 'utf8')).toContain(
      'custom hook',
    );
    // Restored repositories stand alone: no alternates into the pool, no remote pointing at the bundle.
    expect(existsSync(join(target, storage.fork, 'objects', 'info', 'alternates'))).toBe(false);
    expect(readFileSync(join(target, storage.packed, 'config'), 'utf8')).not.toContain('remote');
    const manifest = JSON.parse(readFileSync(join(base, 'state', 'backup-local.backup', 'manifest.json'), 'utf8')) as {
      repositories: Array<{
        path: string;
        state: string;
        bundle_sha256: string | null;
        custom_hooks_sha256: string | null;
        refs: Record<string, string>;
      }>;
    };
    expect(manifest.repositories.map((m) => m.path)).toEqual(storage.repos);
    expect(manifest.repositories.every((m) => m.state === 'restored')).toBe(true);
    const packed = manifest.repositories.find((m) => m.path === storage.packed)!;
    expect(packed.bundle_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(packed.refs).toEqual(refsOf(join(storage.root, storage.packed)));
    expect(manifest.repositories.find((m) => m.path === storage.hooked)!.custom_hooks_sha256).toMatch(/^[0-9a-f]{64}$/);

    const status = cli(base, ['status', plan]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('copy backup-local (backup): done');
    expect(status.stdout).toMatch(/repositories 6\/6, [\d.]+ KiB of [\d.]+ KiB/);
  });

  it.each(['rsync', 'tar', 'backup'])(
    '%s reaches an ssh target through the system ssh (a local fake here)',
    (method) => {
      const ssh = fakeSshDir(join(base, `ssh-${method}`));
      const target = join(base, `ssh-${method}-target`);
      const plan = writePlan(base, `ssh-${method}`, method, storage.root, target, ', host: git@new-gitaly-1');
      const r = cli(base, ['copy', plan], { PATH: `${ssh.bin}:${process.env['PATH']}` });
      expect(r.code, r.stderr + r.stdout).toBe(0);
      expectSameRefs(storage, target);
      const calls = ssh.calls();
      expect(calls.length).toBeGreaterThan(0);
      expect(calls.every((c) => c.includes('BatchMode=yes'))).toBe(true);
      // `--` ends ssh's options before the host; only rsync's own ssh line (`-l user host`) cannot have it.
      expect(
        calls
          .filter((c) => !c.includes(' rsync --server'))
          .every((c) => c.startsWith('-o BatchMode=yes -- git@new-gitaly-1 ')),
      ).toBe(true);
      expect(calls.some((c) => c.includes('new-gitaly-1') && c.includes('for-each-ref'))).toBe(true);
      if (method === 'rsync')
        expect(r.stdout).toContain(
          `$ rsync -a --delete -s -e 'ssh -o BatchMode=yes' '--out-format=%l %n' ${storage.root}/. git@new-gitaly-1:${target}/`,
        );
      if (method === 'tar')
        expect(r.stdout).toContain(`| ssh -o BatchMode=yes -- git@new-gitaly-1 'tar -C ${target} -xf -'`);
    },
  );

  it('dry runs print the commands and what they would change, and write nothing', () => {
    const target = join(base, 'dry-target');
    mkdirSync(join(target, 'stale.git'), { recursive: true });
    writeFileSync(join(target, 'stale.git', 'HEAD'), 'ref: refs/heads/main\n');
    const before = treeDigest(target);
    const rsync = cli(base, ['copy', writePlan(base, 'dry-rsync', 'rsync', storage.root, target), '--dry-run']);
    expect(rsync.code, rsync.stderr).toBe(0);
    expect(rsync.stdout).toContain('--dry-run --itemize-changes');
    expect(rsync.stdout).toMatch(/\*deleting +stale\.git\//);
    expect(rsync.stdout).toContain(`cd+++++++++ ${storage.packed}/`);
    const backup = cli(base, [
      'copy',
      writePlan(base, 'dry-backup', 'backup', storage.root, join(base, 'dry-backup-target')),
      '--dry-run',
    ]);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toContain(`git --git-dir=${join(storage.root, storage.packed)} bundle create`);
    expect(backup.stdout).toContain('git clone --mirror');
    const tar = cli(base, [
      'copy',
      writePlan(base, 'dry-tar', 'tar', storage.root, join(base, 'dry-tar-target')),
      '--dry-run',
    ]);
    expect(tar.code, tar.stderr).toBe(0);
    expect(tar.stdout).toContain(`+ ${storage.loose}`);
    expect(treeDigest(target)).toEqual(before);
    for (const p of [
      'dry-backup-target',
      'dry-tar-target',
      'state/dry-rsync.copy.db',
      'state/dry-backup.copy.db',
      'state/dry-backup.backup',
    ])
      expect(existsSync(join(base, p)), p).toBe(false);
  });

  it('verification catches a ref that differs on the target (exit 1, the ref named)', () => {
    const target = join(base, 'tamper-target');
    const main = refsOf(join(storage.root, storage.packed))['refs/heads/main']!;
    const feature = refsOf(join(storage.root, storage.packed))['refs/heads/feature']!;
    // rsync copies, then the wrapper moves a branch on the target, as a broken copy would leave it.
    const bin = wrapperDir(
      join(base, 'tamper'),
      'rsync',
      `"$REAL" "$@" || exit $?\ngit --git-dir=${join(target, storage.packed)} update-ref refs/heads/main ${feature}`,
    );
    const r = cli(base, ['copy', writePlan(base, 'tamper', 'rsync', storage.root, target)], {
      PATH: `${bin}:${process.env['PATH']}`,
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('1 differences');
    expect(r.stdout).toContain(`${storage.packed}: refs/heads/main is ${feature} on the target, ${main} on the source`);
    expect(cli(base, ['status', join(base, 'tamper.yaml')]).stdout).toContain('verification: 1 differences');
  });
});

describe('shardmove copy: guardrails refuse before anything is written', () => {
  const refused = (r: Result, rule: string, code = 4) => {
    expect(r.code, r.stderr).toBe(code);
    expect(r.stderr).toContain(`[${rule}]`);
  };

  it('a clustered target accepts only backup (a plan rule, with file:line:col)', () => {
    const plan = writePlan(
      base,
      'clustered',
      'rsync',
      storage.root,
      join(base, 'clustered-target'),
      ', clustered: true',
    );
    const r = cli(base, ['copy', plan]);
    refused(r, 'clustered-target-backup-only', 2);
    expect(r.stderr).toMatch(/clustered\.yaml:4:11: copy\.method: a clustered target accepts only backup/);
    expect(cli(base, ['validate', plan]).code).toBe(2);
    expect(existsSync(join(base, 'clustered-target'))).toBe(false);
    expect(existsSync(join(base, 'state', 'clustered.copy.db'))).toBe(false);
  });

  it('source and target never overlap: as written (plan rule) and through a symlink (at run time)', () => {
    refused(
      cli(base, ['copy', writePlan(base, 'inside', 'rsync', storage.root, join(storage.root, 'copy'))]),
      'source-target-overlap',
      2,
    );
    const link = join(base, 'link-to-storage');
    symlinkSync(storage.root, link);
    const before = treeDigest(storage.root);
    refused(
      cli(base, ['copy', writePlan(base, 'via-link', 'rsync', storage.root, join(link, 'sub'))]),
      'source-target-overlap',
    );
    expect(treeDigest(storage.root)).toEqual(before);
    expect(existsSync(join(base, 'state', 'via-link.copy.db'))).toBe(false);
  });

  it('tar needs an empty target', () => {
    const target = join(base, 'tar-full');
    mkdirSync(target);
    writeFileSync(join(target, 'keep.txt'), 'operator data\n');
    refused(cli(base, ['copy', writePlan(base, 'tar-full', 'tar', storage.root, target)]), 'tar-empty-target');
    expect(treeDigest(target)).toEqual([`keep.txt 644 ${treeDigest(target)[0]!.split(' ')[2]}`]);
    expect(existsSync(join(base, 'state', 'tar-full.copy.db'))).toBe(false);
  });

  it('--wipe-target is for tar only', () => {
    refused(
      cli(base, [
        'copy',
        writePlan(base, 'wipe-rsync', 'rsync', storage.root, join(base, 'wipe-rsync-target')),
        '--wipe-target',
      ]),
      'wipe-target-tar-only',
    );
    expect(existsSync(join(base, 'wipe-rsync-target'))).toBe(false);
  });

  it('--wipe-target never empties a target that is, through a symlink on the target host, a parent of the source', () => {
    const ssh = fakeSshDir(join(base, 'ssh-wipe'));
    const link = join(base, 'link-to-base');
    symlinkSync(base, link);
    const before = treeDigest(storage.root);
    const r = cli(
      base,
      ['copy', writePlan(base, 'wipe-parent', 'tar', storage.root, link, ', host: gitaly-2'), '--wipe-target'],
      { PATH: `${ssh.bin}:${process.env['PATH']}` },
    );
    // The target's real path is resolved on its host (this machine): the overlap refuses it first.
    refused(r, 'source-target-overlap');
    expect(r.stderr).toContain(`real paths ${storage.root} and ${base}`);
    expect(treeDigest(storage.root)).toEqual(before);
  });

  it('--wipe-target refuses a home directory', () => {
    const home = join(base, 'home-dir');
    mkdirSync(home);
    writeFileSync(join(home, '.profile'), '# mine\n');
    const r = cli(base, ['copy', writePlan(base, 'wipe-home', 'tar', storage.root, home), '--wipe-target'], {
      HOME: home,
    });
    refused(r, 'wipe-target-safety');
    expect(r.stderr).toContain('home directory');
    expect(existsSync(join(home, '.profile'))).toBe(true);
  });

  it('backup never restores over a repository already on the target', () => {
    const target = join(base, 'backup-clash');
    git(['init', '-q', '--bare', join(target, storage.loose)]);
    const before = treeDigest(target);
    refused(
      cli(base, ['copy', writePlan(base, 'backup-clash', 'backup', storage.root, target)]),
      'backup-target-exists',
    );
    expect(treeDigest(target)).toEqual(before);
    expect(existsSync(join(base, 'state', 'backup-clash.backup'))).toBe(false);
  });

  it('a missing source is refused', () => {
    refused(
      cli(base, ['copy', writePlan(base, 'no-source', 'rsync', join(base, 'nope'), join(base, 'no-source-target'))]),
      'source-missing',
    );
    expect(existsSync(join(base, 'no-source-target'))).toBe(false);
  });
});
