import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findOauthFiles } from './oauth-writeback.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function planWith(access: string, refresh: string): { dir: string; plan: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sm-oauth-files-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'access.txt'), 'a\n');
  writeFileSync(join(dir, 'refresh.txt'), 'r\n');
  const plan = join(dir, 'plan.yaml');
  writeFileSync(
    plan,
    `instance:\n  oauth:\n    access_token_file: "${access}"\n    refresh_token_file: "${refresh}"\n`,
  );
  return { dir, plan };
}

describe('findOauthFiles', () => {
  it('finds token files relative to the plan', () => {
    const { dir, plan } = planWith('access.txt', 'refresh.txt');
    expect(findOauthFiles(plan, {})).toEqual({
      accessTokenFile: realpathSync(join(dir, 'access.txt')),
      refreshTokenFile: realpathSync(join(dir, 'refresh.txt')),
    });
  });

  it('expands ${VAR} in the paths as the plan loader does (refreshed tokens were kept in memory only)', () => {
    const { dir, plan } = planWith('${TOKENS}/access.txt', '${TOKENS}/refresh.txt');
    expect(findOauthFiles(plan, { TOKENS: dir })).toEqual({
      accessTokenFile: realpathSync(join(dir, 'access.txt')),
      refreshTokenFile: realpathSync(join(dir, 'refresh.txt')),
    });
    // An unset variable names no file: nothing is written anywhere.
    expect(findOauthFiles(plan, {})).toEqual({ accessTokenFile: null, refreshTokenFile: null });
  });

  it('never names a pipe or device (/dev/stdin) as a place to write', () => {
    const { plan } = planWith('/dev/stdin', 'refresh.txt');
    expect(findOauthFiles(plan, {}).accessTokenFile).toBeNull();
  });
});
