import { mkdtempSync, mkdirSync, readdirSync, realpathSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CopyPlan } from '../plan/copy-types.js';
import { realLocalPath } from './guard.js';
import { checkWipeSafety, wipeTarget } from './wipe.js';

/** checkWipeSafety on a local target, with its real path resolved as the copy resolves it. */
const check = async (target: string, source = '/srv/source'): Promise<string> => checkWipeSafety(plan(target, source), source, { real: await realLocalPath(target), sameMachine: true });

const plan = (target: string, source = '/srv/source'): CopyPlan => ({
  version: 1,
  name: 'x',
  copy: { method: 'tar', source: { path: source }, target: { path: target, host: null, clustered: false }, backupPath: null },
});

describe('--wipe-target safety', () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'wipe-')));
  const source = join(dir, 'src');
  mkdirSync(join(source, 'inner'), { recursive: true });

  it.each([
    ['/', 'top-level'],
    ['/srv', 'top-level'],
  ])('refuses %s (%s)', async (target, why) => {
    await expect(check(target)).rejects.toThrow(new RegExp(`\\[wipe-target-safety\\].*${why}`));
  });

  it('refuses a home directory ($HOME here; every passwd home too)', async () => {
    const saved = process.env['HOME'];
    process.env['HOME'] = join(dir, 'home');
    try {
      expect(homedir()).toBe(join(dir, 'home'));
      await expect(check(join(dir, 'home'))).rejects.toThrow(/\[wipe-target-safety\].*home directory/);
    } finally {
      process.env['HOME'] = saved;
    }
  });

  it('refuses the source, a directory inside it and a parent of it', async () => {
    await expect(check(source, source)).rejects.toThrow(/it is the source/);
    await expect(check(join(source, 'inner'), source)).rejects.toThrow(/inside the source/);
    await expect(check(dir, source)).rejects.toThrow(/parent of the source/);
  });

  it('accepts a separate directory', async () => {
    await expect(check(join(dir, 'target'), source)).resolves.toBe(join(dir, 'target'));
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
