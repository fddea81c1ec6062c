/**
 * Real Git storages for the `shardmove copy` tests: bare repositories laid out like a GitLab
 * storage, built with the system's `git`, plus a fake `ssh` that runs the remote command on this
 * machine (no network) and logs each invocation.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
};

export function git(args: string[], cwd?: string): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** refname -> object id of a bare repository. */
export function refsOf(gitDir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of git([`--git-dir=${gitDir}`, 'for-each-ref', '--format=%(objectname) %(refname)'])
    .split('\n')
    .filter(Boolean)) {
    const [oid, ref] = line.split(' ');
    out[ref!] = oid!;
  }
  return out;
}

/** A scratch working repository with `n` commits on main plus a feature branch and tags. */
function scratch(root: string, name: string, commits: number): string {
  const work = join(root, `.work-${name}`);
  git(['init', '-q', '-b', 'main', work]);
  for (let i = 0; i < commits; i++) {
    writeFileSync(join(work, `f${i}.txt`), `${name} ${i}\n`.repeat(50));
    git(['add', '.'], work);
    git(['commit', '-q', '-m', `${name} ${i}`], work);
  }
  git(['tag', 'v1'], work);
  git(['tag', '-a', '-m', 'annotated', 'v2'], work);
  git(['checkout', '-q', '-b', 'feature'], work);
  writeFileSync(join(work, 'feature.txt'), `${name} feature\n`);
  git(['add', '.'], work);
  git(['commit', '-q', '-m', 'feature'], work);
  git(['checkout', '-q', 'main'], work);
  return work;
}

function bareFrom(work: string, gitDir: string): void {
  mkdirSync(dirname(gitDir), { recursive: true });
  git(['init', '-q', '--bare', '-b', 'main', gitDir]);
  git(['push', '-q', gitDir, 'refs/heads/*:refs/heads/*', 'refs/tags/*:refs/tags/*'], work);
}

export interface Storage {
  root: string;
  /** Relative paths of every repository, sorted. */
  repos: string[];
  hooked: string;
  packed: string;
  loose: string;
  fork: string;
}

/**
 * A storage with: a packed repository under @hashed (several branches, tags, a keep-around-like
 * ref), a loose one under a group path, one with custom hooks, an object pool and a fork that borrows
 * from it through a relative alternates file, and an empty repository.
 */
export function createStorage(base: string): Storage {
  const root = join(base, 'storage');
  mkdirSync(root, { recursive: true });
  const packed = '@hashed/6b/86/6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b.git';
  const loose = 'group/loose.git';
  const hooked = '@hashed/d4/73/d4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f8ba4f8ef9fbf8a8ccb.git';
  const pool = '@pools/4e/07/4e07408562bedb8b60ce05c1decfe3ad16b72230967de01f640b7e4729b49fce.git';
  const fork = '@hashed/4b/22/4b227777d4dd1fc61c6f884f48641d02b4d121d3fd328cb08b5531fcacdabf8a.git';
  const empty = '@hashed/ef/2d/ef2d127de37b942baad06145e54b0c619a1f22327b2ebbcfbec78f5564afe39d.git';

  const w1 = scratch(base, 'packed', 5);
  bareFrom(w1, join(root, packed));
  git([
    `--git-dir=${join(root, packed)}`,
    'update-ref',
    'refs/keep-around/abc',
    refsOf(join(root, packed))['refs/heads/main']!,
  ]);
  git([`--git-dir=${join(root, packed)}`, 'gc', '-q']);

  bareFrom(scratch(base, 'loose', 3), join(root, loose));

  bareFrom(scratch(base, 'hooked', 2), join(root, hooked));
  const hooks = join(root, hooked, 'custom_hooks', 'pre-receive.d');
  mkdirSync(hooks, { recursive: true });
  writeFileSync(join(hooks, 'check'), '#!/bin/sh\necho custom hook\n');
  chmodSync(join(hooks, 'check'), 0o755);

  // The fork's own objects are only its extra commit; the rest it borrows from the pool.
  const wp = scratch(base, 'pool', 3);
  bareFrom(wp, join(root, pool));
  git([`--git-dir=${join(root, pool)}`, 'gc', '-q']);
  git(['init', '-q', '--bare', '-b', 'main', join(root, fork)]);
  const forkObjects = join(root, fork, 'objects');
  writeFileSync(join(forkObjects, 'info', 'alternates'), `${relative(forkObjects, join(root, pool, 'objects'))}\n`);
  git(['checkout', '-q', '-b', 'fork-only'], wp);
  writeFileSync(join(wp, 'fork.txt'), 'fork\n');
  git(['add', '.'], wp);
  git(['commit', '-q', '-m', 'fork'], wp);
  git(['push', '-q', join(root, fork), 'refs/heads/*:refs/heads/*', 'refs/tags/*:refs/tags/*'], wp);

  git(['init', '-q', '--bare', '-b', 'main', join(root, empty)]);
  return { root, repos: [empty, fork, hooked, packed, loose, pool].sort(), hooked, packed, loose, fork };
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * A directory holding a fake `ssh`: it drops ssh's options and the host, logs the call to
 * `<dir>/ssh.log` and runs the remote command here with `sh -c`, as sshd would on the host.
 */
export function fakeSshDir(base: string): { bin: string; log: string; calls: () => string[] } {
  const bin = join(base, 'fake-bin');
  mkdirSync(bin, { recursive: true });
  const log = join(base, 'ssh.log');
  writeFileSync(
    join(bin, 'ssh'),
    `#!/bin/sh
printf '%s' "$*" | tr '\\n' ' ' >> ${JSON.stringify(log)}; echo >> ${JSON.stringify(log)}
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-l|-p|-i|-F|-J) shift 2 ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
shift
exec sh -c "$*"
`,
  );
  chmodSync(join(bin, 'ssh'), 0o755);
  writeFileSync(log, '');
  return { bin, log, calls: () => readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}

/** Every file and directory under `dir` with its content hash and mode, for "identical" checks. */
export function treeDigest(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d).sort()) {
      const full = join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(full);
      if (st.isDirectory()) {
        out.push(`${r}/ ${(st.mode & 0o777).toString(8)}`);
        walk(full, r);
      } else
        out.push(
          `${r} ${(st.mode & 0o777).toString(8)} ${createHash('sha256').update(readFileSync(full)).digest('hex')}`,
        );
    }
  };
  walk(dir, '');
  return out;
}

/**
 * A directory with a wrapper for `name` that runs `script` (a POSIX shell body; $REAL is the real
 * program, "$@" its arguments) instead of the real program, for interrupting a copy at a known point.
 */
export function wrapperDir(base: string, name: string, script: string): string {
  const bin = join(base, `wrap-${name}`);
  mkdirSync(bin, { recursive: true });
  const real = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
  writeFileSync(join(bin, name), `#!/bin/sh\nREAL=${real}\n${script}\n`);
  chmodSync(join(bin, name), 0o755);
  return bin;
}
