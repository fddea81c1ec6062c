// `shardmove copy` killed in the middle (SIGKILL, no cleanup) and run again. rsync and backup resume
// (backup does not redo repositories restored before the kill); tar refuses to continue until
// --wipe-target, after which the target is identical to the source.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './support/cli-harness.js';
import type { Storage } from './support/git-storage.js';
import { createStorage, refsOf, tempDir, treeDigest, wrapperDir } from './support/git-storage.js';

let base: string;
let storage: Storage;

beforeAll(() => {
  base = tempDir('shardmove-copy-kill-');
  storage = createStorage(base);
});

function writePlan(name: string, method: string, target: string): string {
  const file = join(base, `${name}.yaml`);
  writeFileSync(
    file,
    `version: 1\nname: ${name}\ncopy:\n  method: ${method}\n  source: { path: ${storage.root} }\n  target: { path: ${target} }\n`,
  );
  return file;
}

function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: base,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Starts the copy in its own process group, waits for `marker` (a wrapper hangs there), then SIGKILLs the group. */
async function killAt(args: string[], env: Record<string, string>, marker: string): Promise<void> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: base,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let said = '';
  child.stdout?.on('data', (c) => (said += String(c)));
  child.stderr?.on('data', (c) => (said += String(c)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let early: number | null | undefined;
  void exited.then((c) => (early = c));
  while (!existsSync(marker)) {
    if (early !== undefined) throw new Error(`copy exited (${early}) before reaching ${marker}:\n${said}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  process.kill(-child.pid!, 'SIGKILL');
  await exited;
}

const pathWith = (bin: string) => ({ PATH: `${bin}:${process.env['PATH']}` });

describe('shardmove copy: killed and run again', () => {
  it('rsync resumes: the second run completes the copy and verifies', async () => {
    const target = join(base, 'rsync-target');
    const plan = writePlan('kill-rsync', 'rsync', target);
    const marker = join(base, 'rsync.marker');
    // Copies part of the tree (no pools), then hangs: killed half-way.
    const bin = wrapperDir(
      join(base, 'w-rsync'),
      'rsync',
      `"$REAL" --exclude=@pools "$@"\ntouch ${marker}\nsleep 1000`,
    );
    await killAt(['copy', plan], pathWith(bin), marker);
    const status = cli(['status', plan]);
    expect(status.stdout).toContain('copying (interrupted; run copy again)');
    expect(existsSync(join(target, '@pools'))).toBe(false);
    const r = cli(['copy', plan]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('no differences');
    expect(treeDigest(target)).toEqual(treeDigest(storage.root));
  });

  it('tar refuses to continue after an interruption; --wipe-target starts over and ends identical', async () => {
    const target = join(base, 'tar-target');
    const plan = writePlan('kill-tar', 'tar', target);
    const marker = join(base, 'tar.marker');
    // The extracting side takes only the first 40 KB of the archive, then hangs.
    const bin = wrapperDir(
      join(base, 'w-tar'),
      'tar',
      `case " $* " in *" -xf "*) head -c 40000 | "$REAL" "$@" 2>/dev/null; touch ${marker}; sleep 1000;; *) exec "$REAL" "$@";; esac`,
    );
    await killAt(['copy', plan], pathWith(bin), marker);
    const partial = treeDigest(target);
    expect(partial.length).toBeGreaterThan(0);
    expect(partial).not.toEqual(treeDigest(storage.root));

    const again = cli(['copy', plan]);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain('[tar-interrupted]');
    expect(again.stderr).toContain('--wipe-target');
    expect(treeDigest(target)).toEqual(partial);

    const wiped = cli(['copy', plan, '--wipe-target']);
    expect(wiped.code, wiped.stderr).toBe(0);
    expect(wiped.stdout).toContain(`emptying ${target} (--wipe-target)`);
    expect(treeDigest(target)).toEqual(treeDigest(storage.root));
  });

  it('backup resumes repository by repository: what was restored before the kill is not restored again', async () => {
    const target = join(base, 'backup-target');
    const plan = writePlan('kill-backup', 'backup', target);
    const marker = join(base, 'backup.marker');
    const clones = join(base, 'clones.log');
    writeFileSync(clones, '');
    // Logs every clone; the second one of the first run hangs.
    const script = (hangAt: number) =>
      `if [ "$1" = clone ]; then echo "$*" >> ${clones}; if [ ${hangAt} -gt 0 ] && [ "$(wc -l < ${clones})" -ge ${hangAt} ]; then touch ${marker}; sleep 1000; fi; fi\nexec "$REAL" "$@"`;
    await killAt(['copy', plan], pathWith(wrapperDir(join(base, 'w-git1'), 'git', script(2))), marker);
    const firstRun = readFileSync(clones, 'utf8').split('\n').filter(Boolean);
    expect(firstRun).toHaveLength(2);
    const restoredFirst = storage.repos.filter((rel) => existsSync(join(target, rel)));
    expect(restoredFirst).toHaveLength(1);
    expect(cli(['status', plan]).stdout).toMatch(/repositories 1\/6/);

    writeFileSync(clones, '');
    const r = cli(['copy', plan], pathWith(wrapperDir(join(base, 'w-git2'), 'git', script(0))));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('no differences');
    const secondRun = readFileSync(clones, 'utf8');
    expect(secondRun).not.toContain(`${restoredFirst[0]}.bundle`);
    // Five repositories have refs (the empty one is created with git init, not cloned); one was done.
    expect(secondRun.split('\n').filter(Boolean)).toHaveLength(4);
    for (const rel of storage.repos) expect(refsOf(join(target, rel))).toEqual(refsOf(join(storage.root, rel)));
  });
});
