/**
 * `shardmove revert` works where its forward run worked, or not at all: under another URL (the
 * plan's `${VAR}` pointing elsewhere), on another instance behind the same URL, or under a changed
 * plan, it refuses (exit 4) before any write and says why. Judged from the sandboxes' own records:
 * their moves, weights and where each repository is. The sandboxes and the commands run in this
 * process on one simulated clock (./support/sim-harness.ts): what is judged is the revert's
 * refusal and its exit code, not the process boundary, and no move waits real time.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { ADMIN_TOKEN, movesOf, sandboxEnv, storagesOf, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { FakeClock } from './support/fake-clock.js';
import { SIM_START } from './support/sim-harness.js';
import { commandsOn } from './support/sim-harness.js';
import { startSimSandbox } from './support/sim-speedb.js';

const COUNTS = { projects: 12, snippets: 2, groups: 2 };
const KINDS = ['project', 'snippet', 'group'] as const;

/** Revert checkpoints anywhere under `dir` (wherever the default checkpoint lives): a refused revert writes none. */
function revertFilesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.revert.db'));
}

async function weightsOf(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}

/** Everything a revert could change on a sandbox: every move it recorded, its weights, where each project is. */
async function recordsOf(url: string): Promise<unknown> {
  const moves: unknown[] = [];
  for (const k of KINDS) moves.push(...(await movesOf(url, k)));
  return { moves, weights: await weightsOf(url), projects: [...(await storagesOf(url, 'projects'))] };
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

function workDir(name: string): string {
  const dir = tempDir(name);
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A simulated clock and the way to run commands on it, and sandboxes on it (`--move-duration 30
 * --workers 10` and `options`), each closed when the test ends.
 */
function simulation() {
  const clock = new FakeClock(SIM_START);
  const sandbox = (options: { seed: string; port?: number; db?: string }): Promise<RunningSandbox> =>
    startSimSandbox(clock, { moveDurationMs: 30, workers: 10, ...options });
  return { ...commandsOn(clock), sandbox };
}

describe('shardmove revert on the instance and plan of its forward run only (one simulated clock)', () => {
  it('refuses another instance at another URL, saying which, and touches nothing there', async () => {
    const dir = workDir('revert-other-url');
    const seed = writeSeed(dir, COUNTS);
    const { sandbox, shardmove } = simulation();
    const a = await sandbox({ seed });
    const b = await sandbox({ seed });
    const plan = writePlan(dir, { concurrency: 4 });
    const forward = await shardmove(['run', plan], { cwd: dir, env: sandboxEnv(a.url) });
    expect(forward.code, forward.stderr).toBe(0);
    const bBefore = await recordsOf(b.url);
    const aAfterForward = await recordsOf(a.url);

    for (const args of [['--yes'], ['--dry-run'], ['--yes', '--accept-plan-change']]) {
      const r = await shardmove(['revert', plan, ...args], { cwd: dir, env: sandboxEnv(b.url) });
      expect(r.code, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(4);
      expect(r.stdout).not.toContain('REVERTED');
      if (args.includes('--accept-plan-change')) {
        // The plan change accepted, the instance still is not the forward run's: it holds none of its moves.
        expect(r.stderr).toContain(`${b.url} is not the instance the forward run`);
        expect(r.stderr).toContain(`the forward run worked on ${a.url}, as recorded`);
      } else {
        expect(r.stderr).toContain(`the instance URL: ${a.url} as recorded by the forward run, ${b.url} now`);
        expect(r.stderr).toMatch(/If the change is intended: shardmove revert \S*plan\.yaml --accept-plan-change/);
      }
    }
    expect(await recordsOf(b.url)).toEqual(bBefore);
    expect(await recordsOf(a.url)).toEqual(aAfterForward);
    expect(revertFilesUnder(dir)).toEqual([]);
  });

  it('refuses another instance behind the same URL (it holds none of the forward run moves); the right one reverts', async () => {
    const dir = workDir('revert-same-url');
    const seed = writeSeed(dir, COUNTS);
    const port = await freePort();
    const { sandbox, shardmove } = simulation();
    const start = (db: string) => sandbox({ seed, port, db: join(dir, db) });
    let a = await start('a.db');
    const plan = writePlan(dir, { concurrency: 4 });
    const env = sandboxEnv(a.url);
    const before = await storagesOf(a.url, 'projects');
    const weightsBefore = await weightsOf(a.url);
    const forward = await shardmove(['run', plan], { cwd: dir, env });
    expect(forward.code, forward.stderr).toBe(0);

    // The same address, another instance of the same shape (the same ids): B, fresh.
    await a.close();
    const b = await start('b.db');
    expect(b.url).toBe(a.url);
    const bBefore = await recordsOf(b.url);
    for (const args of [['--yes'], ['--dry-run'], ['--yes', '--accept-plan-change']]) {
      const r = await shardmove(['revert', plan, ...args], { cwd: dir, env });
      expect(r.code, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(4);
      expect(r.stderr).toContain(`${b.url} is not the instance the forward run`);
      expect(r.stderr).toMatch(/without any record of the forward run's move \(project \d+: move \d+/);
    }
    expect(await recordsOf(b.url)).toEqual(bBefore);
    expect(revertFilesUnder(dir)).toEqual([]);

    // A again at that address: the revert goes through and everything is home.
    await b.close();
    a = await start('a.db');
    const revert = await shardmove(['revert', plan, '--yes'], { cwd: dir, env });
    expect(revert.code, `${revert.stdout}${revert.stderr}`).toBe(0);
    expect(await storagesOf(a.url, 'projects')).toEqual(before);
    const positive = (w: Record<string, number>) => Object.fromEntries(Object.entries(w).filter(([, v]) => v > 0));
    expect(positive(await weightsOf(a.url))).toEqual(positive(weightsBefore));
  });

  it('refuses a changed plan, naming the fields that changed; --accept-plan-change reverts under it', async () => {
    const dir = workDir('revert-plan-changed');
    const { sandbox, shardmove } = simulation();
    const a = await sandbox({ seed: writeSeed(dir, COUNTS) });
    const plan = writePlan(dir, { concurrency: 4 });
    const env = sandboxEnv(a.url);
    const before = await storagesOf(a.url, 'projects');
    const forward = await shardmove(['run', plan], { cwd: dir, env });
    expect(forward.code, forward.stderr).toBe(0);
    const afterForward = await recordsOf(a.url);
    writeFileSync(plan, readFileSync(plan, 'utf8').replace('concurrency: 4', 'concurrency: 6'));

    const refused = await shardmove(['revert', plan, '--yes'], { cwd: dir, env });
    expect(refused.code, refused.stderr).toBe(4);
    expect(refused.stderr).toContain('move.concurrency: 4 -> 6');
    expect(refused.stderr).not.toContain('instance URL');
    expect(await recordsOf(a.url)).toEqual(afterForward);
    expect(revertFilesUnder(dir)).toEqual([]);

    const accepted = await shardmove(['revert', plan, '--yes', '--accept-plan-change'], { cwd: dir, env });
    expect(accepted.code, `${accepted.stdout}${accepted.stderr}`).toBe(0);
    expect(await storagesOf(a.url, 'projects')).toEqual(before);
    // Accepted once: the revert's own checkpoint runs under this plan now, and says so again without the flag.
    const again = await shardmove(['revert', plan, '--yes'], { cwd: dir, env });
    expect(again.code, `${again.stdout}${again.stderr}`).toBe(0);
  });
});
