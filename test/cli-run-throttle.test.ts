/**
 * The load-aware throttle end to end: a real `shardmove run` against the in-process
 * sandbox whose destination turns unhealthy in `/-/readiness` mid-run. The throttle stops new moves
 * (cap 0, an audit event naming Gitaly), sends no POST while it lasts, and lets the cap back up
 * once the storage recovers; the run still ends with everything moved.
 */
import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { runCli, sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';

describe('shardmove run under the throttle (in-process sandbox)', { timeout: 90_000 }, () => {
  let sandbox: RunningSandbox;
  let dir: string;
  beforeAll(async () => {
    dir = tempDir('throttle');
    sandbox = await startSandbox({
      seed: writeSeed(dir, { projects: 300, snippets: 5, groups: 3 }),
      workers: 10,
      moveDurationMs: 100,
    });
  });
  afterAll(async () => {
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an unhealthy destination drives the cap to 0 and no POST is sent; recovery lets it grow again', async () => {
    const plan = writePlan(dir, { concurrency: 10 });
    // A move in flight when the destination goes down fails, and so may a retry launched before
    // the next health check sees it; the retries here outlast the outage whatever the machine's
    // load, so the run ends with everything moved and the test is about the cap alone.
    writeFileSync(plan, readFileSync(plan, 'utf8').replace(/^retry: .*$/m, 'retry: { max_attempts: 20, backoff: 1s }'));
    appendFileSync(plan, 'throttle:\n  health_every: 500ms\n  increase_every: 500ms\n');
    const unreachable = sandbox.state.config.unreachable;
    const run = await runCli(['run', plan], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
      onStart: () => {
        // Once the drain is well under way (judged from the sandbox's own move records), the
        // destination fails its health check for three seconds.
        const watch = setInterval(() => {
          const { n } = sandbox.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number };
          if (n < 30) return;
          clearInterval(watch);
          unreachable.push('cluster');
          setTimeout(() => unreachable.splice(0), 3000);
        }, 20);
      },
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);

    const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
    const events = store.readEvents(0, 1_000_000);
    store.close();
    const caps = events.filter((e) => e.type === 'throttle.cap');
    const down = caps.find((e) => e.data['cap'] === 0);
    expect(down?.data['reason']).toMatch(/Gitaly unhealthy in \/-\/readiness: cluster/);
    const up = caps.find((e) => e.seq > (down?.seq ?? 0) && Number(e.data['cap']) > 0);
    expect(up).toBeDefined();
    // The cap grew back past 1 after recovery, and never above move.concurrency.
    expect(Math.max(...caps.filter((e) => e.seq > up!.seq).map((e) => Number(e.data['cap'])))).toBeGreaterThan(1);
    expect(Math.max(...caps.map((e) => Number(e.data['cap'])))).toBeLessThanOrEqual(10);
    // No move decided between the cut and the recovery: every POST is preceded by its intent, and
    // no intent is recorded while the cap is 0 (judged by order in the log, not by how long an
    // answer took on a loaded machine).
    const posts = events.filter(
      (e) =>
        e.type === 'http.mutating' &&
        String(e.data['method']) === 'POST' &&
        /repository_storage_moves/.test(String(e.data['path'])),
    );
    expect(events.filter((e) => e.type === 'move.intent' && e.seq > down!.seq && e.seq < up!.seq)).toEqual([]);
    expect(up!.at - down!.at).toBeGreaterThan(1000);
    expect(posts.length).toBeGreaterThan(0);
  });
});
