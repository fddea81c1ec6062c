/**
 * A revert never says "back" while items the forward run sent away are not: items its bulk job moved
 * with a move that failed after the switch (the forward checkpoint has them as `left`, "now on
 * cluster", with its own move ids), and moves of the forward run still in GitLab's queue when it
 * ended (quarantined as stuck). Judged from the sandbox's own records: where each repository is,
 * and the moves it recorded.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { SeenRequest } from './support/hold-proxy.js';
import { startProxiedSandbox } from './support/hold-proxy.js';
import { ADMIN_TOKEN, movesOf, runCli, sandboxEnv, storagesOf, tempDir, writePlan } from './support/cli-harness.js';
import { FakeClock } from './support/fake-clock.js';
import { SIM_START } from './support/sim-harness.js';
import { seededSimulation } from './support/sim-speeda.js';
import { commandsOn } from './support/sim-harness.js';
import { heldClock } from './support/sim-speedf.js';

const KINDS = ['projects', 'snippets', 'groups'] as const;

async function everything(url: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const kind of KINDS) for (const [id, s] of await storagesOf(url, kind)) out.set(`${kind}:${id}`, s);
  return out;
}

/** Forward rows in a state that hold a move id of the forward run. */
function rowsWithMoves(file: string, state: 'left' | 'quarantined'): string[] {
  const store = openCheckpoint(file, { readOnly: true });
  try {
    return KINDS.flatMap((k) =>
      store
        .itemsInState(k, null, state, 1_000_000)
        .filter((r) => r.moveId !== null)
        .map((r) => `${k}:${r.id}`),
    );
  } finally {
    store.close();
  }
}

describe('shardmove revert: nothing the forward run sent away is left behind', { timeout: 150_000 }, () => {
  it('moves back items a bulk forward run left on the destination with moves that failed after the switch', async () => {
    // On the simulated clock (./support/sim-harness.ts): the orchestrator and the sandbox in this
    // process, every poll, backoff and move duration a timer of one FakeClock.
    const { dir, sim, env } = await seededSimulation(
      'revert-after-switch',
      { projects: 30, snippets: 4, groups: 3 },
      { moveDurationMs: 20, workers: 10, faults: { failAfterSwitchRate: 0.3, seed: 11 } },
    );
    const sandbox = sim;
    const plan = writePlan(dir, { mode: 'bulk', concurrency: 10 });
    const before = await everything(sandbox.url);
    const forward = await sim.shardmove(['run', plan, '--state', 'fwd.db'], { cwd: dir, env });
    expect([0, 3], `${forward.stdout}${forward.stderr}`).toContain(forward.code);
    // The situation: rows the forward run recorded as left, with its own moves, on the destination.
    const left = rowsWithMoves(join(dir, 'fwd.db'), 'left');
    expect(left.length, 'forward rows left with a move of the forward run').toBeGreaterThan(0);
    const middle = await everything(sandbox.url);
    for (const key of left) expect(middle.get(key), key).toBe('cluster');

    const revert = await sim.shardmove(['revert', plan, '--state', 'fwd.db', '--yes'], { cwd: dir, env });
    const after = await everything(sandbox.url);
    // Every item the forward run sent to cluster is home, the left ones included.
    for (const [key, was] of before) if (was !== 'cluster') expect(after.get(key), key).toBe(was);
    expect(revert.code, `${revert.stdout}${revert.stderr}`).toBe(0);
    expect(revert.stdout).toContain('REVERTED');
  });

  it("moves back what a bulk forward run's job moved after the run was killed (moves its checkpoint never recorded)", async () => {
    // On processes: the subject is a run killed with SIGKILL (no last checkpoint write). Bulk jobs
    // wait 100 ms in the sandbox's queue, not its default 2 s: the held POST's answer never reaches
    // the run whatever the wait, so it changes only how long the test waits.
    const { dir, sandbox, proxy } = await startProxiedSandbox(
      'revert-bulk-killed',
      ['--move-duration', '30', '--workers', '10', '--bulk-delay', '100ms'],
      { projects: 12, snippets: 2, groups: 2 },
    );
    const plan = writePlan(dir, { mode: 'bulk', from: ['nfs-1'] });
    const env = sandboxEnv(proxy.url);
    const before = await everything(sandbox.url);
    // Killed the moment its bulk POST reached the instance: the job runs on without it.
    let child: ChildProcess | undefined;
    const run = runCli(['run', plan, '--state', 'fwd.db'], { cwd: dir, env, onStart: (c) => (child = c) });
    await proxy.arm({
      match: (r: SeenRequest) => r.method === 'POST' && r.url.startsWith('/api/v4/project_repository_storage_moves'),
      forward: true,
    });
    child!.kill('SIGKILL');
    expect((await run).code).toBeNull();
    proxy.release();
    const onNfs1 = [...before].filter(([k, s]) => k.startsWith('projects:') && s === 'nfs-1').map(([k]) => k);
    expect(onNfs1.length).toBeGreaterThan(0);
    for (let i = 0; i < 400; i++) {
      const now = await everything(sandbox.url);
      if (onNfs1.every((k) => now.get(k) === 'cluster')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const middle = await everything(sandbox.url);
    for (const k of onNfs1) expect(middle.get(k), k).toBe('cluster');
    expect(rowsWithMoves(join(dir, 'fwd.db'), 'left')).toEqual([]);

    const revert = await runCli(['revert', plan, '--state', 'fwd.db', '--yes'], { cwd: dir, env });
    expect(await everything(sandbox.url)).toEqual(before);
    expect(revert.code, `${revert.stdout}${revert.stderr}`).toBe(0);
  });

  it('refuses while moves of the forward run sit in GitLab queue (quarantined as stuck); once they ran, takes those items back too', async () => {
    const dir = tempDir('revert-queued');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    // On the simulated clock: the commands in this process on a FakeClock, so their polls and
    // stuck limits take no real time. The sandbox's clock stands still until the test moves it: its
    // one worker starts a move and never ends it, the rest wait in the queue (`scheduled`), as
    // behind a busy Sidekiq.
    const clock = new FakeClock(SIM_START);
    const sbClock = heldClock(clock, Date.parse('2026-06-01T00:00:00Z'));
    const { shardmove: runCli } = commandsOn(clock);
    const seed = structuredClone(loadSeed());
    seed.inventory = { projects: [1, 2, 3, 4, 5].map((id) => ({ id, storage: 'nfs-1' })) };
    const sb = await startSandbox({ seed, moveDurationMs: 1000, workers: 1, clock: sbClock });
    onTestFinished(() => sb.close());
    const advance = async (ms: number) => {
      sbClock.shift(ms);
      sb.state.engine.kick();
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    };
    const plan = join(dir, 'plan.yaml');
    writePlanFile(plan);
    const env = sandboxEnv(sb.url);
    const before = await storagesOf(sb.url, 'projects');
    const weightsBefore = await weightsOf(sb.url);

    const forward = await runCli(['run', plan, '--state', 'fwd.db'], { cwd: dir, env });
    expect(forward.code, `${forward.stdout}${forward.stderr}`).toBe(3);
    const stuck = rowsWithMoves(join(dir, 'fwd.db'), 'quarantined');
    expect(stuck.length).toBe(5);
    const alive = (await movesOf(sb.url, 'project')).filter((m) => !['finished', 'failed'].includes(m.state));
    expect(alive.map((m) => m.state).sort()).toEqual(['scheduled', 'scheduled', 'scheduled', 'scheduled', 'started']);
    const weightsForward = await weightsOf(sb.url);

    for (const args of [['--yes'], ['--dry-run']]) {
      const r = await runCli(['revert', plan, '--state', 'fwd.db', ...args], { cwd: dir, env });
      expect(r.code, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(4);
      expect(r.stderr).toContain('5 move(s) of the forward run');
      expect(r.stderr).toContain('still queued or running on the instance');
      expect(r.stderr).toMatch(/then: shardmove revert \S*plan\.yaml --state fwd\.db/);
      if (args.includes('--dry-run')) expect(r.stdout).toContain('(the revert refuses until they end)');
      expect(r.stdout).not.toContain('REVERTED');
    }
    // Nothing written: no move of the revert, the forward run's weights in place.
    expect((await movesOf(sb.url, 'project')).length).toBe(5);
    expect(await weightsOf(sb.url)).toEqual(weightsForward);

    // GitLab's queue runs: every move of the forward run ends, each repository on cluster.
    for (let i = 0; i < 20 && (await movesOf(sb.url, 'project')).some((m) => m.state !== 'finished'); i++)
      await advance(5_000);
    expect([...(await storagesOf(sb.url, 'projects')).values()]).toEqual([
      'cluster',
      'cluster',
      'cluster',
      'cluster',
      'cluster',
    ]);
    // The sandbox's clock runs from now on, ten times as fast as the commands' (as the test's
    // ticker drove it beside real time), so the revert's own moves end.
    sbClock.run(10);
    const revert = await runCli(['revert', plan, '--state', 'fwd.db', '--yes'], { cwd: dir, env });
    expect(revert.code, `${revert.stdout}${revert.stderr}`).toBe(0);
    expect(await storagesOf(sb.url, 'projects')).toEqual(before);
    const positive = (w: Record<string, number>) => Object.fromEntries(Object.entries(w).filter(([, v]) => v > 0));
    expect(positive(await weightsOf(sb.url))).toEqual(positive(weightsBefore));
  });
});

async function weightsOf(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}

/** Projects off nfs-1, one at a time, a move called stuck after a second queued or running. */
function writePlanFile(file: string): void {
  writeFileSync(
    file,
    [
      'version: 1',
      'name: it',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      '  timeout: 10s',
      'move:',
      '  from: [nfs-1]',
      '  to: cluster',
      '  kinds: [projects]',
      '  concurrency: 5',
      'weights: { cluster: 100, nfs-1: 0 }',
      'poll: { interval: 100ms, stuck_scheduled_after: 1s, stuck_running_after: 1s, stuck_running_per_gb: 0s }',
      'retry: { max_attempts: 2, backoff: 100ms }',
      'verify: true',
      '',
    ].join('\n'),
  );
}
