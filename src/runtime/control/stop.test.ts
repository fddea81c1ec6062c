import { lstatSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { removeStopFile, stopFilePath } from './stop.js';

describe('the stop file', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is the checkpoint with .stop, beside it', () => {
    expect(stopFilePath('/srv/state/retire nfs.db')).toBe('/srv/state/retire nfs.db.stop');
  });

  it('is removed only as the run saw it: a symlink as a link, and one put there since is left', () => {
    dir = mkdtempSync(join(tmpdir(), 'shardmove-stop-file-'));
    const target = join(dir, 'checkpoint.db');
    writeFileSync(target, 'keep');
    const at = stopFilePath(target);
    symlinkSync(target, at);
    expect(removeStopFile(at, lstatSync(at))).toBeNull();
    expect(readFileSync(target, 'utf8')).toBe('keep');
    expect(() => lstatSync(at)).toThrow(/ENOENT/);

    writeFileSync(at, 'first');
    const seen = lstatSync(at);
    // Made while the first exists, so it is another inode, then put in its place.
    writeFileSync(join(dir, 'second'), 'second');
    renameSync(join(dir, 'second'), at);
    expect(removeStopFile(at, seen)).toMatch(/^a new stop file was put at .* after this run saw its own: left there/);
    expect(readFileSync(at, 'utf8')).toBe('second');
    // Gone already (the operator removed it): nothing to do, nothing to say.
    rmSync(at);
    expect(removeStopFile(at, seen)).toBeNull();
  });
});
