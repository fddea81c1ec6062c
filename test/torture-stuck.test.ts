/**
 * Stuck moves end to end, sandbox and CLI as separate processes: a move that stays in
 * `started` longer than `poll.stuck_after` is reported in `status` and the log with the item's
 * read-only state and ends quarantined as `stuck`; a later run never schedules another move while
 * the sandbox still shows it running, and releases the item once the move ended (failed: moved
 * again; finished: counted as moved, no new move).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { SandboxProcess } from './support/cli-harness.js';
import {
  movesOf,
  runCli,
  sandboxEnv,
  startSandboxProcess,
  storagesOf,
  tempDir,
  writeSeed,
} from './support/cli-harness.js';

function writeStuckPlan(dir: string): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: stuck',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      '  timeout: 10s',
      'move:',
      '  from: [nfs-1, nfs-2, default]',
      '  to: cluster',
      '  kinds: [projects]',
      '  mode: throttled',
      '  concurrency: 10',
      'weights: { cluster: 100, nfs-1: 0, nfs-2: 0, default: 0 }',
      'poll: { interval: 100ms, stuck_after: 1s }',
      'retry: { max_attempts: 2, backoff: 100ms }',
      'verify: true',
      '',
    ].join('\n'),
  );
  return file;
}

describe('stuck moves (separate processes, real HTTP)', () => {
  it(
    'quarantines a move stuck in started, never reschedules it while it runs, releases it once it ended',
    { timeout: 60_000 },
    async () => {
      const dir = tempDir('stuck');
      const db = join(dir, 'sandbox.db');
      const seed = writeSeed(dir, { projects: 3, snippets: 1, groups: 1 });
      let sandbox: SandboxProcess = await startSandboxProcess([
        '--db',
        db,
        '--seed',
        seed,
        '--stuck-rate',
        '1',
        '--move-duration',
        '50',
      ]);
      onTestFinished(async () => {
        await sandbox.stop();
        rmSync(dir, { recursive: true, force: true });
      });
      const port = new URL(sandbox.url).port;
      const plan = writeStuckPlan(dir);
      const state = join(dir, 'stuck.db');
      const run = () => runCli(['run', plan, '--state', state], { cwd: dir, env: sandboxEnv(sandbox.url) });

      const first = await run();
      expect(first.code, first.stderr).toBe(3);
      const ids = [...(await storagesOf(sandbox.url, 'projects')).keys()].sort((a, b) => a - b);
      expect(ids).toHaveLength(3);
      const moves1 = await movesOf(sandbox.url, 'project');
      expect(moves1.map((m) => [m.itemId, m.state]).sort()).toEqual(ids.map((id) => [id, 'started']));

      const status = await runCli(['status', plan, '--state', state], { cwd: dir, env: sandboxEnv(sandbox.url) });
      expect(status.stdout).toContain('Stuck (3):');
      for (const m of moves1) expect(status.stdout).toContain(`projects ${m.itemId}: move ${m.id} started, read-only`);
      expect(status.stdout).toMatch(/stuck: move \d+ still started after \d+s/);
      const log = readFileSync(join(dir, 'stuck.log'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(log.filter((l) => l.msg === 'move stuck, item quarantined')).toHaveLength(3);
      const states = log.filter((l) => l.msg === 'stuck item: repository read-only');
      expect(states.map((l) => l.id).sort()).toEqual(ids);
      for (const l of states) expect(l).toMatchObject({ moveState: 'started', readOnly: true });

      // A later run while the moves still run: nothing new is scheduled.
      const second = await run();
      expect(second.code, second.stderr).toBe(3);
      expect(await movesOf(sandbox.url, 'project')).toEqual(moves1);

      // The instance ends two of the moves (one failed, one finished) while shardmove is not running.
      await sandbox.stop();
      const [failed, finished, still] = moves1 as [
        (typeof moves1)[number],
        (typeof moves1)[number],
        (typeof moves1)[number],
      ];
      const sdb = new Database(db);
      const now = new Date().toISOString();
      sdb
        .prepare(
          "UPDATE moves SET state = 'failed', error_message = 'job lease expired', due_at_ms = NULL, updated_at = ? WHERE id = ?",
        )
        .run(now, failed.id);
      sdb.prepare("UPDATE items SET read_only = 0 WHERE kind = 'project' AND id = ?").run(failed.itemId);
      sdb
        .prepare("UPDATE moves SET state = 'finished', due_at_ms = NULL, updated_at = ? WHERE id = ?")
        .run(now, finished.id);
      sdb
        .prepare("UPDATE items SET read_only = 0, storage = 'cluster' WHERE kind = 'project' AND id = ?")
        .run(finished.itemId);
      sdb.close();
      sandbox = await startSandboxProcess(['--db', db, '--seed', seed, '--port', port, '--move-duration', '50']);

      const third = await run();
      expect(third.code, third.stderr).toBe(3);
      const moves3 = await movesOf(sandbox.url, 'project');
      const after = (id: number) => moves3.filter((m) => m.itemId === id);
      expect(after(failed.itemId).map((m) => m.state)).toEqual(['failed', 'finished']);
      expect(after(finished.itemId).map((m) => m.state)).toEqual(['finished']);
      expect(after(still.itemId).map((m) => m.state)).toEqual(['started']);
      const storages = await storagesOf(sandbox.url, 'projects');
      expect(storages.get(failed.itemId)).toBe('cluster');
      expect(storages.get(finished.itemId)).toBe('cluster');
      const status3 = await runCli(['status', plan, '--state', state], { cwd: dir, env: sandboxEnv(sandbox.url) });
      expect(status3.stdout).toContain('Stuck (1):');
      expect(status3.stdout).toContain(`projects ${still.itemId}: move ${still.id} started, read-only`);
    },
  );
});
