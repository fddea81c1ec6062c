/**
 * A checkpoint another process is writing: a second SQLite connection holds its write lock
 * (`BEGIN IMMEDIATE`, as `sqlite3`, a backup tool or a run frozen mid-transaction would). Every
 * command that must write waits the busy timeout (shortened here through CHECKPOINT_BUSY_TIMEOUT_MS),
 * then refuses with exit 4, naming the holder where the run lock tells it; the readers (`status`,
 * `report`) read beside it. A run whose write meets the lock mid-drain stops there the same way,
 * and `run` again finishes it. Judged from exit codes, the words, the checkpoint and the sandbox.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import {
  invariantViolations,
  movesOf,
  runCli,
  sandboxEnv,
  seededSandboxProcess,
  writePlan,
} from './support/cli-harness.js';
import { ended } from './support/held-sandbox.js';
import { setup } from './support/stop-judge.js';
import { until } from './support/until.js';
import { startHeldSandbox } from './support/held-sandbox.js';

const BUSY = { CHECKPOINT_BUSY_TIMEOUT_MS: '300' };

/** A second connection holding the checkpoint's write lock until the test ends (or `release`). */
function holdWriteLock(file: string): { release(): void } {
  const db = new Database(file);
  db.exec('BEGIN IMMEDIATE');
  let open = true;
  const release = () => {
    if (!open) return;
    open = false;
    db.exec('ROLLBACK');
    db.close();
  };
  onTestFinished(release);
  return { release };
}

function expectRefusedBusy(r: { code: number | null; stderr: string }, file: string): void {
  expect(r.code, r.stderr).toBe(4);
  expect(r.stderr).toContain(`checkpoint ${file} is busy: after waiting 0.3s`);
  expect(r.stderr).not.toMatch(/internal error|This is a bug|at .*\.js:\d+/);
}

describe('a checkpoint another process holds a write lock on (separate processes)', { timeout: 120_000 }, () => {
  it('run, control --pause and control --stop refuse with exit 4 naming it; status and report read; all work once it is free', async () => {
    const { dir, env } = await seededSandboxProcess('busy', { projects: 2, snippets: 0, groups: 0 }, [
      '--move-duration',
      '20',
    ]);
    const plan = writePlan(dir);
    const file = join(dir, 'state', 'it.db');
    const cli = (...args: string[]) => runCli(args, { cwd: dir, env: { ...env, ...BUSY } });
    const first = await cli('run', plan);
    expect(first.code, first.stdout + first.stderr).toBe(0);

    const lock = holdWriteLock(file);
    for (const args of [
      ['run', plan],
      ['control', plan, '--pause'],
      ['control', plan, '--stop'],
    ]) {
      const r = await cli(...args);
      expectRefusedBusy(r, file);
      expect(r.stderr, args.join(' ')).toContain(
        `another process holds a write lock on ${file} (not a shardmove run: no run holds its run lock; a backup, sqlite3 with a transaction open, or another program)`,
      );
    }
    const status = await cli('status', plan);
    expect(status.code, status.stderr).toBe(0);
    const report = await cli('report', plan, '--json');
    expect(report.code, report.stderr).toBe(0);

    lock.release();
    expect((await cli('control', plan, '--pause')).code).toBe(0);
    const store = openCheckpoint(file, { readOnly: true });
    try {
      expect(store.readControl().paused).toBe(true);
    } finally {
      store.close();
    }
  });

  it('names the run that holds the run lock when a lock row is there', async () => {
    const { dir, env } = await seededSandboxProcess('busy-holder', { projects: 1, snippets: 0, groups: 0 }, [
      '--move-duration',
      '20',
    ]);
    const plan = writePlan(dir);
    const file = join(dir, 'state', 'it.db');
    const cli = (...args: string[]) => runCli(args, { cwd: dir, env: { ...env, ...BUSY } });
    expect((await cli('run', plan)).code).toBe(0);
    // A run that took the lock and froze in its next transaction: this test process plays it.
    const db = new Database(file);
    db.prepare('INSERT OR REPLACE INTO lock (id, pid, host, started_at) VALUES (1, ?, ?, ?)').run(
      process.pid,
      hostname(),
      Date.parse('2026-12-01T10:00:00Z'),
    );
    db.close();
    holdWriteLock(file);
    const r = await cli('control', plan, '--pause');
    expectRefusedBusy(r, file);
    expect(r.stderr).toContain(
      `the shardmove run that holds its run lock (pid ${process.pid} on ${hostname()}, since 2026-12-01T10:00:00.000Z) holds a write lock on it`,
    );
    expect(r.stderr).toContain(`(kill -CONT ${process.pid})`);
  });

  it('a run whose write meets the lock mid-drain stops there with exit 4, no stack; run again finishes it', async () => {
    const { dir, plan, file } = setup('busy-mid-run', 2);
    const held = await startHeldSandbox(dir, { projects: 6, snippets: 0, groups: 0 });
    const run = runCli(['run', plan], { cwd: dir, env: { ...sandboxEnv(held.url), ...BUSY } });
    const inFlight = async () => (await held.moves()).filter((m) => !ended(m)).length;
    expect(await until(inFlight, (n) => n >= 2, 30_000)).toBe(2);
    // The run is waiting on its two moves; the lock is taken; its next write (a poll's) meets it.
    const lock = holdWriteLock(file);
    held.letGo();
    const r = await run;
    expect(r.code, r.stdout + r.stderr).toBe(4);
    expect(r.stderr).toContain(`checkpoint ${file} is busy: after waiting 0.3s`);
    expect(r.stderr).toContain('this run stopped where it was: nothing more was written');
    expect(r.stderr).not.toMatch(/internal error|This is a bug/);
    lock.release();
    const again = await held.pumpUntil(runCli(['run', plan], { cwd: dir, env: sandboxEnv(held.url) }));
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const moves = await movesOf(held.url, 'project');
    expect(moves.every(ended)).toBe(true);
    expect(invariantViolations(moves, 'cluster')).toEqual([]);
  });
});
