/**
 * Instance outages hold `revert` and `weights restore` as they hold `run`: a proxy in front of the
 * sandbox refuses connections (mid-revert with moves back in flight, or before the command starts)
 * while the sandbox behind it keeps moving. The same HELD line and events, the moves in flight
 * followed once it answers, nothing moved twice; exit 7 once instance.outage_wait ran out.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fromDb, runCli, sandboxEnv, tempDir, writePlan } from './support/cli-harness.js';
import { ended, startHeldSandbox } from './support/held-sandbox.js';
import type { HeldSandbox } from './support/held-sandbox.js';
import { startOutageProxy } from './support/outage-proxy.js';
import { until } from './support/until.js';

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
async function movesBack(held: HeldSandbox): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const m of await held.moves()) if (m.source === 'cluster') out.set(m.itemId, (out.get(m.itemId) ?? 0) + 1);
  return out;
}

/** A sandbox, a proxy in front of it, and a forward run through the proxy that moved 12 projects. */
async function forwardDone(name: string, wait?: string) {
  const dir = tempDir(name);
  const held = await startHeldSandbox(dir, { projects: 12, snippets: 0, groups: 0 });
  const proxy = await startOutageProxy(held.url);
  const plan = writePlan(dir, { concurrency: 4 });
  if (wait) withOutageWait(plan, wait);
  const env = { ...sandboxEnv(proxy.url), ...RETRY };
  const forward = await held.pumpUntil(runCli(['run', plan], { cwd: dir, env }));
  expect(forward.code, forward.stdout + forward.stderr).toBe(0);
  return { dir, held, proxy, plan, env };
}

describe(
  'instance outages hold revert and weights restore (separate processes, real HTTP)',
  { timeout: 120_000 },
  () => {
    it('a revert holds while the instance refuses connections, follows its moves back once it answers, and ends 0 with nothing moved twice', async () => {
      const { dir, held, proxy, plan, env } = await forwardDone('outage-revert');
      const db = join(dir, 'state', 'it.revert.db');
      const revert = runCli(['revert', plan, '--yes'], { cwd: dir, env });
      await until(
        () => held.moves(),
        (m) => m.filter((x) => x.source === 'cluster' && !ended(x)).length >= 4,
        30_000,
      );
      await proxy.down();
      expect(
        await until(
          () => Promise.resolve(eventsOf(db, 'instance.unreachable').length),
          (n) => n > 0,
          20_000,
        ),
      ).toBe(1);
      // GitLab goes on meanwhile: the moves back end, unseen by the revert.
      held.letGo();
      await proxy.up();
      const result = await held.pumpUntil(revert);
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
      const { dir, held, proxy, plan, env } = await forwardDone('outage-revert-wait', '2s');
      await proxy.down();
      const gaveUp = await runCli(['revert', plan, '--yes'], { cwd: dir, env });
      expect(gaveUp.code, gaveUp.stdout + gaveUp.stderr).toBe(7);
      expect(gaveUp.stderr).toMatch(HELD);
      expect(gaveUp.stderr).toMatch(/the revert has written nothing yet, and reads again once it answers/);
      expect(gaveUp.stderr).toContain('instance.outage_wait (2s) ran out');
      expect(await movesBack(held)).toEqual(new Map());
      // weights restore too: exit 7, nothing written.
      const left = await held.weights();
      const weights = await runCli(['weights', 'restore', plan, '--yes'], { cwd: dir, env });
      expect(weights.code, weights.stdout + weights.stderr).toBe(7);
      expect(weights.stderr).toMatch(HELD);
      expect(weights.stderr).toContain('instance.outage_wait (2s) ran out');
      expect(await held.weights()).toEqual(left);
      await proxy.up();
      const again = await held.pumpUntil(runCli(['revert', plan, '--yes'], { cwd: dir, env }));
      expect(again.code, again.stdout + again.stderr).toBe(0);
      expect((await movesBack(held)).size).toBe(12);
    });

    it('weights restore holds through an outage and writes once the instance answers', async () => {
      const { dir, held, proxy, plan, env } = await forwardDone('outage-weights');
      const left = await held.weights();
      await proxy.down();
      // Up again once it says it holds (its client's own retries come first).
      const done = await runCli(['weights', 'restore', plan, '--yes'], {
        cwd: dir,
        env,
        onStart: (child) => {
          let seen = '';
          child.stderr?.on('data', (c) => {
            seen += String(c);
            if (seen.includes('HELD:')) void proxy.up();
          });
        },
      });
      expect(done.code, done.stdout + done.stderr).toBe(0);
      expect(done.stderr).toMatch(HELD);
      expect(done.stderr).toMatch(/nothing is written until it answers/);
      expect(await held.weights()).not.toEqual(left);
      const db = join(dir, 'state', 'it.db');
      expect(eventsOf(db, 'weights.restored')).toHaveLength(1);
    });
  },
);
