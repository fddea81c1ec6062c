/**
 * Instance outages hold the run, they do not end it: the instance vanishes mid-drain with moves in
 * flight (a proxy in front of the sandbox refuses connections; the sandbox behind it keeps moving,
 * as GitLab's Sidekiq does while its API is down), with the run and the sandbox in this process on
 * one simulated clock (./support/sim-speedc.ts: the moves are held, the hold's waits cost no real
 * time); and a real sandbox process is killed and started again on its port and its database (a
 * process's story: separate processes). The retry interval is an environment knob, so the run asks
 * every 200 ms instead of every 10 s.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { SandboxProcess } from './support/cli-harness.js';
import {
  flat,
  fromDb,
  invariantViolations,
  movesOf,
  runCli,
  sandboxEnv,
  startSandboxProcess,
  storagesOf,
  tempDir,
  writePlan,
  writeSeed,
} from './support/cli-harness.js';
import { ended } from './support/held-sandbox.js';
import { startOutageProxy } from './support/outage-proxy.js';
import { startHeldSimulation, startWithMovesInFlight } from './support/sim-speedc.js';
import { until } from './support/until.js';

const RETRY = { SHARDMOVE_OUTAGE_RETRY_MS: '200' };

/** The checkpoint's events of `type`, [] before the checkpoint exists. */
function eventsOf(db: string, type: string): { data: string }[] {
  try {
    return fromDb<{ data: string }>(db, 'SELECT data FROM events WHERE type = ? ORDER BY seq', type);
  } catch {
    return [];
  }
}

/** Sets `instance.outage_wait` in a plan writePlan wrote. */
function withOutageWait(plan: string, wait: string): void {
  const text = readFileSync(plan, 'utf8');
  writeFileSync(plan, text.replace('  timeout: 10s\n', `  timeout: 10s\n  outage_wait: ${wait}\n`));
}

/** Every project once on the destination, each with exactly one move, finished. */
async function expectMovedOnce(url: string, items: number): Promise<void> {
  const moves = await movesOf(url, 'project');
  expect(invariantViolations(moves, 'cluster')).toEqual([]);
  const perItem = new Map<string, number>();
  for (const m of moves) perItem.set(`${m.itemId}`, (perItem.get(`${m.itemId}`) ?? 0) + 1);
  expect([...perItem.values()].filter((n) => n > 1)).toEqual([]);
  expect(moves.filter((m) => m.state === 'finished')).toHaveLength(items);
  const projects = await storagesOf(url, 'projects');
  expect([...projects.values()].filter((s) => s !== 'cluster')).toEqual([]);
}

describe('an instance outage mid-drain (one simulated clock, real HTTP)', () => {
  it('holds while the instance refuses connections, says so, follows the moves in flight once it answers, and ends 0 with nothing moved twice', async () => {
    const dir = tempDir('outage');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    // Moves of half a minute: the outage that outlasts them is said in seconds.
    const held = await startHeldSimulation(dir, { projects: 24, snippets: 0, groups: 0 }, { moveMs: 30_000 });
    const proxy = await startOutageProxy(held.url);
    const plan = writePlan(dir, { concurrency: 8 });
    const db = join(dir, 'state', 'it.db');
    const run = held.start(['run', plan], { ...sandboxEnv(proxy.url), ...RETRY });

    // Moves in flight (each lasts a minute of the sandbox's clock): then the instance vanishes.
    await held.stepUntil(
      () => held.moves(),
      (m) => m.filter((x) => !ended(x)).length >= 8,
    );
    await proxy.down();
    // The run holds for it (its poll found no instance and used its retries) ...
    expect(
      await held.stepUntil(
        () => eventsOf(db, 'instance.unreachable').length,
        (n) => n > 0,
      ),
    ).toBe(1);
    const lastCap = () =>
      eventsOf(db, 'cap.changed')
        .map((e) => JSON.parse(e.data) as { limit: string; cap: number; reason: string })
        .at(-1);
    const hold = await held.stepUntil(lastCap, (c) => c?.limit === 'outage', 10_000);
    expect(hold).toMatchObject({ limit: 'outage', cap: 0 });
    expect(hold?.reason).toMatch(
      /^the instance has not answered since \d\d:\d\d:\d\d UTC \(\w+\); trying every 200ms$/,
    );
    // `status` reads the checkpoint alone: it says the same, and so do the public events.
    const status = await held.cli('status', plan);
    expect(status.stdout).toContain('HELD: the instance has not answered since');
    // ... while GitLab goes on: the moves it holds end meanwhile, unseen by the run.
    await held.letGo();
    await held.advance(600);
    expect(eventsOf(db, 'instance.answered')).toEqual([]);
    await proxy.up();
    // Its next try (200 ms of the clock on) finds the instance; then the run goes on to its end.
    await held.stepUntil(
      () => eventsOf(db, 'instance.answered').length,
      (n) => n > 0,
    );

    const result = await held.pumpUntil(run.done);
    expect(result.stderr).toMatch(
      /HELD: the instance has not answered since \d\d:\d\d:\d\d UTC \((ECONNREFUSED|ECONNRESET|UND_ERR_SOCKET|[A-Z_]+)\); trying every 200ms, for up to 30m \(instance\.outage_wait\)/,
    );
    expect(result.stderr).toMatch(/note: the instance answers again after \d+s; the run goes on/);
    expect(result.code).toBe(0);
    expect(eventsOf(db, 'instance.answered')).toHaveLength(1);
    await expectMovedOnce(held.url, 24);
  });

  it('ends with exit 7 and the remedy once instance.outage_wait ran out, and a second run finishes the drain', async () => {
    const dir = tempDir('outage-wait');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const held = await startHeldSimulation(dir, { projects: 12, snippets: 0, groups: 0 });
    const proxy = await startOutageProxy(held.url);
    const plan = writePlan(dir, { concurrency: 4 });
    withOutageWait(plan, '2s');
    const env = { ...sandboxEnv(proxy.url), ...RETRY };
    const run = held.start(['run', plan], env);
    await held.stepUntil(
      () => held.moves(),
      (m) => m.filter((x) => !ended(x)).length >= 4,
    );
    await proxy.down();
    const gaveUp = await held.endOf(run);
    expect(gaveUp.code).toBe(7);
    expect(gaveUp.stderr + gaveUp.stdout).toContain('instance.outage_wait (2s) ran out');
    expect(flat(gaveUp.stdout)).toContain('Once the instance answers again, run it again: shardmove run');
    // Distinct from exit 1 (a revoked token): a restart loop may run it again once the instance answers.
    await proxy.up();
    const again = await held.pumpUntil(held.start(['run', plan], env).done);
    expect(again.code).toBe(0);
    await expectMovedOnce(held.url, 12);
    // The second process goes on from the first one's items: hooks and notifications hear a resume.
    const starts = eventsOf(join(dir, 'state', 'it.db'), 'run.started').map(
      (e) => (JSON.parse(e.data) as { resumed: boolean }).resumed,
    );
    expect(starts).toEqual([false, true]);
  });

  it('says on Ctrl-C how many moves go on on GitLab, their repositories read-only, and that run again follows them', async () => {
    const dir = tempDir('outage-sigint');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const held = await startHeldSimulation(dir, { projects: 10, snippets: 0, groups: 0 });
    const plan = writePlan(dir, { concurrency: 4 });
    // Ctrl-C is the signal of the command's context here (main() turns SIGINT into it).
    const run = await startWithMovesInFlight(held, ['run', plan], 4);
    run.interrupt();
    const result = await held.endOf(run);
    expect(result.code).toBe(130);
    expect(result.stderr).toMatch(
      /4 moves are still running on GitLab \(their repositories read-only until each ends\); an interruption cannot call them back, and going on follows them\ninterrupted; to continue: shardmove run \S+\n/,
    );
  });
});

/** A free TCP port on 127.0.0.1 (the restarted sandbox must come back where the plan points). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('a real sandbox process stopped and started again mid-drain', { timeout: 90_000 }, () => {
  it('holds for the seconds it is gone and ends 0 with every item moved once', async () => {
    const dir = tempDir('outage-restart');
    const seed = writeSeed(dir, { projects: 30, snippets: 3, groups: 0 });
    const port = await freePort();
    const args = ['--port', String(port), '--db', join(dir, 'sandbox.db'), '--move-duration', '400', '--workers', '6'];
    // --port 0 in startSandboxProcess's own args is overridden by the later --port.
    let sandbox: SandboxProcess = await startSandboxProcess([...args, '--seed', seed]);
    onTestFinished(() => sandbox.stop());
    const url = `http://127.0.0.1:${port}`;
    const plan = writePlan(dir, { concurrency: 6 });
    const db = join(dir, 'state', 'it.db');
    const run = runCli(['run', plan], { cwd: dir, env: { ...sandboxEnv(url), ...RETRY } });
    await until(
      () => movesOf(url, 'project'),
      (m) => m.length >= 8,
      30_000,
    );
    sandbox.child.kill('SIGKILL');
    await new Promise<void>((r) => (sandbox.child.exitCode !== null ? r() : sandbox.child.once('exit', () => r())));
    await until(
      () => Promise.resolve(eventsOf(db, 'instance.unreachable').length),
      (n) => n > 0,
      20_000,
    );
    // Gone a second more after the run said so (the hold, not its length, is what is judged).
    await new Promise((r) => setTimeout(r, 1_000));
    sandbox = await startSandboxProcess([...args, '--seed', seed]);
    const result = await run;
    expect(result.stderr).toContain('HELD: the instance has not answered since');
    expect(result.code).toBe(0);
    // Per kind: a project and a snippet may share an id.
    for (const kind of ['project', 'snippet'] as const) {
      const moves = await movesOf(url, kind);
      expect(invariantViolations(moves, 'cluster'), kind).toEqual([]);
      expect(new Set(moves.map((m) => m.itemId)).size, kind).toBe(moves.length);
    }
    const projects = await storagesOf(url, 'projects');
    expect([...projects.values()].filter((s) => s !== 'cluster')).toEqual([]);
  });
});
