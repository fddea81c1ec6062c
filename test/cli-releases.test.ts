/**
 * `shardmove run` against sandboxes that behave as a given GitLab release and tier
 * (docs/gitlab-behaviour.md §1.2, §3.1, §3.5): group wikis on EE Free, failed moves on a release
 * that records no reason, and `shardmove sandbox --gitlab-version`. Judged from the sandbox's own
 * database and API, not from shardmove's report of itself.
 *
 * On the in-process harness (test/support/sim-harness.ts): each command through the executable's
 * command line against the sandbox on one simulated clock, so bulk jobs, moves and polls cost no
 * real time. The subject is what a release does to a run, not the process boundary. The 16.5
 * sandbox is `shardmove sandbox --gitlab-version 16.5 ...` itself, run in this process on the
 * simulated clock (./support/sim-speedg.ts); the refused `--gitlab-version` goes through the same
 * command line in this process (refused before anything starts, so nothing is left running).
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { NO_REASON_BEFORE_16_7 } from '../src/events/failure-class.js';
import { ADMIN_TOKEN, flat, fromDb, sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { FakeClock } from './support/fake-clock.js';
import { SIM_START } from './support/sim-harness.js';
import { changedSimulation, commandHere } from './support/sim-speeda.js';
import { commandsOn } from './support/sim-harness.js';
import { sandboxCommandOn } from './support/sim-speedg.js';

/** Items of a kind still off the destination, per the sandbox's own table. */
const leftOf = (db: string, kind: 'project' | 'snippet' | 'group') =>
  fromDb<{ id: number; storage: string }>(
    db,
    "SELECT id, storage FROM items WHERE kind = ? AND storage <> 'cluster' ORDER BY id",
    kind,
  );

describe('shardmove run on each release and tier', { timeout: 120_000 }, () => {
  it('EE Free: group wikis a lapsed licence left are moved by bulk and verified by their move records', async () => {
    const { sim, dir, db, env } = await changedSimulation(
      'ee-free',
      { projects: 20, snippets: 5, groups: 10 },
      (seed) => seed.setIn(['instance', 'tier'], 'free'),
    );
    const before = fromDb<{ n: number }>(
      db,
      "SELECT count(*) AS n FROM items WHERE kind = 'group' AND storage <> 'cluster'",
    );
    expect(before[0]?.n).toBeGreaterThan(0);
    const plan = writePlan(dir, { concurrency: 10 });
    const res = await sim.shardmove(['run', plan], { cwd: dir, env });
    const said = res.stdout + res.stderr;
    expect(res.code, said).toBe(0);
    expect(said).not.toContain('no group has a wiki repository to move');
    expect(flat(res.stdout)).toMatch(/groups on nfs-1: verified by move records, not by a listing/);
    // The sandbox's own records: no group wiki is left on a drained storage, each moved once by a bulk job.
    expect(leftOf(db, 'group')).toEqual([]);
    expect(leftOf(db, 'project')).toEqual([]);
    const moves = fromDb<{ item_id: number; state: string; destination: string }>(
      db,
      "SELECT item_id, state, destination FROM moves WHERE kind = 'group' ORDER BY item_id",
    );
    expect(moves.length).toBe(before[0]?.n);
    expect(moves.every((m) => m.state === 'finished' && m.destination === 'cluster')).toBe(true);
  });

  it('16.5: a failed move has no reason on record, so it is unknown with the Sidekiq log as remedy, never lease-held', async () => {
    const dir = tempDir('release-16-5');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const seed = writeSeed(dir, { projects: 3, snippets: 0, groups: 0 });
    const clock = new FakeClock(SIM_START);
    const url = await sandboxCommandOn(
      clock,
      [
        '--port',
        '0',
        '--seed',
        seed,
        '--gitlab-version',
        '16.5',
        '--move-duration',
        '20',
        '--fault-seed',
        '5',
        '--move-failures',
        'checksum=1',
      ],
      dir,
    );
    const sim = commandsOn(clock);
    const env = sandboxEnv(url);
    const version = await fetch(`${url}/api/v4/version`, { headers: { 'private-token': ADMIN_TOKEN } });
    expect(((await version.json()) as { version: string }).version).toBe('16.5.0');
    const plan = writePlan(dir, { concurrency: 5 });
    const res = await sim.shardmove(['run', plan, '--events', join(dir, 'events.jsonl')], { cwd: dir, env });
    expect(res.code, res.stdout + res.stderr).toBe(3);
    // The sandbox's records: every project move failed, with no error_message field at all.
    const recorded = (await (
      await fetch(`${url}/api/v4/project_repository_storage_moves?per_page=100`, {
        headers: { 'private-token': ADMIN_TOKEN },
      })
    ).json()) as Record<string, unknown>[];
    expect(recorded.length).toBeGreaterThan(0);
    for (const m of recorded) {
      expect(m.state).toBe('failed');
      expect(m).not.toHaveProperty('error_message');
      // `shardmove sandbox` ran on the command's clock (the simulated one, from SIM_START).
      expect(Date.parse(m.created_at as string)).toBeGreaterThanOrEqual(SIM_START);
      expect(Date.parse(m.created_at as string)).toBeLessThan(SIM_START + 86_400_000);
    }
    expect(flat(res.stdout)).toContain(`unknown: ${NO_REASON_BEFORE_16_7.remedy}`);
    expect(flat(res.stdout + res.stderr)).not.toContain('lease-held');
    const status = await sim.shardmove(['status', plan, '--json'], { cwd: dir });
    const quarantined = (JSON.parse(status.stdout) as { quarantined: { class: string; remedy: string }[] }).quarantined;
    expect(quarantined.length).toBe(3);
    for (const q of quarantined)
      expect(q).toMatchObject({
        class: 'unknown',
        remedy: expect.stringMatching(/Projects::UpdateRepositoryStorageWorker/),
      });
    const events = readFileSync(join(dir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; class?: string });
    const failed = events.filter((e) => e.type === 'move.failed' || e.type === 'move.quarantined');
    expect(failed.length).toBeGreaterThan(0);
    for (const e of failed) expect(e.class).toBe('unknown');
  });

  it('refuses a --gitlab-version that is not a release, before starting anything', async () => {
    const dir = tempDir('bad-version');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    for (const bad of ['sixteen', '16', '-1.5', '16.5; rm -rf /']) {
      const res = await commandHere(['sandbox', '--port', '0', '--gitlab-version', bad], { cwd: dir });
      expect(res.code, bad).toBe(2);
      expect(res.stderr, bad).toContain('--gitlab-version');
      expect(res.stderr, bad).toContain('is not a release');
      expect(res.stdout, bad).toBe('');
    }
  });
});
