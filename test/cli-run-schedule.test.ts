/**
 * Maintenance windows end to end: a real `shardmove run` whose plan's only window is days
 * away says at once that it waits, shows it in `status`, and sends no POST to the sandbox (judged
 * from the sandbox's own database); `--ignore-schedule` then runs it to the end and leaves an audit
 * event saying so.
 */
import { appendFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DAYS } from '../src/time/windows.js';
import { runCli, sandboxEnv, startSandboxProcess, tempDir, writePlan, writeSeed } from './support/cli-harness.js';

function count(db: string, query: string): number {
  const d = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return (d.prepare(query).get() as { n: number }).n;
  } finally {
    d.close();
  }
}

describe('shardmove run with maintenance windows (separate processes)', { timeout: 60_000 }, () => {
  it('outside every window: waits, says so, schedules nothing; --ignore-schedule runs it and is audited', async () => {
    const dir = tempDir('schedule');
    const seed = writeSeed(dir, { projects: 20, snippets: 4, groups: 2 });
    const db = join(dir, 'sandbox.db');
    const sandbox = await startSandboxProcess(['--seed', seed, '--db', db, '--move-duration', '20', '--workers', '20']);
    onTestFinished(async () => {
      await sandbox.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const plan = writePlan(dir, { concurrency: 10 });
    // One window three days from today (UTC), so it is closed now whatever the time of day.
    const day = DAYS[(new Date().getUTCDay() + 3) % 7];
    appendFileSync(plan, `schedule:\n  timezone: UTC\n  windows: ["${day} 01:00-02:00"]\n`);

    let waitingSeen = '';
    const waiting = await runCli(['run', plan], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
      onStart: (child) => {
        let err = '';
        child.stderr?.on('data', (c) => {
          err += String(c);
          if (err.includes('outside every maintenance window') && !waitingSeen) {
            waitingSeen = err;
            // Let it reach the drain and wait there, then ask status, then stop it.
            setTimeout(() => {
              void runCli(['status', plan], { cwd: dir, env: sandboxEnv(sandbox.url) }).then((s) => {
                waitingSeen += `\n--- status ---\n${s.stdout}`;
                child.kill('SIGINT');
              });
            }, 3000);
          }
        });
      },
    });
    expect(waiting.code, waiting.stdout + waiting.stderr).toBe(130);
    expect(waitingSeen).toMatch(
      new RegExp(`outside every maintenance window; nothing is scheduled until ${day} \\d{4}-\\d\\d-\\d\\d 01:00 UTC`),
    );
    expect(waitingSeen).toMatch(
      new RegExp(`--- status ---[\\s\\S]*now: WAITING for the window at ${day} \\d{4}-\\d\\d-\\d\\d 01:00 UTC`),
    );
    expect(count(db, 'SELECT count(*) AS n FROM moves')).toBe(0);

    const forced = await runCli(['run', plan, '--ignore-schedule'], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(forced.code, forced.stdout + forced.stderr).toBe(0);
    expect(forced.stderr).toContain('--ignore-schedule');
    expect(count(db, "SELECT count(*) AS n FROM items WHERE storage <> 'cluster'")).toBe(0);
    expect(count(join(dir, 'state', 'it.db'), "SELECT count(*) AS n FROM events WHERE type = 'schedule.ignored'")).toBe(
      1,
    );
  });
});
