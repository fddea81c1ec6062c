/**
 * Instance outages hold `revert` and `weights restore` as they hold `run`: a proxy in front of the
 * sandbox refuses connections (mid-revert with moves back in flight, or before the command starts)
 * while the sandbox behind it keeps moving. The same HELD line and events, the moves in flight
 * followed once it answers, nothing moved twice; exit 7 once instance.outage_wait ran out. The
 * commands and the sandbox run in this process on one simulated clock (./support/sim-speedc.ts: the
 * moves are held until the test lets them go, the retries' waits cost no real time), over real HTTP
 * through the proxy.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { fromDb, sandboxEnv, tempDir, writePlan } from './support/cli-harness.js';
import { ended } from './support/held-sandbox.js';
import { startOutageProxy } from './support/outage-proxy.js';
import { startHeldSimulation } from './support/sim-speedc.js';
import type { HeldSimulation } from './support/sim-speedc.js';

const RETRY = { SHARDMOVE_OUTAGE_RETRY_MS: '200' };
const HELD =
  /HELD: the instance has not answered since \d\d:\d\d:\d\d UTC \([A-Z_a-z ]+\); trying every 200ms, for up to (30m|2s) \(instance\.outage_wait\)/;

function eventsOf(db: string, type: string): { data: string }[] {
  try {
    return fromDb<{ data: string }>(db, 'SELECT data FROM events WHERE type = ? ORDER BY seq', type);
  } catch {
    return [];
  }
}

function withOutageWait(plan: string, wait: string): void {
  const text = readFileSync(plan, 'utf8');
  writeFileSync(plan, text.replace('  timeout: 10s\n', `  timeout: 10s\n  outage_wait: ${wait}\n`));
}

/** Moves off cluster, per project, from the sandbox's records. */
async function movesBack(held: HeldSimulation): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const m of await held.moves()) if (m.source === 'cluster') out.set(m.itemId, (out.get(m.itemId) ?? 0) + 1);
  return out;
}

/** A sandbox, a proxy in front of it, and a forward run through the proxy that moved 12 projects. */
async function forwardDone(name: string, wait?: string) {
  const dir = tempDir(name);
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  // Moves of half a minute: the outage that outlasts them is said in seconds.
  const held = await startHeldSimulation(dir, { projects: 12, snippets: 0, groups: 0 }, { moveMs: 30_000 });
  const proxy = await startOutageProxy(held.url);
  const plan = writePlan(dir, { concurrency: 4 });
  if (wait) withOutageWait(plan, wait);
  const env = { ...sandboxEnv(proxy.url), ...RETRY };
  const forward = await held.pumpUntil(held.start(['run', plan], env).done);
  expect(forward.code, forward.stdout + forward.stderr).toBe(0);
  return { dir, held, proxy, plan, env };
}

describe('instance outages hold revert and weights restore (one simulated clock, real HTTP)', () => {
  it('a revert holds while the instance refuses connections, follows its moves back once it answers, and ends 0 with nothing moved twice', async () => {
    const { dir, held, proxy, plan, env } = await forwardDone('outage-revert');
    const db = join(dir, 'state', 'it.revert.db');
    const revert = held.start(['revert', plan, '--yes'], env);
    await held.stepUntil(
      () => held.moves(),
      (m) => m.filter((x) => x.source === 'cluster' && !ended(x)).length >= 4,
    );
    await proxy.down();
    expect(
      await held.stepUntil(
        () => eventsOf(db, 'instance.unreachable').length,
        (n) => n > 0,
      ),
    ).toBe(1);
    // GitLab goes on meanwhile: the moves back end, unseen by the revert.
    await held.letGo();
    expect(eventsOf(db, 'instance.answered')).toEqual([]);
    await proxy.up();
    // Its next try (200 ms of the clock on) finds the instance; then the revert goes on to its end.
    await held.stepUntil(
      () => eventsOf(db, 'instance.answered').length,
      (n) => n > 0,
    );
    const result = await held.pumpUntil(revert.done);
    expect(result.stderr).toMatch(HELD);
    expect(result.stderr).toMatch(/note: the instance answers again after \d+s; the run goes on/);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('REVERTED: every item the run moved is back where it came from, verified');
    expect(eventsOf(db, 'instance.answered')).toHaveLength(1);
    const back = await movesBack(held);
    expect(back.size).toBe(12);
    expect([...back.values()].filter((n) => n > 1)).toEqual([]);
  });

  it('a revert whose reads meet an outage holds before writing anything, and exit 7 once instance.outage_wait ran out (weights restore too); then it reverts', async () => {
    const { held, proxy, plan, env } = await forwardDone('outage-revert-wait', '2s');
    await proxy.down();
    const gaveUp = await held.endOf(held.start(['revert', plan, '--yes'], env));
    expect(gaveUp.code, gaveUp.stdout + gaveUp.stderr).toBe(7);
    expect(gaveUp.stderr).toMatch(HELD);
    expect(gaveUp.stderr).toMatch(/the revert has written nothing yet, and reads again once it answers/);
    expect(gaveUp.stderr).toContain('instance.outage_wait (2s) ran out');
    expect(await movesBack(held)).toEqual(new Map());
    // weights restore too: exit 7, nothing written.
    const left = await held.weights();
    const weights = await held.endOf(held.start(['weights', 'restore', plan, '--yes'], env));
    expect(weights.code, weights.stdout + weights.stderr).toBe(7);
    expect(weights.stderr).toMatch(HELD);
    expect(weights.stderr).toContain('instance.outage_wait (2s) ran out');
    expect(await held.weights()).toEqual(left);
    await proxy.up();
    const again = await held.pumpUntil(held.start(['revert', plan, '--yes'], env).done);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect((await movesBack(held)).size).toBe(12);
  });

  it('weights restore holds through an outage and writes once the instance answers', async () => {
    const { dir, held, proxy, plan, env } = await forwardDone('outage-weights');
    const left = await held.weights();
    await proxy.down();
    // Up again once it says it holds (its client's own retries come first).
    const restore = held.start(['weights', 'restore', plan, '--yes'], env);
    await held.stepUntil(
      () => restore.stderr(),
      (t) => t.includes('HELD:'),
    );
    await proxy.up();
    const done = await held.endOf(restore);
    expect(done.code, done.stdout + done.stderr).toBe(0);
    expect(done.stderr).toMatch(HELD);
    expect(done.stderr).toMatch(/nothing is written until it answers/);
    expect(await held.weights()).not.toEqual(left);
    const db = join(dir, 'state', 'it.db');
    expect(eventsOf(db, 'weights.restored')).toHaveLength(1);
  });
});
