/**
 * The failure breaker sends the operator to `shardmove status`, which must then show the failed
 * moves it counted: each with its item, attempt, failure class and GitLab's own `error_message`
 * (before, status listed only quarantined items, and the messages were only in the checkpoint).
 * The situation is built: two projects whose every move fails (`--broken-items`), a breaker that
 * trips at the second failure. What status prints is compared with the sandbox's own move records.
 *
 * On the in-process harness (test/support/sim-harness.ts): the run and status through the
 * executable's command line against the sandbox on one simulated clock, the run interrupted (as
 * Ctrl-C does) once its checkpoint records the breaker's trip. The subject is what status shows,
 * not the process boundary.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ADMIN_TOKEN, fromDb, writePlan } from './support/cli-harness.js';
import { seededSimulation } from './support/sim-speeda.js';

interface StatusJson {
  state: string;
  control: { paused: boolean; pausedBy: string | null };
  failures: {
    kind: string;
    id: number;
    name: string | null;
    source: string;
    moveId: number;
    attempt: number | null;
    then: string | null;
    error: string | null;
    class: string;
    remedy: string;
  }[];
}

/** The sandbox's own record of the failed project moves: move id -> (item, GitLab's error_message). */
async function failedMovesOf(url: string): Promise<Map<number, { item: number; error: string | null }>> {
  const res = await fetch(`${url}/api/v4/project_repository_storage_moves?per_page=100`, {
    headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN },
  });
  const body = (await res.json()) as {
    id: number;
    state: string;
    error_message: string | null;
    project: { id: number };
  }[];
  return new Map(
    body.filter((m) => m.state === 'failed').map((m) => [m.id, { item: m.project.id, error: m.error_message }]),
  );
}

describe('status after the failure breaker tripped', { timeout: 60_000 }, () => {
  it("lists the failed moves with item, attempt, class and GitLab's error message, where the breaker points", async () => {
    const { sim, dir, env } = await seededSimulation(
      'status-failures',
      { projects: 12, snippets: 0, groups: 0 },
      { moveDurationMs: 50, workers: 10, faults: { brokenItems: ['project:1,project:2'] } },
    );
    const plan = writePlan(dir, { concurrency: 4 });
    // The harness's plan with the breaker on: the second failed move pauses the run.
    writeFileSync(
      plan,
      readFileSync(plan, 'utf8').replace(
        /^retry: .*$/m,
        'retry: { max_attempts: 3, backoff: 100ms, pause_after: { failures: 2, within: 10m } }',
      ),
    );
    const db = join(dir, 'state', 'it.db');
    const run = sim.start(['run', plan], { cwd: dir, env });
    // Stopped once the breaker has paused it (a paused run waits for an operator forever).
    await vi.waitFor(
      () => expect(fromDb(db, "SELECT seq FROM events WHERE type = 'breaker.tripped'").length).toBeGreaterThan(0),
      { timeout: 30_000, interval: 5 },
    );
    run.interrupt();
    expect((await run.done).code).toBe(130);

    const json = JSON.parse((await sim.shardmove(['status', plan, '--json'], { cwd: dir, env })).stdout) as StatusJson;
    // The breaker's reason sends the operator to exactly this list.
    expect(json.control.paused).toBe(true);
    expect(json.control.pausedBy).toMatch(
      /^paused by the failure breaker: 2 moves failed within 10m .*"Failed moves" in shardmove status/,
    );

    const recorded = await failedMovesOf(sim.url);
    expect(recorded.size).toBeGreaterThanOrEqual(2);
    expect(json.failures.length).toBe(Math.min(recorded.size, 10));
    for (const f of json.failures) {
      // Every failed move listed is one the sandbox failed, with its item and GitLab's message as it gave it.
      expect(recorded.get(f.moveId), `move ${f.moveId}`).toEqual({ item: f.id, error: f.error });
      expect(f).toMatchObject({ kind: 'projects', then: 'retry', class: expect.any(String) });
      expect([1, 2]).toContain(f.id);
      expect(f.name).toMatch(/project-\d+$/);
      expect(f.attempt).toBeGreaterThanOrEqual(1);
    }
    // Newest first.
    expect(json.failures.map((f) => f.moveId)).toEqual([...json.failures.map((f) => f.moveId)].sort((a, b) => b - a));

    const status = await sim.shardmove(['status', plan], { cwd: dir, env });
    expect(status.stdout).toMatch(/\nFailed moves \(\d+, newest first; the failure breaker counts these\):\n/);
    const first = json.failures[0]!;
    expect(status.stdout).toContain(
      `projects ${first.id} ${first.name} on ${first.source}: move ${first.moveId}, attempt ${first.attempt}`,
    );
    expect(status.stdout).toContain(`    GitLab: ${first.error}`);
    expect(status.stdout).toContain(`    ${first.class}: ${first.remedy}`);
  });
});
