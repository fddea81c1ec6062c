/**
 * `shardmove run` and `status` end to end: the sandbox and the CLI as separate processes over real
 * HTTP, judged by the sandbox's own view of where every repository is and which moves it recorded.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SandboxProcess } from './support/cli-harness.js';
import { movesOf, runCli, sandboxEnv, startSandboxProcess, storagesOf, tempDir, writePlan } from './support/cli-harness.js';

const KINDS = ['projects', 'snippets', 'groups'] as const;
const SOURCES = new Set(['nfs-1', 'nfs-2', 'default']);

let sandbox: SandboxProcess | undefined;
let dir: string | undefined;
afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function snapshotOf(url: string) {
  const storages = Object.fromEntries(await Promise.all(KINDS.map(async (k) => [k, Object.fromEntries(await storagesOf(url, k))] as const)));
  const moves = await Promise.all((['project', 'snippet', 'group'] as const).map((k) => movesOf(url, k)));
  return { storages, moves };
}

async function expectAllOnCluster(url: string) {
  for (const kind of KINDS) {
    const all = await storagesOf(url, kind);
    expect(all.size, kind).toBeGreaterThan(0);
    expect([...all.values()].filter((s) => s !== 'cluster'), kind).toEqual([]);
  }
}

describe('shardmove run (separate processes, real HTTP)', () => {
  it('throttled: moves every project, snippet and group wiki, verifies, exits 0; a second run does nothing', async () => {
    sandbox = await startSandboxProcess(['--move-duration', '30', '--workers', '20']);
    dir = tempDir('run-throttled');
    const plan = writePlan(dir);
    const r = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('DONE: every repository moved and verified');
    expect(r.stdout).toContain('Verification: passed');
    expect(existsSync(join(dir, 'state', 'it.db'))).toBe(true);
    expect(existsSync(join(dir, 'state', 'it.log'))).toBe(true);
    await expectAllOnCluster(sandbox.url);
    const before = await snapshotOf(sandbox.url);

    const again = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(again.code).toBe(0);
    expect((await snapshotOf(sandbox.url)).moves).toEqual(before.moves);
  });

  it('bulk: one POST per kind and storage, then polling; everything moves and verifies', async () => {
    sandbox = await startSandboxProcess(['--move-duration', '30', '--workers', '50']);
    dir = tempDir('run-bulk');
    const plan = writePlan(dir, { mode: 'bulk' });
    const r = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(r.code, r.stderr).toBe(0);
    await expectAllOnCluster(sandbox.url);
  });

  it('broken items end quarantined (exit 3) with their reasons in status --json', async () => {
    sandbox = await startSandboxProcess(['--move-duration', '20', '--workers', '20', '--broken-items', 'project:3,snippet:5']);
    dir = tempDir('run-broken');
    const plan = writePlan(dir, { from: ['nfs-1', 'nfs-2', 'default'] });
    const r = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout).toContain('DONE WITH QUARANTINED ITEMS');
    const status = await runCli(['status', plan, '--json'], { cwd: dir });
    expect(status.code).toBe(0);
    const report = JSON.parse(status.stdout) as { state: string; quarantined: { kind: string; id: number; reason: string; attempts: number }[] };
    expect(report.state).toBe('doneWithQuarantine');
    expect(report.quarantined.map((q) => `${q.kind}:${q.id}`).sort()).toEqual(['projects:3', 'snippets:5']);
    for (const q of report.quarantined) {
      expect(q.reason.length).toBeGreaterThan(0);
      expect(q.attempts).toBe(2);
    }
    const text = await runCli(['status', plan], { cwd: dir });
    expect(text.stdout).toMatch(/Quarantined \(2\):/);
  });

  it('--dry-run changes nothing on the sandbox and reports an estimate', async () => {
    sandbox = await startSandboxProcess(['--move-duration', '30']);
    dir = tempDir('run-dry');
    const plan = writePlan(dir);
    const before = await snapshotOf(sandbox.url);
    const r = await runCli(['run', plan, '--dry-run'], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('nothing was changed');
    expect(r.stdout).toMatch(/projects on nfs-1: \d+/);
    expect(r.stdout).toContain('estimated duration');
    expect(await snapshotOf(sandbox.url)).toEqual(before);
    const items = Object.values(before.storages.projects as Record<number, string>);
    expect(items.some((s) => SOURCES.has(s))).toBe(true);
    expect(existsSync(join(dir, 'state', 'it.dry-run.db'))).toBe(true);
    expect(existsSync(join(dir, 'state', 'it.db'))).toBe(false);
  });

  it('SIGINT: saves the checkpoint, exits 130; run again continues to done without a second move per item', async () => {
    sandbox = await startSandboxProcess(['--move-duration', '50', '--workers', '10']);
    dir = tempDir('run-sigint');
    const plan = writePlan(dir, { concurrency: 10 });
    const first = await runCli(['run', plan], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
      onStart: (child) => setTimeout(() => child.kill('SIGINT'), 2_500),
    });
    expect(first.code).toBe(130);
    expect(first.stderr).toContain('interrupted; run again to continue');
    const status = JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir })).stdout) as { state: string };
    expect(status.state).toBe('running or interrupted');

    const second = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(second.code, second.stderr).toBe(0);
    await expectAllOnCluster(sandbox.url);
    const moves = await movesOf(sandbox.url, 'project');
    const finished = moves.filter((m) => m.state === 'finished');
    expect(finished.length).toBe((await storagesOf(sandbox.url, 'projects')).size);
  });

  it('status without a checkpoint says so and exits 1', async () => {
    dir = tempDir('status-none');
    const plan = writePlan(dir);
    const r = await runCli(['status', plan], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no checkpoint');
  });
});
