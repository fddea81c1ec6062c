import { execFileSync } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
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
import { OUTPUT_EXISTS, OUTPUT_NOT_A_FILE } from './errors.js';

/** Root can make device nodes; the tests make their own in a temporary folder, never touching /dev. */
const isRoot = process.getuid?.() === 0;

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

describe('writeFileAtomic replaces only a regular file', () => {
  const codeOf = (f: () => void): unknown => {
    try {
      f();
    } catch (err) {
      return (err as { code?: unknown }).code;
    }
    return 'no error';
  };

  it('refuses a FIFO, a symlink to a file, a dangling symlink and a directory, leaving each as it was and no temporary file', () => {
    const dir = tempDir();
    const fifo = join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    const target = join(dir, 'target');
    writeFileSync(target, 'precious\n');
    const link = join(dir, '-a link with spaces');
    symlinkSync(target, link);
    const dangling = join(dir, 'dangling');
    symlinkSync(join(dir, 'nowhere'), dangling);
    const sub = join(dir, 'sub');
    mkdirSync(sub);
    for (const [path, what] of [
      [fifo, 'a FIFO'],
      [link, 'a symlink'],
      [dangling, 'a symlink'],
      [sub, 'a directory'],
    ] as const) {
      expect(() => writeFileAtomic(path, 'x')).toThrow(`${path} is ${what}`);
      expect(codeOf(() => writeFileAtomic(path, 'x'))).toBe(OUTPUT_NOT_A_FILE);
    }
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(lstatSync(dangling).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('precious\n');
    expect(readdirSync(dir).sort()).toEqual(['-a link with spaces', 'dangling', 'pipe', 'sub', 'target']);
  });

  it.runIf(isRoot)(
    'refuses a device node (its own, made with mknod in a temporary folder), which stays a device',
    () => {
      const dir = tempDir();
      const dev = join(dir, 'full');
      execFileSync('mknod', [dev, 'c', '1', '7']);
      expect(codeOf(() => writeFileAtomic(dev, 'x'))).toBe(OUTPUT_NOT_A_FILE);
      expect(lstatSync(dev).isCharacterDevice()).toBe(true);
      expect(readdirSync(dir)).toEqual(['full']);
    },
  );

  it('looks again just before the rename: a FIFO put at the name while the file was written stays', () => {
    const dir = tempDir();
    const file = join(dir, 'report.html');
    writeFileSync(file, 'old\n');
    function* swapping() {
      yield 'new\n';
      rmSync(file);
      execFileSync('mkfifo', [file]);
    }
    expect(codeOf(() => writeFileAtomic(file, swapping()))).toBe(OUTPUT_NOT_A_FILE);
    expect(lstatSync(file).isFIFO()).toBe(true);
    expect(readdirSync(dir)).toEqual(['report.html']);
  });

  it('with replace: false, leaves a file that is there, or that appeared while this one was written', () => {
    const dir = tempDir();
    const file = join(dir, 'list.jsonl');
    writeFileSync(file, 'reviewed\n');
    expect(codeOf(() => writeFileAtomic(file, 'all\n', { replace: false }))).toBe(OUTPUT_EXISTS);
    expect(readFileSync(file, 'utf8')).toBe('reviewed\n');
    const other = join(dir, 'other.jsonl');
    function* racing() {
      yield 'all\n';
      writeFileSync(other, 'reviewed\n');
    }
    expect(codeOf(() => writeFileAtomic(other, racing(), { replace: false }))).toBe(OUTPUT_EXISTS);
    expect(readFileSync(other, 'utf8')).toBe('reviewed\n');
    const fresh = join(dir, 'fresh.jsonl');
    writeFileAtomic(fresh, 'all\n', { replace: false, mode: 0o644 });
    expect(readFileSync(fresh, 'utf8')).toBe('all\n');
    expect(statSync(fresh).mode & 0o777).toBe(0o644);
    expect(readdirSync(dir).sort()).toEqual(['fresh.jsonl', 'list.jsonl', 'other.jsonl']);
  });
});
