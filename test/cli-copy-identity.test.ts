// A hostile probe of `shardmove copy`: a target that is the source, its parent or a directory inside
// it under another name. A bind mount of the source's parent (what mounting one NFS export twice
// does too) made rsync's dry run print `*deleting src/...` and exit 0, and the real run delete the
// source and everything beside it; `tar --wipe-target` emptied the source before reading it; over
// ssh to this machine the same. The guards compared path strings; they compare identities now.
// Judged from the files on disk: the source, and a bystander beside it, byte for byte.
//
// Bind mounts need root: each CLI that needs one runs in a private mount namespace (`unshare -m`),
// so the mount vanishes with it and no other process on the machine sees it. Without the
// permission those tests are skipped, with a message; the symlinked and dotted paths need no root.
//
// A CLI that needs a mount namespace (or a PATH of its own) is a process of its own; the others run
// the same command line in this process (runCommandLine, as the executable does), with the fake
// ssh first on this process's PATH, so the copy's sh, ssh and rsync find it as they would.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BIN } from './support/cli-harness.js';
import { fakeSshDir, git, tempDir, treeDigest, wrapperDir } from './support/git-storage.js';
import { commandHere } from './support/sim-speeda.js';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `mount --bind` for each pair, then the command, in a private mount namespace. */
function inMounts(binds: ReadonlyArray<readonly [string, string]>, argv: readonly string[]): string[] {
  const script = 'while [ "$1" != -- ]; do mount --bind "$1" "$2" || exit 99; shift 2; done; shift; exec "$@"';
  return ['unshare', '-m', '--propagation', 'private', 'sh', '-c', script, 'sh', ...binds.flat(), '--', ...argv];
}

const CAN_BIND = (() => {
  const d = tempDir('shardmove-bind-probe-');
  mkdirSync(join(d, 'a'));
  mkdirSync(join(d, 'b'));
  const [cmd, ...args] = inMounts([[join(d, 'a'), join(d, 'b')]], ['true']);
  return spawnSync(cmd!, args).status === 0;
})();
if (!CAN_BIND)
  console.warn(
    'cli-copy-identity.test.ts: bind-mount tests skipped: `unshare -m` and `mount --bind` are not permitted here (they need root)',
  );

let base: string;
let ssh: ReturnType<typeof fakeSshDir>;

beforeAll(() => {
  base = tempDir('shardmove-copy-id-');
  ssh = fakeSshDir(join(base, 'ssh'));
  // For the commands run in this process: what they start finds the fake ssh first.
  vi.stubEnv('PATH', [ssh.bin, process.env['PATH']].join(':'));
});
afterAll(() => vi.unstubAllEnvs());

/**
 * The CLI, with the fake ssh (this machine) first on PATH: a process inside `binds` (a private
 * mount namespace) or with `bins` first on its PATH when there are any, in this process otherwise.
 */
async function cli(
  args: string[],
  opts: { binds?: ReadonlyArray<readonly [string, string]>; bins?: string[] } = {},
): Promise<Result> {
  if (!opts.binds?.length && !opts.bins?.length) return commandHere(args, { cwd: base });
  const PATH = [...(opts.bins ?? []), ssh.bin, process.env['PATH']].join(':');
  const argv = [process.execPath, BIN, ...args];
  const [cmd, ...rest] = opts.binds?.length ? inMounts(opts.binds, argv) : argv;
  const r = spawnSync(cmd!, rest, { cwd: base, env: { ...process.env, PATH }, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/**
 * `dir/p/src`, a storage of one bare repository, beside `dir/p/other/keep.txt`: what an rsync into
 * `dir/p` would delete. Small, so a regression destroys only this.
 */
function layout(name: string): { dir: string; parent: string; source: string; digest: () => string[] } {
  const dir = join(base, name);
  const parent = join(dir, 'p');
  const source = join(parent, 'src');
  git(['init', '-q', '--bare', join(source, '@hashed', 'ab', 'cd', 'one.git')]);
  mkdirSync(join(parent, 'other'));
  writeFileSync(join(parent, 'other', 'keep.txt'), 'bystander\n');
  return { dir, parent, source, digest: () => treeDigest(parent) };
}

let plans = 0;
function writePlan(method: string, source: string, target: string, host: string | null): string {
  const file = join(base, `plan-${++plans}.yaml`);
  writeFileSync(
    file,
    `version: 1\nname: id-${plans}\ncopy:\n  method: ${method}\n  source: { path: ${JSON.stringify(source)} }\n  target: { path: ${JSON.stringify(target)}${host ? `, host: ${host}` : ''} }\n`,
  );
  return file;
}

/** Each method's way to be dangerous: tar with --wipe-target (on anything: --wipe-any-target). */
const METHODS: Array<[string, string[]]> = [
  ['rsync', []],
  ['tar', ['--wipe-target', '--wipe-any-target']],
  ['backup', []],
];
const HOSTS: Array<[string, string | null]> = [
  ['local', null],
  ['ssh to this machine', 'git@gitaly-here'],
];

/**
 * Dry run and real run refused with `rule` (exit 4), and the source and its bystander as they were;
 * returns the real run's result (for what a test reads in its message).
 */
async function expectRefused(
  plan: string,
  flags: string[],
  rule: string,
  digest: () => string[],
  opts: Parameters<typeof cli>[1] = {},
): Promise<Result> {
  const before = digest();
  let real: Result | undefined;
  for (const dry of [true, false]) {
    const r = await cli(['copy', plan, ...flags, ...(dry ? ['--dry-run'] : [])], opts);
    expect(r.code, `${dry ? 'dry run' : 'real run'}: ${r.stderr}${r.stdout}`).toBe(4);
    expect(r.stderr).toContain(`[${rule}]`);
    expect(r.stdout).not.toContain('*deleting');
    expect(digest()).toEqual(before);
    if (!dry) real = r;
  }
  return real!;
}

describe('the source or its parent under another path, no root needed', { timeout: 120_000 }, () => {
  for (const [where, host] of HOSTS) {
    for (const [method, flags] of METHODS) {
      it(`${method}, ${where}: a symlinked parent, and a symlink through ./ and ../ to it`, async () => {
        const { dir, parent, source, digest } = layout(`sym ${method} ${host ? 'ssh' : 'local'}`);
        symlinkSync(parent, join(dir, 'link'));
        mkdirSync(join(dir, 'q', 'r'), { recursive: true });
        symlinkSync('q/./r/../../p', join(dir, 'dotted'));
        for (const target of [join(dir, 'link'), join(dir, 'dotted'), `/proc/self/root${parent}`])
          await expectRefused(writePlan(method, source, target, host), flags, 'source-target-overlap', digest);
      });
    }
  }

  for (const [where, host] of HOSTS) {
    it(`a checkpoint inside the target or the source, ${where}: refused, and not created`, async () => {
      const { dir, source, digest } = layout(`state inside ${host ? 'ssh' : 'local'}`);
      const target = join(dir, 'target');
      mkdirSync(target);
      symlinkSync(target, join(dir, 'target-link'));
      const plan = writePlan('rsync', source, target, host);
      const before = digest();
      for (const state of [
        join(target, 'x.copy.db'),
        join(dir, 'target-link', 'x.copy.db'),
        join(source, 'x.copy.db'),
      ]) {
        const r = await cli(['copy', plan, '--state', state]);
        expect(r.code, r.stderr).toBe(4);
        expect(r.stderr).toContain('[state-path-overlap]');
        expect(existsSync(state)).toBe(false);
        expect(digest()).toEqual(before);
      }
      expect(readdirSync(target)).toEqual([]);
    });
  }

  it('a target written as /a/./b/../b is refused by the plan itself (exit 2), running nothing', async () => {
    const { parent, source, digest } = layout('dots');
    const before = digest();
    const r = await cli(['copy', writePlan('rsync', source, `${parent}/./other/../../p`, null)]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('[source-target-overlap]');
    expect(digest()).toEqual(before);
  });
});

describe.skipIf(!CAN_BIND)('through a bind mount (root, in a private mount namespace)', { timeout: 120_000 }, () => {
  for (const [where, host] of HOSTS) {
    for (const [method, flags] of METHODS) {
      it(`${method}, ${where}: the target is a bind mount of the source's parent`, async () => {
        const { dir, parent, source, digest } = layout(`bind ${method} ${host ? 'ssh' : 'local'}`);
        const bind = join(dir, 'bind');
        mkdirSync(bind);
        // The real run of the refused pair is the command whose message is read (one process fewer).
        const r = await expectRefused(writePlan(method, source, bind, host), flags, 'source-target-overlap', digest, {
          binds: [[parent, bind]],
        });
        expect(r.code, r.stderr + r.stdout).toBe(4);
        expect(r.stderr).toContain(
          `(real paths ${source} and ${bind}; ${bind} is a parent of ${source} under another name (a bind mount, or one file system mounted twice))`,
        );
      });
    }

    it(`tar, ${where}: the target is inside a bind mount of a directory inside the source`, async () => {
      const { dir, source, digest } = layout(`bind inside ${host ? 'ssh' : 'local'}`);
      const view = join(dir, 'view');
      mkdirSync(view);
      const plan = writePlan('tar', source, join(view, 'copy'), host);
      const binds = [[join(source, '@hashed'), view]] as const;
      const r = await cli(['copy', plan], { binds });
      expect(r.stderr).toContain(`${join(view, 'copy')} is inside ${source} under another name`);
      await expectRefused(plan, ['--wipe-target', '--wipe-any-target'], 'source-target-overlap', digest, { binds });
    });

    it(`rsync, ${where}: the source is a bind mount of a directory inside the target`, async () => {
      const { dir, parent, source, digest } = layout(`bind source ${host ? 'ssh' : 'local'}`);
      const view = join(dir, 'source-view');
      mkdirSync(view);
      const plan = writePlan('rsync', view, parent, host);
      const r = await expectRefused(plan, [], 'source-target-overlap', digest, { binds: [[source, view]] });
      expect(r.stderr).toContain(`${parent} is a parent of ${view} under another name`);
    });

    it(`rsync, ${where}: a bind mount of the source's parent inside the target is seen in the dry run's deletions`, async () => {
      const { dir, parent, source, digest } = layout(`bind below ${host ? 'ssh' : 'local'}`);
      const target = join(dir, 'target');
      mkdirSync(join(target, 'mnt'), { recursive: true });
      const plan = writePlan('rsync', source, target, host);
      const binds = [[parent, join(target, 'mnt')]] as const;
      const r = await expectRefused(plan, [], 'rsync-deletes-source', digest, { binds });
      expect(r.stderr).toMatch(/rsync's dry run would delete \d+ paths that are the source/);
      expect(r.stderr).toContain(join(target, 'mnt', 'src'));
    });
  }

  it("a host whose stat and realpath lie about the target: this machine's mount table still sees it", async () => {
    const { dir, parent, source, digest } = layout('bind-lying-stat');
    const bind = join(dir, 'bind');
    mkdirSync(bind);
    // Every directory answers one made-up identity there, and realpath the path as written: the ssh
    // host's view sees nothing; the place of the target in its file system, read here, does.
    const lying = [
      wrapperDir(join(base, 'lying-stat'), 'stat', 'echo 1:1'),
      wrapperDir(join(base, 'lying-realpath'), 'realpath', 'for a; do last=$a; done; echo "$last"'),
    ];
    await expectRefused(writePlan('rsync', source, bind, 'git@gitaly-here'), [], 'source-target-overlap', digest, {
      binds: [[parent, bind]],
      bins: lying,
    });
  });
});
