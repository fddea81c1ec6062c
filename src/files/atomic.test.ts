import {
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from './atomic.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'shardmove-atomic-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('writeFileAtomic', () => {
  it('replaces the file whole and leaves no temporary file behind, also when the write fails', () => {
    const dir = tempDir();
    const file = join(dir, 'm.prom');
    writeFileSync(file, 'old\n');
    writeFileAtomic(file, 'new\n');
    expect(readFileSync(file, 'utf8')).toBe('new\n');
    expect(readdirSync(dir)).toEqual(['m.prom']);
    expect(() => writeFileAtomic(join(dir, 'missing', 'm.prom'), 'x')).toThrow(/ENOENT/);
    expect(readdirSync(dir)).toEqual(['m.prom']);
  });

  it('writes chunks one after another, and leaves the old file in place when a chunk fails', () => {
    const dir = tempDir();
    const file = join(dir, 'items.jsonl');
    writeFileAtomic(file, ['a\n', 'b\n']);
    expect(readFileSync(file, 'utf8')).toBe('a\nb\n');
    function* failing() {
      yield 'c\n';
      throw new Error('disk full');
    }
    expect(() => writeFileAtomic(file, failing())).toThrow('disk full');
    expect(readFileSync(file, 'utf8')).toBe('a\nb\n');
    expect(readdirSync(dir)).toEqual(['items.jsonl']);
  });

  it('never follows a symlink planted at the temporary name: the planted link and its target stay, a fresh name is used', () => {
    const dir = tempDir();
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'precious\n');
    const planted = join(dir, '.token.planted.tmp');
    symlinkSync(victim, planted);
    const names = [planted, join(dir, '.token.fresh.tmp')];
    const file = join(dir, 'token');
    writeFileAtomic(file, 'secret\n', { tempName: () => names.shift()! });
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(lstatSync(planted).isSymbolicLink()).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('secret\n');
  });

  it('gives up, writing nothing, when every name it tries is taken', () => {
    const dir = tempDir();
    const planted = join(dir, 'taken');
    writeFileSync(planted, 'theirs\n');
    expect(() => writeFileAtomic(join(dir, 'f'), 'x', { tempName: () => planted })).toThrow(/EEXIST/);
    expect(readFileSync(planted, 'utf8')).toBe('theirs\n');
    expect(readdirSync(dir)).toEqual(['taken']);
  });

  it('sets the final mode: 0600 unless told (the textfile collector needs 0644)', () => {
    const dir = tempDir();
    const secret = join(dir, 's');
    const metrics = join(dir, 'm.prom');
    const seen: string[] = [];
    writeFileAtomic(secret, 'x');
    writeFileAtomic(metrics, 'y', {
      mode: 0o644,
      tempName: (f) => {
        const n = `${f}.${String(seen.length)}.tmp`;
        seen.push(n);
        return n;
      },
    });
    expect(statSync(secret).mode & 0o777).toBe(0o600);
    expect(statSync(metrics).mode & 0o777).toBe(0o644);
    expect(readdirSync(dir).sort()).toEqual(['m.prom', 's']);
  });
});
