/**
 * The failure breaker sends the operator to `shardmove status`, which must then show the failed
 * moves it counted: each with its item, attempt, failure class and GitLab's own `error_message`
 * (before, status listed only quarantined items, and the messages were only in the checkpoint).
 * The situation is built: two projects whose every move fails (`--broken-items`), a breaker that
 * trips at the second failure. What status prints is compared with the sandbox's own move records.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  ADMIN_TOKEN,
  fromDb,
  runCli,
  sandboxEnv,
  startSandboxProcess,
  tempDir,
  writePlan,
  writeSeed,
} from './support/cli-harness.js';
import { until } from './support/until.js';

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

describe('status after the failure breaker tripped (separate processes)', { timeout: 60_000 }, () => {
  it("lists the failed moves with item, attempt, class and GitLab's error message, where the breaker points", async () => {
    const dir = tempDir('status-failures');
    const seed = writeSeed(dir, { projects: 12, snippets: 0, groups: 0 });
    const sandbox = await startSandboxProcess([
      '--seed',
      seed,
      '--move-duration',
      '50',
      '--workers',
      '10',
      '--broken-items',
      'project:1,project:2',
    ]);
    onTestFinished(() => sandbox.stop());
    const plan = writePlan(dir, { concurrency: 4 });
    // The harness's plan with the breaker on: the second failed move pauses the run.
    writeFileSync(
      plan,
      readFileSync(plan, 'utf8').replace(
        /^retry: .*$/m,
        'retry: { max_attempts: 3, backoff: 100ms, pause_after: { failures: 2, within: 10m } }',
      ),
    );
    const env = sandboxEnv(sandbox.url);
    const db = join(dir, 'state', 'it.db');
    const run = runCli(['run', plan], {
      cwd: dir,
      env,
      onStart: (child) => {
        // Stopped once the breaker has paused it (a paused run waits for an operator forever).
        void until(
          async () => {
            try {
              return fromDb(db, "SELECT seq FROM events WHERE type = 'breaker.tripped'").length;
            } catch {
              return 0;
            }
          },
          (n) => n > 0,
          30_000,
        ).then(() => child.kill('SIGINT'));
      },
    });
    expect((await run).code).toBe(130);

    const json = JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir, env })).stdout) as StatusJson;
    // The breaker's reason sends the operator to exactly this list.
    expect(json.control.paused).toBe(true);
    expect(json.control.pausedBy).toMatch(
      /^paused by the failure breaker: 2 moves failed within 10m .*"Failed moves" in shardmove status/,
    );

    const recorded = await failedMovesOf(sandbox.url);
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

    const status = await runCli(['status', plan], { cwd: dir, env });
    expect(status.stdout).toMatch(/\nFailed moves \(\d+, newest first; the failure breaker counts these\):\n/);
    const first = json.failures[0]!;
    expect(status.stdout).toContain(
      `projects ${first.id} ${first.name} on ${first.source}: move ${first.moveId}, attempt ${first.attempt}`,
    );
    expect(status.stdout).toContain(`    GitLab: ${first.error}`);
    expect(status.stdout).toContain(`    ${first.class}: ${first.remedy}`);
  });
});
