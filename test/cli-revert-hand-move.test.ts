/**
 * "Items moved again are skipped and listed, never chased": an item someone else is moving while the
 * revert reads it is left to that move, even when that move ends before the revert's POST would have
 * gone out (the POST would then be accepted and silently undo it). The moment is pinned: the
 * sandbox's clock stands still while the revert reads, and moves on while a hold proxy keeps the
 * revert's first write (the weights) waiting. Judged from the sandbox's own records.
 */
import { rmSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { ADMIN_TOKEN, movesOf, runCli, sandboxEnv, storagesOf, tempDir, writePlan } from './support/cli-harness.js';
import type { SeenRequest } from './support/hold-proxy.js';
import { startHoldProxy } from './support/hold-proxy.js';
import { realTimersAt } from './support/fake-clock.js';

describe('shardmove revert and a move someone else makes', { timeout: 120_000 }, () => {
  it('skips and lists an item being moved by hand when it is read, and leaves it where that move takes it', async () => {
    const dir = tempDir('revert-hand-move');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    // The sandbox's clock follows the test's, except while frozen.
    let offset = 0;
    let frozen: number | null = null;
    const seed = structuredClone(loadSeed());
    seed.inventory = { projects: [1, 2, 3, 4, 5, 6].map((id) => ({ id, storage: 'nfs-1' })) };
    const sb = await startSandbox({
      seed,
      moveDurationMs: 30,
      workers: 10,
      clock: realTimersAt(() => frozen ?? Date.now() + offset),
    });
    onTestFinished(() => sb.close());
    const proxy = await startHoldProxy(sb.url);
    onTestFinished(() => proxy.close());
    const plan = writePlan(dir, { concurrency: 3, from: ['nfs-1'] });
    const env = sandboxEnv(proxy.url);
    const forward = await runCli(['run', plan], { cwd: dir, env });
    expect(forward.code, forward.stderr).toBe(0);
    expect([...(await storagesOf(sb.url, 'projects')).values()].every((s) => s === 'cluster')).toBe(true);

    // Frozen: a hand move of project 4 off cluster starts and cannot end.
    frozen = Date.now() + offset;
    const res = await fetch(`${sb.url}/api/v4/projects/4/repository_storage_moves`, {
      method: 'POST',
      headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ destination_storage_name: 'nfs-2' }),
    });
    expect(res.status).toBe(201);
    const hand = (await res.json()) as { id: number };
    const handMoves = (await movesOf(sb.url, 'project')).length;

    // The revert reads every item while the hand move runs; at its first write, time moves on and
    // the hand move ends (project 4 on nfs-2, writable again) before any POST of the revert.
    const held = proxy.arm({
      match: (r: SeenRequest) => r.method === 'PUT' && r.url.startsWith('/api/v4/application/settings'),
      forward: false,
    });
    const revertRun = runCli(['revert', plan, '--yes'], { cwd: dir, env });
    await held;
    offset = (frozen ?? 0) + 1_000 - Date.now();
    frozen = null;
    sb.state.engine.kick();
    for (let i = 0; i < 200 && (await storagesOf(sb.url, 'projects')).get(4) !== 'nfs-2'; i++)
      await new Promise((r) => setImmediate(r));
    expect((await storagesOf(sb.url, 'projects')).get(4)).toBe('nfs-2');
    proxy.release();
    const revert = await revertRun;

    // Project 4 stays where the hand move took it; the revert made no move of it, and said so.
    expect((await storagesOf(sb.url, 'projects')).get(4)).toBe('nfs-2');
    const revertMoves = (await movesOf(sb.url, 'project')).slice(handMoves);
    expect(revertMoves.map((m) => m.itemId).sort()).toEqual([1, 2, 3, 5, 6]);
    for (const id of [1, 2, 3, 5, 6]) expect((await storagesOf(sb.url, 'projects')).get(id)).toBe('nfs-1');
    expect(revert.code, `${revert.stdout}${revert.stderr}`).toBe(0);
    expect(revert.stdout).toContain(`project 4 (`);
    expect(revert.stdout).toContain(`being moved by someone else (move ${hand.id}, started, cluster -> nfs-2)`);
  });
});
