// The rsync deletion check against real rsync output: the itemised names rsync prints, mapped to
// real paths the way rsync itself applies them.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localIdentity } from './identity.js';
import { checkRsyncDeletions, deletionsReachingSource, parseDeletions, unescapeRsyncName } from './rsync-deletions.js';

/** The itemised dry run of `rsync -a --delete SRC/. TGT/`, as the copy runs it. */
function itemize(src: string, tgt: string, env: Record<string, string> = {}): string[] {
  const r = spawnSync('rsync', ['-a', '--delete', '--dry-run', '--itemize-changes', `${src}/.`, `${tgt}/`], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split('\n').filter(Boolean);
}

/** dir/src (the source, one repository-like directory) next to dir/other. */
function layout(): { dir: string; source: string } {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'rsync-del-')));
  const source = join(dir, 'src');
  mkdirSync(join(source, 'a.git'), { recursive: true });
  writeFileSync(join(source, 'a.git', 'HEAD'), 'ref: refs/heads/main\n');
  mkdirSync(join(dir, 'other'));
  writeFileSync(join(dir, 'other', 'keep.txt'), 'bystander\n');
  return { dir, source };
}

describe('rsync deletion check', () => {
  it("maps a target that is a symlink to the source's parent: deleting src/ deletes the source", async () => {
    const { dir, source } = layout();
    const link = join(dir, '..', `${dir.split('/').pop()}-link`);
    symlinkSync(dir, link);
    const lines = itemize(source, link);
    expect(lines).toContain('*deleting   src/');
    const id = await localIdentity(source);
    // rsync names relative to the directory it changed into: the link's real path. By identity the
    // link's path reaches the same files.
    for (const base of [dir, link])
      expect(await deletionsReachingSource(parseDeletions(lines), [base], id)).toEqual(
        expect.arrayContaining([join(base, 'src'), join(base, 'src', 'a.git'), join(base, 'src', 'a.git', 'HEAD')]),
      );
    await expect(checkRsyncDeletions(lines, [dir], id)).rejects.toThrow(/\[rsync-deletes-source\]/);
  });

  it('refuses a target inside the source even when nothing would be deleted', async () => {
    const { source } = layout();
    const lines = itemize(source, join(source, 'sub'));
    expect(parseDeletions(lines)).toEqual([]);
    const id = await localIdentity(source);
    await expect(checkRsyncDeletions(lines, [join(source, 'sub')], id)).rejects.toThrow(
      /\[rsync-deletes-source\].*overlaps the source/,
    );
    await expect(checkRsyncDeletions(lines, [source], id)).rejects.toThrow(/\[rsync-deletes-source\]/);
  });

  it('reads names as rsync escapes them: octal bytes, a newline, leading spaces, a directory slash', () => {
    const { dir, source } = layout();
    const target = join(dir, 'target');
    mkdirSync(join(target, 'dir with space'), { recursive: true });
    writeFileSync(join(target, 'na\u00e9me'), '');
    writeFileSync(join(target, 'line\nbreak'), '');
    writeFileSync(join(target, '  lead'), '');
    writeFileSync(join(target, 'back\\#slash'), '');
    writeFileSync(join(target, 'back\\#123'), '');
    // In the C locale rsync escapes every non-ASCII byte; a newline always.
    const lines = itemize(source, target, { LC_ALL: 'C' });
    expect(lines).toContain('*deleting   na\\#303\\#251me');
    expect(lines).toContain('*deleting   line\\#012break');
    expect(lines).toContain('*deleting   back\\#134#123');
    expect(parseDeletions(lines).sort()).toEqual(
      ['  lead', 'back\\#123', 'back\\#slash', 'dir with space', 'line\nbreak', 'na\u00e9me'].sort(),
    );
    expect(unescapeRsyncName('plain')).toBe('plain');
  });

  it('does not follow a symlink below the target: deleting it leaves what it points at', async () => {
    const { dir, source } = layout();
    const target = join(dir, 'target');
    mkdirSync(target);
    symlinkSync(source, join(target, 'points-at-source'));
    const lines = itemize(source, target);
    expect(parseDeletions(lines)).toEqual(['points-at-source']);
    await expect(checkRsyncDeletions(lines, [target], await localIdentity(source))).resolves.toBeUndefined();
    spawnSync('rsync', ['-a', '--delete', `${source}/.`, `${target}/`]);
    expect(existsSync(join(source, 'a.git', 'HEAD'))).toBe(true);
    expect(existsSync(join(target, 'points-at-source'))).toBe(false);
  });
});
