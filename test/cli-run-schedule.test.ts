/**
 * Maintenance windows on the in-process harness: `shardmove run` and the sandbox on one simulated
 * clock. A run whose plan's only window is days away says at once that it waits, shows it in
 * `status`, and sends no POST to the sandbox (judged from the sandbox's own database); a run left
 * to wait waits out the days on the simulated clock (milliseconds) and does all its work inside
 * the window; `--ignore-schedule` runs it at once and leaves an audit event saying so. (It ran as
 * separate processes waiting real seconds before; nothing here is about the process boundary.)
 */
import { appendFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { DAYS } from '../src/time/windows.js';
import { sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { startSimulation } from './support/sim-harness.js';

function count(db: string, query: string): number {
  const d = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return (d.prepare(query).get() as { n: number }).n;
  } finally {
    d.close();
  }
}

async function windowedPlan(window?: string) {
  const dir = tempDir('schedule-sim');
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const seed = writeSeed(dir, { projects: 20, snippets: 4, groups: 2 });
  const db = join(dir, 'sandbox.db');
  const sim = await startSimulation({ seed, db, moveDurationMs: 20, workers: 20 });
  const plan = writePlan(dir, { concurrency: 10 });
  // One window three days from the simulated today (UTC), so it is closed now whatever the hour.
  const day = DAYS[(new Date(sim.clock.now()).getUTCDay() + 3) % 7]!;
  appendFileSync(plan, `schedule:\n  timezone: UTC\n  windows: ["${window ?? `${day} 01:00-02:00`}"]\n`);
  return { dir, db, sim, plan, day, env: sandboxEnv(sim.url) };
}

describe('shardmove run with maintenance windows (one simulated clock)', () => {
  it('outside every window: waits, says so, schedules nothing; --ignore-schedule runs it and is audited', async () => {
    const { dir, db, sim, plan, day, env } = await windowedPlan();
    // Time stands still while the test looks at the waiting run: its sleeps wait for the test.
    sim.clock.autoAdvance = false;
    const waiting = sim.start(['run', plan], { cwd: dir, env });
    await vi.waitFor(() => expect(waiting.stderr()).toContain('outside every maintenance window'), {
      timeout: 20_000,
      interval: 20,
    });
    let waitingSeen = waiting.stderr();
    // Let it reach the drain and wait there, then ask status, then stop it. Its clock moves half a
    // second at a time until status has something to say (at most a minute of it): a fixed step was
    // a race with the real socket round trips between the run and the sandbox that the step does not
    // wait for, and status once came before the run reached its wait.
    let s = await sim.shardmove(['status', plan], { cwd: dir, env });
    for (let step = 0; step < 120 && !s.stdout.includes('now: WAITING'); step++) {
      await sim.clock.advanceAsync(500);
      s = await sim.shardmove(['status', plan], { cwd: dir, env });
    }
    waitingSeen += `\n--- status ---\n${s.stdout}`;
    waiting.interrupt();
    const stopped = await waiting.done;
    expect(stopped.code, stopped.stdout + stopped.stderr).toBe(130);
    expect(waitingSeen).toMatch(
      new RegExp(`outside every maintenance window; nothing is scheduled until ${day} \\d{4}-\\d\\d-\\d\\d 01:00 UTC`),
    );
    expect(waitingSeen).toMatch(
      new RegExp(`--- status ---[\\s\\S]*now: WAITING for the window at ${day} \\d{4}-\\d\\d-\\d\\d 01:00 UTC`),
    );
    expect(count(db, 'SELECT count(*) AS n FROM moves')).toBe(0);

    sim.clock.autoAdvance = true;
    const forced = await sim.shardmove(['run', plan, '--ignore-schedule'], { cwd: dir, env });
    expect(forced.code, forced.stdout + forced.stderr).toBe(0);
    expect(forced.stderr).toContain('--ignore-schedule');
    expect(count(db, "SELECT count(*) AS n FROM items WHERE storage <> 'cluster'")).toBe(0);
    expect(count(join(dir, 'state', 'it.db'), "SELECT count(*) AS n FROM events WHERE type = 'schedule.ignored'")).toBe(
      1,
    );
  });

  it('left to wait, it waits out the hours and moves everything inside the window', async () => {
    // The simulated start is Monday 00:00 UTC: the window opens two hours of its clock later.
    const { dir, db, sim, plan, env } = await windowedPlan('Mon 02:00-03:00');
    const startedAt = sim.clock.now();
    const r = await sim.shardmove(['run', plan], { cwd: dir, env });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(count(db, "SELECT count(*) AS n FROM items WHERE storage <> 'cluster'")).toBe(0);
    // Every move of the sandbox was created and ended inside the one window, hours after the start.
    const d = new Database(db, { readonly: true, fileMustExist: true });
    try {
      const moves = d.prepare('SELECT created_at, updated_at FROM moves').all() as {
        created_at: string;
        updated_at: string;
      }[];
      expect(moves.length).toBeGreaterThanOrEqual(26);
      for (const m of moves) {
        for (const at of [Date.parse(m.created_at), Date.parse(m.updated_at)]) {
          expect(at - startedAt).toBeGreaterThanOrEqual(2 * 3_600_000);
          expect(new Date(at).getUTCHours()).toBe(2);
        }
      }
    } finally {
      d.close();
    }
  });
});
