// A careless operator's copies: paths with spaces and the characters a plan may hold, components
// beginning with "-", repositories whose names mean something to a shell, symlinks, and a file or a
// dangling symlink where the target directory belongs. Every method, here and over the fake ssh.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './support/cli-harness.js';
import { createStorage, fakeSshDir, git, refsOf, tempDir, treeDigest } from './support/git-storage.js';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Repository names a shell would read as commands, quotes, options, a line break or a wildcard. */
const HOSTILE = [
  'a`touch pwned-1`.git',
  '$(touch pwned-2).git',
  `q'uote"d.git`,
  '-n.git',
  'semi;touch pwned-3.git',
  'new\nline.git',
  '*.git',
  'sp ace.git',
];

let base: string;
let root: string;
let repos: string[];
let ssh: ReturnType<typeof fakeSshDir>;

beforeAll(() => {
  base = tempDir('shardmove copy careless ');
  const storage = createStorage(base);
  // A source whose every path has a space, a component beginning with "-" and the allowed punctuation.
  root = join(base, '-src: a@b%c+d,e=f');
  renameSync(storage.root, root);
  const work = join(base, '.work-loose');
  for (const name of HOSTILE) {
    const dir = join(root, 'hostile', name);
    git(['init', '-q', '--bare', dir]);
    git([`--git-dir=${dir}`, 'fetch', '-q', work, 'refs/heads/*:refs/heads/*']);
  }
  repos = [...storage.repos, ...HOSTILE.map((n) => `hostile/${n}`)];
  ssh = fakeSshDir(join(base, 'ssh'));
});

function cli(args: string[]): Result {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: base,
    env: { ...process.env, PATH: `${ssh.bin}:${process.env['PATH']}` },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function writePlan(
  name: string,
  method: string,
  target: string,
  extra: { host?: string; source?: string; backup?: string } = {},
): string {
  const file = join(base, `${name}.yaml`);
  const host = extra.host ? `, host: ${extra.host}` : '';
  const backup = extra.backup ? `  backup: { path: ${JSON.stringify(extra.backup)} }\n` : '';
  writeFileSync(
    file,
    `version: 1\nname: ${name}\ncopy:\n  method: ${method}\n  source: { path: ${JSON.stringify(extra.source ?? root)} }\n  target: { path: ${JSON.stringify(target)}${host} }\n${backup}`,
  );
  return file;
}

const refused = (r: Result, rule: string, code = 4) => {
  expect(r.code, r.stderr + r.stdout).toBe(code);
  expect(r.stderr).toContain(`[${rule}]`);
};

describe('every method copies awkward paths and hostile repository names, here and over ssh', () => {
  it.each([
    ['rsync', 'here'],
    ['rsync', 'over ssh'],
    ['tar', 'here'],
    ['tar', 'over ssh'],
    ['backup', 'here'],
    ['backup', 'over ssh'],
  ])('%s %s', (method, where) => {
    const host = where === 'over ssh' ? 'git@gitaly-here' : undefined;
    const name = `awkward-${method}${host ? '-ssh' : ''}`;
    const target = join(base, `-tgt ${name}: @%+,=`);
    const backup = method === 'backup' ? join(base, `-bk ${name}: x`) : undefined;
    const r = cli([
      'copy',
      writePlan(name, method, target, { ...(host ? { host } : {}), ...(backup ? { backup } : {}) }),
    ]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toContain(`verification: ${repos.length} repositories checked, no differences`);
    for (const rel of repos) expect(refsOf(join(target, rel)), rel).toEqual(refsOf(join(root, rel)));
    for (const n of [1, 2, 3]) expect(existsSync(join(base, `pwned-${n}`)), `pwned-${n}`).toBe(false);
  });
});

describe('what a careless operator points the target at', () => {
  it.each(['rsync', 'tar', 'backup'])(
    '%s: a file where the target directory belongs is refused before anything is written',
    (method) => {
      const file = join(base, `a-file-${method}`);
      writeFileSync(file, 'operator data\n');
      refused(cli(['copy', writePlan(`file-${method}`, method, file)]), 'target-not-directory');
      expect(readFileSync(file, 'utf8')).toBe('operator data\n');
      expect(existsSync(join(base, 'state', `file-${method}.copy.db`))).toBe(false);
      expect(existsSync(join(base, 'state', `file-${method}.backup`))).toBe(false);
    },
  );

  it('a dangling symlink is refused; one into the source is seen as the source', () => {
    const nowhere = join(base, 'dangling');
    symlinkSync(join(base, 'no-such-dir'), nowhere);
    refused(cli(['copy', writePlan('dangling', 'rsync', nowhere)]), 'target-not-directory');
    refused(
      cli(['copy', writePlan('dangling-ssh', 'backup', nowhere, { host: 'git@gitaly-here' })]),
      'target-not-directory',
    );
    const intoSource = join(base, 'dangling-into-source');
    symlinkSync(join(root, 'not-yet'), intoSource);
    refused(cli(['copy', writePlan('dangling-src', 'tar', intoSource)]), 'source-target-overlap');
    refused(
      cli(['copy', writePlan('dangling-src-ssh', 'tar', intoSource, { host: 'git@gitaly-here' })]),
      'source-target-overlap',
    );
    expect(existsSync(join(root, 'not-yet'))).toBe(false);
  });

  it('a source given through a symlink is copied from where it points', () => {
    const link = join(base, 'source-link');
    symlinkSync(root, link);
    const target = join(base, 'from-link');
    const r = cli(['copy', writePlan('from-link', 'rsync', target, { source: link })]);
    expect(r.code, r.stderr).toBe(0);
    expect(treeDigest(target)).toEqual(treeDigest(root));
  });

  it('a backup directory through a symlink into the source is refused', () => {
    const link = join(base, 'backup-link');
    symlinkSync(root, link);
    refused(
      cli([
        'copy',
        writePlan('backup-link', 'backup', join(base, 'backup-link-target'), { backup: join(link, 'bundles') }),
      ]),
      'backup-path-overlap',
    );
    expect(existsSync(join(root, 'bundles'))).toBe(false);
  });

  it('a target that is not absolute is a plan error, so nothing beginning with "-" becomes an option', () => {
    for (const target of ['-rf', '--delete']) {
      const r = cli(['copy', writePlan('dash', 'rsync', target)]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('copy.target.path: expected an absolute path');
    }
    expect(existsSync(join(base, 'state', 'dash.copy.db'))).toBe(false);
  });
});
