import { mkdtempSync, mkdirSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CopyPlan } from '../plan/copy-types.js';
import { checkWipeSafety } from './wipe.js';

const plan = (target: string, source = '/srv/source'): CopyPlan => ({
  version: 1,
  name: 'x',
  copy: { method: 'tar', source: { path: source }, target: { path: target, host: null, clustered: false }, backupPath: null },
});

describe('--wipe-target safety', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wipe-'));
  const source = join(dir, 'src');
  mkdirSync(join(source, 'inner'), { recursive: true });

  it.each([
    ['/', 'top-level'],
    ['/srv', 'top-level'],
  ])('refuses %s (%s)', async (target, why) => {
    await expect(checkWipeSafety(plan(target), source, true)).rejects.toThrow(new RegExp(`\\[wipe-target-safety\\].*${why}`));
  });

  it('refuses a home directory ($HOME here; every passwd home too)', async () => {
    const saved = process.env['HOME'];
    process.env['HOME'] = join(dir, 'home');
    try {
      expect(homedir()).toBe(join(dir, 'home'));
      await expect(checkWipeSafety(plan(join(dir, 'home')), source, true)).rejects.toThrow(/\[wipe-target-safety\].*home directory/);
    } finally {
      process.env['HOME'] = saved;
    }
  });

  it('refuses the source, a directory inside it and a parent of it', async () => {
    await expect(checkWipeSafety(plan(source, source), source, true)).rejects.toThrow(/it is the source/);
    await expect(checkWipeSafety(plan(join(source, 'inner'), source), source, true)).rejects.toThrow(/inside the source/);
    await expect(checkWipeSafety(plan(dir, source), source, true)).rejects.toThrow(/parent of the source/);
  });

  it('accepts a separate directory', async () => {
    await expect(checkWipeSafety(plan(join(dir, 'target'), source), source, true)).resolves.toBeUndefined();
  });
});
