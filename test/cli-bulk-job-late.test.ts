/**
 * A bulk job that waits in Sidekiq's queue, end to end: a real `shardmove run` against a Community
 * Edition sandbox whose bulk jobs wait 75 s of its clock (longer than the minute the drain once
 * allowed a job for its first move). GitLab's API says nothing of a queued job, so a drain that
 * took "no move yet" for "nothing there" would say the snippets' storage is empty while the job
 * still waits, and the job would then move them after the run. The run must either wait for the
 * job and end with the source empty, or not exit 0; and nothing may move after it ended. The
 * sandbox's clock is moved on only once the run shows it waits for the queue, so the situation
 * is built, not raced: a run that does not wait ends before the job ever runs.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import { runCli, sandboxEnv, tempDir, writeChangedSeed, writePlan } from './support/cli-harness.js';
import { realTimersAt } from './support/fake-clock.js';

/** The bulk job's wait in the queue, on the sandbox's clock. */
const BULK_DELAY_MS = 75_000;
const HOLD = "HELD: the bulk move's job waits in Sidekiq's queue";

describe('a late bulk job (CE snippets, --bulk-delay 75s)', { timeout: 120_000 }, () => {
  it('the run waits for the job, ends with the source empty, and nothing moves after it', async () => {
    const dir = tempDir('bulk-late');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const seed = writeChangedSeed(dir, { projects: 2, snippets: 6, groups: 0 }, (s) => {
      s.setIn(['instance', 'edition'], 'ce');
      s.setIn(['instance', 'tier'], 'free');
    });
    let shift = 0;
    const sb = await startSandbox({
      seed,
      moveDurationMs: 20,
      workers: 20,
      clock: realTimersAt(() => Date.now() + shift),
      faults: { bulkDelayMs: BULK_DELAY_MS },
    });
    onTestFinished(() => sb.close());
    const advance = (ms: number) => {
      shift += ms;
      sb.state.engine.kick();
    };
    // The sandbox's own records (CE shows no snippet's storage through the API).
    const snippetsOff = () =>
      sb.state.db.prepare("SELECT id FROM items WHERE kind = 'snippet' AND storage <> 'cluster'").all();
    const moveCount = () => (sb.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number }).n;
    expect(snippetsOff().length).toBeGreaterThan(0);

    // Once the run shows the hold, the sandbox's clock runs 5 s ahead every 100 ms of real time.
    let pump: NodeJS.Timeout | null = null;
    let heldSeen = false;
    const watch = (child: ChildProcess) =>
      child.stdout?.on('data', (chunk) => {
        if (heldSeen || !String(chunk).includes(HOLD)) return;
        heldSeen = true;
        pump = setInterval(() => advance(5_000), 100);
      });
    const plan = writePlan(dir, { concurrency: 10 });
    const res = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sb.url), onStart: watch });
    if (pump) clearInterval(pump);
    const said = res.stdout + res.stderr;
    const movesAtEnd = moveCount();
    const left = snippetsOff();

    // Every job the run posted has had its time: nothing may move after the run ended.
    advance(2 * BULK_DELAY_MS);
    await new Promise((r) => setTimeout(r, 500));
    expect(moveCount(), said).toBe(movesAtEnd);

    if (res.code === 0) {
      expect(left, said).toEqual([]);
      expect(heldSeen, said).toBe(true);
      expect(res.stdout).toContain('DONE: every repository moved and verified');
    } else {
      // Not verified: it says which kind and how to check by hand.
      expect(said).toMatch(/snippets on nfs-1: not verified/);
      expect(said).toContain("SnippetRepository.for_repository_storage('nfs-1').count");
    }
    expect(res.code, said).toBe(0);
  });
});
