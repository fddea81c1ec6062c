// Regression tests from a hostile probe of `shardmove copy` to an ssh target. The target "host" is
// this machine through a fake `ssh` that runs the remote command here (as sshd would), so an ssh
// target on this very machine, and what its remote shell does with the paths, are tested for real.
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './support/cli-harness.js';
import type { Storage } from './support/git-storage.js';
import { createStorage, fakeSshDir, tempDir, treeDigest } from './support/git-storage.js';

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
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: base, env: { ...process.env, PATH }, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function writePlan(name: string, method: string, target: string, host = 'git@gitaly-here'): string {
  const file = join(base, `${name}.yaml`);
  writeFileSync(file, `version: 1\nname: ${name}\ncopy:\n  method: ${method}\n  source: { path: ${storage.root} }\n  target: { path: ${JSON.stringify(target)}, host: ${host} }\n`);
  return file;
}

describe('rsync to an ssh target: the remote path never reaches the remote shell', () => {
  it('passes -s, so the target path is not on the ssh command line (spaces and all)', () => {
    const target = join(base, 'protected target');
    const r = cli(['copy', writePlan('protect', 'rsync', target)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`$ rsync -a --delete -s -e 'ssh -o BatchMode=yes' '--out-format=%l %n' ${storage.root}/. 'git@gitaly-here:${target}/'`);
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
