import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isSameFile } from './same-file.js';

const base = mkdtempSync(join(tmpdir(), 'sm-same-file-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('isSameFile: identity, not spelling', () => {
  // A name an operator (or an attacker) might choose: spaces, quotes, a backtick, a leading dash.
  const dir = join(base, `it's "a" \`dir\``);
  mkdirSync(join(dir, 'sub'), { recursive: true });
  const file = join(dir, '-state.db');
  writeFileSync(file, 'x');

  it('the same file however it is reached', () => {
    symlinkSync(file, join(dir, 'link'));
    linkSync(file, join(dir, 'hard'));
    symlinkSync(dir, join(base, 'dir-link'));
    expect(isSameFile(file, join(dir, 'sub', '..', '.', '-state.db'))).toBe(true);
    expect(isSameFile(relative(process.cwd(), file), file)).toBe(true);
    expect(isSameFile(join(dir, 'link'), file)).toBe(true);
    expect(isSameFile(join(dir, 'hard'), file)).toBe(true);
    expect(isSameFile(join(base, 'dir-link', '-state.db'), file)).toBe(true);
  });

  it('a file not there yet is the place it would take, through links too', () => {
    symlinkSync(`${file}-wal`, join(dir, 'dangling'));
    expect(isSameFile(join(base, 'dir-link', '-state.db-wal'), `${file}-wal`)).toBe(true);
    expect(isSameFile(join(dir, 'dangling'), `${file}-wal`)).toBe(true);
    expect(isSameFile(join(dir, 'sub', '-state.db-wal'), `${file}-wal`)).toBe(false);
  });

  it('different files, and a place that does not exist at all, are not the same', () => {
    writeFileSync(join(dir, 'other'), 'x');
    expect(isSameFile(join(dir, 'other'), file)).toBe(false);
    expect(isSameFile(join(base, 'no', 'such', 'x'), file)).toBe(false);
    expect(isSameFile(join(base, 'no', 'such', 'x'), join(base, 'no', 'such', 'x'))).toBe(true);
  });
});
