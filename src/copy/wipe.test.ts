import { chownSync, mkdtempSync, mkdirSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CopyPlan } from '../plan/copy-types.js';
import { readTargetFacts, realLocalPath } from './guard.js';
import { localIdentity } from './identity.js';
import { checkWipeSafety, systemTreeOf, wipeTarget } from './wipe.js';

const plan = (target: string, source = '/srv/source'): CopyPlan => ({
  version: 1,
  name: 'x',
  copy: {
    method: 'tar',
    source: { path: source },
    target: { path: target, host: null, clustered: false },
    backupPath: null,
  },
});

/** checkWipeSafety on a local target, with its real path resolved as the copy resolves it. */
const check = async (target: string, source = '/srv/source', wipeAny = false): Promise<string> =>
  checkWipeSafety(
    plan(target, source),
    await localIdentity(await realLocalPath(source)),
    await readTargetFacts(null, target, true),
    { wipeAny },
  );

const refusedBy = (rule: string, why = '') => new RegExp(`\\[${rule}\\].*${why}`);

describe('--wipe-target safety', () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'wipe-')));
  const source = join(dir, 'src');
  mkdirSync(join(source, 'inner'), { recursive: true });
  /** A directory shaped like an interrupted tar copy's target. */
  const storageLike = (name: string) => {
    const d = join(dir, name);
    mkdirSync(join(d, '@hashed', 'ab', 'cd'), { recursive: true });
    return d;
  };
  const savedHome = process.env['HOME'];
  afterEach(() => {
    process.env['HOME'] = savedHome;
  });

  it.each([
    ['/', 'top-level'],
    ['/srv', 'top-level'],
  ])('refuses %s (%s)', async (target, why) => {
    await expect(check(target)).rejects.toThrow(refusedBy('wipe-target-safety', why));
  });

  it('knows the system trees: /usr, /etc, /boot, /bin, /sbin, /lib*, /proc, /sys, /dev and below, and /var/lib itself', () => {
    for (const p of [
      '/usr',
      '/usr/lib',
      '/usr/local/share/x',
      '/etc',
      '/etc/ssl',
      '/etc/ssl/certs',
      '/boot/grub',
      '/bin/x',
      '/sbin/x',
      '/lib',
      '/lib64',
      '/lib/x86_64-linux-gnu',
      '/libx32/a',
      '/proc/1',
      '/sys/fs',
      '/dev/shm',
      '/var/lib',
    ]) {
      expect(systemTreeOf(p), p).toBeDefined();
    }
    for (const p of ['/var/lib/gitlab', '/var/opt/gitlab/git-data/repositories', '/srv/repos', '/usrx', '/mnt/usr/lib'])
      expect(systemTreeOf(p), p).toBeUndefined();
  });

  it.each(['/usr/lib', '/etc/ssl', '/var/lib'])('refuses the system directory %s', async (target) => {
    await expect(check(target)).rejects.toThrow(refusedBy('wipe-target-system-tree'));
  });

  it('refuses a symlink to a system directory by its real path', async () => {
    const link = join(dir, 'looks-harmless');
    symlinkSync('/usr/lib', link);
    await expect(check(link)).rejects.toThrow(refusedBy('wipe-target-system-tree', 'real path /usr/lib'));
  });

  it('refuses a home directory ($HOME here; every passwd home too)', async () => {
    process.env['HOME'] = join(dir, 'home');
    expect(homedir()).toBe(join(dir, 'home'));
    await expect(check(join(dir, 'home'))).rejects.toThrow(refusedBy('wipe-target-safety', 'home directory'));
  });

  it('refuses a directory that holds a home directory', async () => {
    const homes = storageLike('homes');
    process.env['HOME'] = join(homes, 'alice');
    await expect(check(homes)).rejects.toThrow(
      refusedBy('wipe-target-home-ancestor', `holds the home directory ${join(homes, 'alice')}`),
    );
  });

  it('refuses the source, a directory inside it and a parent of it', async () => {
    await expect(check(source, source)).rejects.toThrow(/it is the source/);
    await expect(check(join(source, 'inner'), source)).rejects.toThrow(/inside the source/);
    await expect(check(dir, source)).rejects.toThrow(/parent of the source/);
  });

  it('refuses a directory that holds no repository storage, unless --wipe-any-target', async () => {
    const notes = join(dir, 'notes');
    mkdirSync(join(notes, 'a', 'b', 'c', 'deep.git'), { recursive: true });
    writeFileSync(join(notes, 'todo.txt'), 'mine\n');
    await expect(check(notes)).rejects.toThrow(refusedBy('wipe-target-not-storage'));
    await expect(check(notes, undefined, true)).resolves.toBe(notes);
  });

  it.skipIf(process.getuid?.() !== 0)(
    'refuses a directory owned by another user, unless --wipe-any-target (needs root to chown)',
    async () => {
      const theirs = storageLike('theirs');
      chownSync(theirs, 65534, 65534);
      await expect(check(theirs)).rejects.toThrow(refusedBy('wipe-target-not-owned'));
      await expect(check(theirs, undefined, true)).resolves.toBe(theirs);
    },
  );

  it('accepts a separate storage-like directory, an empty one and a missing one', async () => {
    await expect(check(storageLike('target'), source)).resolves.toBe(join(dir, 'target'));
    mkdirSync(join(dir, 'empty'));
    await expect(check(join(dir, 'empty'), source)).resolves.toBe(join(dir, 'empty'));
    await expect(check(join(dir, 'missing'), source)).resolves.toBe(join(dir, 'missing'));
    const repoOnly = join(dir, 'legacy');
    mkdirSync(join(repoOnly, 'group', 'sub', 'project.git'), { recursive: true });
    await expect(check(repoOnly, source)).resolves.toBe(repoOnly);
  });
});

describe('wipeTarget', () => {
  it('empties the real directory, and fails when the target as written still holds entries after it', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'wipe-run-')));
    const real = join(dir, 'real');
    mkdirSync(join(real, 'old.git'), { recursive: true });
    await wipeTarget(null, real, real);
    expect(readdirSync(real)).toEqual([]);
    // A target that no longer resolves to what was checked and wiped: tar must not extract over it.
    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(join(elsewhere, 'stale.git'), { recursive: true });
    await expect(wipeTarget(null, real, elsewhere)).rejects.toThrow(/still holds 1 entries \(stale\.git\)/);
  });
});
