// Regression tests from a hostile probe of `shardmove copy` to an ssh target. The target "host" is
// this machine through a fake `ssh` that runs the remote command here (as sshd would), so an ssh
// target on this very machine, and what its remote shell does with the paths, are tested for real.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './support/cli-harness.js';
import type { Storage } from './support/git-storage.js';
import { createStorage, fakeSshDir, git, tempDir, treeDigest, wrapperDir } from './support/git-storage.js';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

let base: string;
let storage: Storage;
let ssh: ReturnType<typeof fakeSshDir>;

beforeAll(() => {
  base = tempDir('shardmove-copy-ssh-');
  storage = createStorage(base);
  ssh = fakeSshDir(join(base, 'ssh'));
});

/** Runs the CLI with the fake ssh first on PATH, then `bins` (wrappers the "remote" side sees too). */
function cli(args: string[], bins: string[] = []): Result {
  const PATH = [...bins, ssh.bin, process.env['PATH']].join(':');
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: base,
    env: { ...process.env, PATH },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function writePlan(
  name: string,
  method: string,
  target: string,
  opts: { host?: string; source?: string } = {},
): string {
  const file = join(base, `${name}.yaml`);
  const source = opts.source ?? storage.root;
  writeFileSync(
    file,
    `version: 1\nname: ${name}\ncopy:\n  method: ${method}\n  source: { path: ${source} }\n  target: { path: ${JSON.stringify(target)}, host: ${opts.host ?? 'git@gitaly-here'} }\n`,
  );
  return file;
}

const refused = (r: Result, rule: string, code = 4) => {
  expect(r.code, r.stderr + r.stdout).toBe(code);
  expect(r.stderr).toContain(`[${rule}]`);
};

/**
 * A small source of its own inside `dir/src`, next to a bystander `dir/other`: what an rsync into
 * `dir` would delete. Small, so a regression destroys only this.
 */
function sourceWithSibling(dir: string): { source: string; sibling: string; digest: () => string[] } {
  const source = join(dir, 'src');
  git(['init', '-q', '--bare', join(source, 'group', 'one.git')]);
  mkdirSync(join(dir, 'other'));
  writeFileSync(join(dir, 'other', 'keep.txt'), 'bystander\n');
  return { source, sibling: join(dir, 'other'), digest: () => treeDigest(dir) };
}

/** A wrapper `realpath` that fails, as on a host without GNU realpath (the fake remote finds it first on PATH). */
const noRealpath = () =>
  wrapperDir(join(base, 'no-realpath'), 'realpath', 'echo "realpath: unrecognized option -m" >&2; exit 1');
/** A wrapper `cat` that shows another machine id, as a host that is another machine would. */
const otherMachine = () =>
  wrapperDir(
    join(base, 'other-machine'),
    'cat',
    'case "$1" in /etc/machine-id|/var/lib/dbus/machine-id) echo 0123456789abcdef0123456789abcdef;; *) exec "$REAL" "$@";; esac',
  );
const hasMachineId = existsSync('/etc/machine-id') && readFileSync('/etc/machine-id', 'utf8').trim() !== '';

describe('an ssh target that is this machine is resolved there before anything is written', () => {
  it('refuses the probe: rsync to a symlink on the target host that points at a parent of the source (dry run and real run)', () => {
    const dir = join(base, 'probe');
    const { source, digest } = sourceWithSibling(dir);
    const link = join(base, 'probe-link');
    symlinkSync(dir, link);
    const before = digest();
    const plan = writePlan('probe', 'rsync', link, { source });
    const dry = cli(['copy', plan, '--dry-run']);
    refused(dry, 'source-target-overlap');
    expect(dry.stderr).toContain(`real paths ${source} and ${dir}`);
    expect(dry.stdout).not.toContain('*deleting');
    refused(cli(['copy', plan]), 'source-target-overlap');
    expect(digest()).toEqual(before);
    expect(existsSync(join(base, 'state', 'probe.copy.db'))).toBe(false);
  });

  it('refuses a target that resolves inside the source on the target host', () => {
    const link = join(base, 'into-source');
    symlinkSync(storage.root, link);
    const before = treeDigest(storage.root);
    refused(cli(['copy', writePlan('into', 'tar', join(link, 'copy'))]), 'source-target-overlap');
    expect(treeDigest(storage.root)).toEqual(before);
  });

  it('refuses when the target host cannot resolve the path, also with --hosts-differ while the machine ids match', () => {
    const target = join(base, 'unresolved-target');
    const plan = writePlan('unresolved', 'rsync', target);
    const r = cli(['copy', plan], [noRealpath()]);
    refused(r, 'target-unresolved');
    refused(cli(['copy', plan, '--hosts-differ'], [noRealpath()]), 'target-unresolved');
    expect(existsSync(target)).toBe(false);
  });

  it.skipIf(!hasMachineId)(
    'another machine that cannot resolve the path: refused, unless --hosts-differ says the hosts differ',
    () => {
      const target = join(base, 'other-host-target');
      const plan = writePlan('other-host', 'rsync', target);
      const bins = [noRealpath(), otherMachine()];
      const r = cli(['copy', plan], bins);
      refused(r, 'target-unresolved');
      expect(r.stderr).toContain('--hosts-differ');
      expect(existsSync(target)).toBe(false);
      const ok = cli(['copy', plan, '--hosts-differ'], bins);
      expect(ok.code, ok.stderr).toBe(0);
      expect(treeDigest(target)).toEqual(treeDigest(storage.root));
    },
  );
});

describe('rsync: the itemised dry run is the last line of defence', () => {
  it('refuses when the target host answers with the path as written (a symlink to the parent of the source): dry run and real run', () => {
    const dir = join(base, 'lying');
    const { source, digest } = sourceWithSibling(dir);
    const link = join(base, 'lying-link');
    symlinkSync(dir, link);
    // A realpath that resolves nothing and a stat that answers one made-up identity for every
    // directory: the overlap check sees two separate directories and lets it pass.
    const lying = [
      wrapperDir(join(base, 'lying-realpath'), 'realpath', 'for a; do last=$a; done; echo "$last"'),
      wrapperDir(join(base, 'lying-stat'), 'stat', 'echo 1:1'),
    ];
    const before = digest();
    const plan = writePlan('lying', 'rsync', link, { source });
    const dry = cli(['copy', plan, '--dry-run'], lying);
    refused(dry, 'rsync-deletes-source');
    expect(dry.stderr).toContain(`the target resolves to ${dir}`);
    refused(cli(['copy', plan], lying), 'rsync-deletes-source');
    expect(digest()).toEqual(before);
    expect(existsSync(join(base, 'state', 'lying.copy.db'))).toBe(false);
  });
});

describe('rsync to an ssh target: the remote path never reaches the remote shell', () => {
  it('passes -s, so the target path is not on the ssh command line (spaces and all)', () => {
    const target = join(base, 'protected target');
    const r = cli(['copy', writePlan('protect', 'rsync', target)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      `$ rsync -a --delete -s -e 'ssh -o BatchMode=yes' '--out-format=%l %n' ${storage.root}/. 'git@gitaly-here:${target}/'`,
    );
    expect(treeDigest(target)).toEqual(treeDigest(storage.root));
    const rsyncCalls = ssh.calls().filter((c) => c.includes(' rsync --server'));
    expect(rsyncCalls.length).toBeGreaterThan(0);
    for (const c of rsyncCalls) expect(c).not.toContain('protected');
  });

  it("refuses the probe's backtick target as a plan error (2, file:line:col) and runs nothing", () => {
    const marker = join(base, 'backtick-ran');
    const plan = writePlan('backtick', 'rsync', `${base}/rt\`touch$IFS${marker}\``);
    const before = ssh.calls().length;
    const r = cli(['copy', plan]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('backtick.yaml:6:19: copy.target.path: "`" is refused in a path');
    expect(existsSync(marker)).toBe(false);
    expect(ssh.calls().length).toBe(before);
  });
});
