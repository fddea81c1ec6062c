/**
 * The run lock as a lease, with real processes: a run that is paused (SIGSTOP, as a
 * frozen container or a stopped VM) for longer than its lease is taken over by a runner on another
 * host; when it resumes it writes nothing more to the checkpoint and exits 5. `shardmove unlock` is
 * the operator's override.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { Checkpoint } from '../src/store/checkpoint.js';
import type { CliResult } from './support/cli-harness.js';
import {
  movesOf,
  runCli,
  sandboxEnv,
  startSandboxProcess,
  tempDir,
  writePlan,
  writeSeed,
} from './support/cli-harness.js';
import { dumpCheckpoint } from './support/checkpoint-dump.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LEASE_MS = 10_000;

describe('the run lock as a lease (separate processes, real HTTP)', { timeout: 90_000 }, () => {
  it('a paused holder taken over by another host writes nothing when it resumes and exits 5; the checkpoint goes on', async () => {
    const dir = tempDir('lease');
    const sandbox = await startSandboxProcess([
      '--move-duration',
      '200',
      '--workers',
      '10',
      '--seed',
      writeSeed(dir, { projects: 60, snippets: 4, groups: 2 }),
    ]);
    onTestFinished(async () => {
      await sandbox.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const plan = writePlan(dir, { concurrency: 3 });
    const env = sandboxEnv(sandbox.url);
    const file = join(dir, 'state', 'it.db');

    let pid = 0;
    const run: Promise<CliResult> = runCli(['run', plan, '--lease', '10s'], {
      cwd: dir,
      env,
      onStart: (c) => (pid = c.pid ?? 0),
    });
    const until = Date.now() + 20_000;
    while ((await movesOf(sandbox.url, 'project')).length < 6 && Date.now() < until) await sleep(50);

    // While it renews its heartbeat, a second run on this host is refused (exit 4).
    const second = await runCli(['run', plan], { cwd: dir, env });
    expect(second.code, second.stderr).toBe(4);
    expect(second.stderr).toMatch(/locked by pid \d+ .*last heartbeat \d+s ago/);

    // Pause it; a runner rescheduled onto another host finds a heartbeat older than the lease. Its
    // clock is moved past the lease instead of waiting for it. A pause inside one of the run's
    // write transactions would keep the file locked, as a frozen process does: let it finish one.
    let taker: Checkpoint | undefined;
    for (let tries = 0; !taker; tries++) {
      process.kill(pid, 'SIGSTOP');
      const c = openCheckpoint(file, { busyTimeoutMs: 300 });
      try {
        const now = Date.now() + LEASE_MS + 1_000;
        const got = c.acquireLock({ pid: 4242, host: 'rescheduled-pod', startedAt: now }, () => true, {
          ms: 60_000,
          now,
        });
        expect(got.reason).toBe('stale');
        expect(got.previous).toMatchObject({ pid, leaseMs: LEASE_MS });
        taker = c;
      } catch (err) {
        c.close();
        if ((err as { code?: string }).code !== 'SQLITE_BUSY' || tries > 20) throw err;
        process.kill(pid, 'SIGCONT');
        await sleep(30);
      }
    }
    const takeover = taker.readEvents(0, 100_000).filter((e) => e.type === 'lock.taken_over');
    expect(takeover.at(-1)?.data).toMatchObject({ previous: { pid, leaseMs: LEASE_MS }, reason: 'stale' });
    const before = dumpCheckpoint(file);

    process.kill(pid, 'SIGCONT');
    const ended = await run;
    expect(ended.code, ended.stderr).toBe(5);
    expect(ended.stderr).toContain('lost the run lock');
    expect(ended.stderr).toContain('pid 4242 on rescheduled-pod took it over');
    expect(dumpCheckpoint(file)).toBe(before);

    // The new holder lets go; a run continues the same checkpoint to the end.
    taker.close();
    const after = await runCli(['run', plan], { cwd: dir, env });
    expect(after.code, after.stderr).toBe(0);
  });

  it('unlock asks, needs --yes without a terminal, removes the lock and logs the old holder', async () => {
    const dir = tempDir('unlock');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const plan = writePlan(dir);
    const env = { SHARDMOVE_URL: 'http://127.0.0.1:9', SHARDMOVE_TOKEN: 'unused' };
    expect((await runCli(['unlock', plan], { cwd: dir, env })).code).toBe(1);

    const file = join(dir, 'state', 'it.db');
    mkdirSync(join(dir, 'state'));
    const holder = openCheckpoint(file);
    holder.acquireLock({ pid: 77, host: 'ci-runner-3', startedAt: Date.now() }, () => true, {
      ms: 60_000,
      now: Date.now(),
    });

    const refused = await runCli(['unlock', plan], { cwd: dir, env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/held by pid 77 on ci-runner-3.*last heartbeat \d+s ago, lease 60s/);
    expect(refused.stderr).toContain('pass --yes');
    expect(holder.readLock()).toMatchObject({ pid: 77 });

    const done = await runCli(['unlock', plan, '--yes'], { cwd: dir, env });
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain('unlocked: removed the lock of pid 77 on ci-runner-3');
    expect(holder.readLock()).toBeNull();
    expect(() => holder.appendEvent('run.restart', { reason: 'still writing' }, Date.now())).toThrow(
      /SHARDMOVE_LEASE_LOST/,
    );
    const again = await runCli(['unlock', plan, '--yes'], { cwd: dir, env });
    expect(again.stdout).toContain('not locked');
    holder.close();
    const events = openCheckpoint(file, { readOnly: true });
    expect(events.readEvents().find((e) => e.type === 'lock.unlocked')?.data).toMatchObject({
      previous: { pid: 77, host: 'ci-runner-3' },
    });
    events.close();
  });
});
