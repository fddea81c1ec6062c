/**
 * `shardmove revert` as a careless operator uses it: before any run, on a dry run's
 * checkpoint, without a terminal and without --yes, while the forward run runs, twice at once,
 * the forward run started during a revert, a revert of a revert, `run` on the revert's checkpoint,
 * all with checkpoint paths holding spaces. Each refusal changes nothing on the instance (judged
 * from the sandbox's own move records and weights).
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { CliResult } from './support/cli-harness.js';
import { ADMIN_TOKEN, moveTotal, runCli, sandboxEnv, storagesOf, writePlan } from './support/cli-harness.js';
import type { SeenRequest } from './support/hold-proxy.js';
import { startProxiedSandbox } from './support/hold-proxy.js';

async function weightsOf(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}

/** Weights as GitLab weighs them: a storage absent from the hash weighs 0. */
const positive = (w: Record<string, number>) => Object.fromEntries(Object.entries(w).filter(([, v]) => v > 0));

/** Every move the sandbox recorded, of every kind. */
function inFlight(file: string): number {
  if (!existsSync(file)) return 0;
  try {
    const store = openCheckpoint(file, { readOnly: true });
    try {
      return store.countInFlight();
    } finally {
      store.close();
    }
  } catch {
    return 0;
  }
}

describe('shardmove revert, used carelessly (separate processes, real HTTP)', () => {
  it(
    'refuses what it must, changes nothing when it does, and finishes the revert in the end',
    { timeout: 150_000 },
    async () => {
      const { dir, sandbox, proxy } = await startProxiedSandbox(
        'revert-careless',
        ['--move-duration', '50', '--workers', '10'],
        { projects: 16, snippets: 3, groups: 2 },
      );
      const plan = writePlan(dir, { concurrency: 3 });
      const env = sandboxEnv(proxy.url);
      mkdirSync(join(dir, 'run state'));
      const forwardDb = join('run state', 'fwd one.db');
      const revertDb = join(dir, 'run state', 'fwd one.revert.db');
      const cli = (args: string[], onStart?: (c: ChildProcess) => void) =>
        runCli(args, { cwd: dir, env, ...(onStart ? { onStart } : {}) });
      const before = await storagesOf(sandbox.url, 'projects');
      const weightsBefore = await weightsOf(sandbox.url);

      // Before any run: nothing to revert, and no file written for it.
      const none = await cli(['revert', plan, '--state', forwardDb, '--yes']);
      expect(none.code, none.stderr).toBe(1);
      expect(none.stderr).toContain('no checkpoint at');
      expect(existsSync(revertDb)).toBe(false);

      // A dry run's checkpoint moved nothing: refused (4).
      const dry = await cli(['run', plan, '--dry-run', '--state', join('run state', 'rehearsal.db')]);
      expect(dry.code, dry.stderr).toBe(0);
      const onDry = await cli(['revert', plan, '--state', join('run state', 'rehearsal.db'), '--yes']);
      expect(onDry.code, onDry.stderr).toBe(4);
      expect(onDry.stderr).toContain('holds a dry run');

      // While the forward run runs (held on a move POST of its own, so it is certainly running): refused (4).
      const heldForward = proxy.arm({
        match: (r: SeenRequest) => r.method === 'POST' && /repository_storage_moves/.test(r.url),
        forward: false,
      });
      let forwardChild: ChildProcess | undefined;
      const forwardRun: Promise<CliResult> = cli(['run', plan, '--state', forwardDb], (c) => (forwardChild = c));
      await heldForward;
      const during = await cli(['revert', plan, '--state', forwardDb, '--yes']);
      expect(during.code, during.stderr).toBe(4);
      expect(during.stderr).toMatch(/locked by pid \d+/);
      expect(existsSync(revertDb)).toBe(false);
      // Killed with that POST unanswered: its lock is free, but a move of its own may still be created.
      forwardChild!.kill('SIGKILL');
      expect((await forwardRun).code).toBeNull();
      proxy.release();
      const inFlightLeft = await cli(['revert', plan, '--state', forwardDb, '--yes']);
      expect(inFlightLeft.code, inFlightLeft.stderr).toBe(4);
      expect(inFlightLeft.stderr).toMatch(/move\(s\) of the forward run in flight/);
      expect(existsSync(revertDb)).toBe(false);
      const forward = await cli(['run', plan, '--state', forwardDb]);
      expect(forward.code, forward.stderr).toBe(0);
      const afterForward = await moveTotal(sandbox.url);
      const weightsForward = await weightsOf(sandbox.url);

      // No terminal and no --yes: the preview is shown, nothing is written (2).
      const unasked = await cli(['revert', plan, '--state', forwardDb]);
      expect(unasked.code, unasked.stderr).toBe(2);
      expect(unasked.stdout).toMatch(/move \d+ projects back from cluster to nfs-1/);
      expect(unasked.stderr).toContain('pass --yes');
      expect(await moveTotal(sandbox.url)).toBe(afterForward);
      expect(await weightsOf(sandbox.url)).toEqual(weightsForward);
      expect(existsSync(revertDb)).toBe(false);

      // A revert held on its first move POST: a second revert and the forward run are both refused.
      const heldRevert = proxy.arm({
        match: (r: SeenRequest) => r.method === 'POST' && /repository_storage_moves/.test(r.url),
        forward: false,
      });
      const revertRun: Promise<CliResult> = cli(['revert', plan, '--state', forwardDb, '--yes', '--lease', '10s']);
      await heldRevert;
      expect(inFlight(revertDb), 'the held POST is an intent in the checkpoint').toBeGreaterThan(0);
      const second = await cli(['revert', plan, '--state', forwardDb, '--yes']);
      expect(second.code, second.stderr).toBe(4);
      expect(second.stderr).toMatch(/locked by pid \d+/);
      const forwardAgain = await cli(['run', plan, '--state', forwardDb]);
      expect(forwardAgain.code, forwardAgain.stderr).toBe(4);
      // Refused before the lock is even tried: the drain has a revert beside it.
      expect(forwardAgain.stderr).toMatch(/refusing: this drain was reverted/);
      // The operator removes the forward checkpoint's lock under the revert: it stops (5) once it sees it.
      const unlocked = await cli(['unlock', plan, '--state', forwardDb, '--yes']);
      expect(unlocked.code, unlocked.stderr).toBe(0);
      const revertLog = join(dir, 'run state', 'fwd one.revert.log');
      for (
        const until = Date.now() + 20_000;
        !readFileSync(revertLog, 'utf8').includes('the run lock was taken over or removed');
      ) {
        if (Date.now() > until) throw new Error('the revert never noticed the lost lock');
        await new Promise((r) => setTimeout(r, 50));
      }
      proxy.release();
      const stopped = await revertRun;
      expect(stopped.code, `${stopped.stdout}${stopped.stderr}`).toBe(5);
      expect(stopped.stderr).toContain('lost the run lock');
      const reverted = await cli(['revert', plan, '--state', forwardDb, '--yes']);
      expect(reverted.code, `${reverted.stdout}${reverted.stderr}`).toBe(0);
      expect(reverted.stdout).toContain('resuming the revert');
      expect(await storagesOf(sandbox.url, 'projects')).toEqual(before);
      expect(positive(await weightsOf(sandbox.url))).toEqual(positive(weightsBefore));
      const afterRevert = await moveTotal(sandbox.url);

      // A revert of the revert, and `run` on the revert's checkpoint: refused (4), nothing moved.
      const revertOfRevert = await cli(['revert', plan, '--state', join('run state', 'fwd one.revert.db'), '--yes']);
      expect(revertOfRevert.code, revertOfRevert.stderr).toBe(4);
      expect(revertOfRevert.stderr).toContain('holds a revert');
      const runOnRevert = await cli([
        'run',
        plan,
        '--state',
        join('run state', 'fwd one.revert.db'),
        '--accept-plan-change',
      ]);
      expect(runOnRevert.code, runOnRevert.stderr).toBe(4);
      expect(runOnRevert.stderr).toContain('holds a revert');
      // Twice: the revert is done, nothing is asked, nothing moves.
      const twice = await cli(['revert', plan, '--state', forwardDb]);
      expect(twice.code, twice.stderr).toBe(0);
      expect(await moveTotal(sandbox.url)).toBe(afterRevert);
      expect(await storagesOf(sandbox.url, 'projects')).toEqual(before);
    },
  );
});
