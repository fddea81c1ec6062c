/**
 * The instance's release is read at every start: a run interrupted on 16.2, whose sandbox then
 * restarts on the same database as 17.11 (an upgrade in the change window), resumes with 17.11 in
 * its report and status, and says that the release changed; nothing of 16.2 is kept.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import Database from 'better-sqlite3';
import { runCli, sandboxEnv, startSandboxProcess, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { until } from './support/until.js';

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

describe('a run resumed after an upgrade of the instance (separate processes)', { timeout: 120_000 }, () => {
  it('reads the release again: the resumed run reports 17.11.0 and says it changed from 16.2.0', async () => {
    const dir = tempDir('upgraded');
    const db = join(dir, 'sandbox.db');
    const seed = writeSeed(dir, { projects: 12, snippets: 0, groups: 0 });
    const old = await startSandboxProcess([
      '--db',
      db,
      '--seed',
      seed,
      '--gitlab-version',
      '16.2.0',
      '--move-duration',
      '400',
      '--workers',
      '1',
    ]);
    const plan = writePlan(dir, { concurrency: 1, from: ['nfs-1', 'nfs-2'] });
    writeFileSync(plan, readFileSync(plan, 'utf8').replace('kinds: [projects, snippets, groups]', 'kinds: [projects]'));
    const checkpoint = join(dir, 'state', 'it.db');
    let pid = 0;
    const first = runCli(['run', plan], { cwd: dir, env: sandboxEnv(old.url), onStart: (c) => (pid = c.pid!) });
    await until(movedIn(checkpoint), (n: number) => n >= 1, 60_000);
    process.kill(pid, 'SIGINT');
    const interrupted = await first;
    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(releaseIn(checkpoint)).toBe('16.2.0');
    await old.stop();

    // The same instance on its own address, upgraded.
    const upgraded = await startSandboxProcess([
      '--port',
      new URL(old.url).port,
      '--db',
      db,
      '--gitlab-version',
      '17.11.0',
      '--move-duration',
      '20',
      '--workers',
      '4',
    ]);
    onTestFinished(() => upgraded.stop());
    const r = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(upgraded.url) });
    const said = r.stdout + r.stderr;
    expect(r.code, said).toBe(0);
    expect(r.stdout).toContain('instance version 17.11.0');
    expect(r.stdout).toContain('the instance now runs GitLab 17.11.0, not 16.2.0 as when this run started');
    expect(releaseIn(checkpoint)).toBe('17.11.0');
    // A second start on the same release adds nothing: the warning is not repeated.
    const again = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(upgraded.url) });
    expect(again.stdout.split('the instance now runs GitLab').length - 1).toBeLessThanOrEqual(1);
  });
});
