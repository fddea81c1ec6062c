/**
 * The instance's release is read at every start: a run interrupted on 16.2, whose sandbox then
 * restarts on the same database as 17.11 (an upgrade in the change window), resumes with 17.11 in
 * its report and status, and says that the release changed; nothing of 16.2 is kept.
 *
 * On the in-process harness (test/support/sim-harness.ts): the runs through the executable's
 * command line against the sandbox on one simulated clock, the first interrupted (as Ctrl-C does)
 * once one move is recorded, the sandbox then started again on its port and database as 17.11.0
 * (as a sandbox process stopped and started again). The subject is what the resumed run reads of
 * the release, not the process boundary.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import Database from 'better-sqlite3';
import { sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { startSimulation } from './support/sim-harness.js';
import { restartSandbox } from './support/sim-speedd.js';
import { interruptOnceSim } from './support/sim-speedg.js';

function movedIn(checkpoint: string): () => Promise<number> {
  return async () => {
    try {
      const db = new Database(checkpoint, { readonly: true, fileMustExist: true });
      try {
        return (db.prepare("SELECT count(*) AS n FROM items WHERE state = 'moved'").get() as { n: number }).n;
      } finally {
        db.close();
      }
    } catch {
      return 0;
    }
  };
}

/** The release the checkpoint's saved run holds. */
function releaseIn(checkpoint: string): string | null {
  const db = new Database(checkpoint, { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare('SELECT snapshot FROM run').get() as { snapshot: string };
    return (JSON.parse(row.snapshot) as { context: { instanceVersion: string | null } }).context.instanceVersion;
  } finally {
    db.close();
  }
}

describe('a run resumed after an upgrade of the instance', { timeout: 120_000 }, () => {
  it('reads the release again: the resumed run reports 17.11.0 and says it changed from 16.2.0', async () => {
    const dir = tempDir('upgraded');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const db = join(dir, 'sandbox.db');
    const seed = writeSeed(dir, { projects: 12, snippets: 0, groups: 0 });
    const sim = await startSimulation({ db, seed, version: '16.2.0', moveDurationMs: 400, workers: 1 });
    const plan = writePlan(dir, { concurrency: 1, from: ['nfs-1', 'nfs-2'] });
    writeFileSync(plan, readFileSync(plan, 'utf8').replace('kinds: [projects, snippets, groups]', 'kinds: [projects]'));
    const checkpoint = join(dir, 'state', 'it.db');
    const moved = movedIn(checkpoint);
    const interrupted = await interruptOnceSim(
      sim,
      ['run', plan],
      { cwd: dir, env: sandboxEnv(sim.url) },
      async () => (await moved()) >= 1,
    );
    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(releaseIn(checkpoint)).toBe('16.2.0');

    // The same instance on its own address, upgraded.
    const upgraded = await restartSandbox(sim, sim.sandbox, {
      db,
      version: '17.11.0',
      moveDurationMs: 20,
      workers: 4,
    });
    const r = await sim.shardmove(['run', plan], { cwd: dir, env: sandboxEnv(upgraded.url) });
    const said = r.stdout + r.stderr;
    expect(r.code, said).toBe(0);
    expect(r.stdout).toContain('instance version 17.11.0');
    expect(r.stdout).toContain('the instance now runs GitLab 17.11.0, not 16.2.0 as when this run started');
    expect(releaseIn(checkpoint)).toBe('17.11.0');
    // A second start on the same release adds nothing: the warning is not repeated.
    const again = await sim.shardmove(['run', plan], { cwd: dir, env: sandboxEnv(upgraded.url) });
    expect(again.stdout.split('the instance now runs GitLab').length - 1).toBeLessThanOrEqual(1);
  });
});
