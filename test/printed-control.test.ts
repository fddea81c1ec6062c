/**
 * Every control command shardmove prints for a run is the run's own, whole: its plan as it was
 * named and its `--state`, so that pasting it steers this run. The run here keeps its checkpoint
 * under a `--state` of its own (in a folder with a space), where a `shardmove control --unpause`
 * without them finds nothing. The failure breaker trips at the second failed move (two items
 * always fail, `--broken-items`); the commands in its recorded reason, in `status` and under the
 * run's progress lines are each run as printed (through bash, ./support/cli-harness.ts runPrinted).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  fromDb,
  runCli,
  runPrinted,
  sandboxEnv,
  startSandboxProcess,
  tempDir,
  writePlan,
  writeSeed,
} from './support/cli-harness.js';
import { until } from './support/until.js';

const UNPAUSE = /`(shardmove control [^`]+ --unpause)`/;

describe('the control commands a paused run prints (separate processes)', { timeout: 60_000 }, () => {
  it("name the run's plan and --state, and do what they say when pasted", async () => {
    const dir = tempDir('printed-control');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const sandbox = await startSandboxProcess([
      '--seed',
      writeSeed(dir, { projects: 12, snippets: 0, groups: 0 }),
      '--move-duration',
      '50',
      '--workers',
      '10',
      '--broken-items',
      'project:1,project:2',
    ]);
    onTestFinished(() => sandbox.stop());
    const plan = writePlan(dir, { concurrency: 4 });
    writeFileSync(
      plan,
      readFileSync(plan, 'utf8').replace(
        /^retry: .*$/m,
        'retry: { max_attempts: 3, backoff: 100ms, pause_after: { failures: 2, within: 10m } }',
      ),
    );
    mkdirSync(join(dir, 'my runs'));
    const state = 'my runs/retire.db';
    const db = join(dir, state);
    const env = sandboxEnv(sandbox.url);
    const paused = () => fromDb<{ paused: number }>(db, 'SELECT paused FROM control')[0]?.paused === 1;
    const safely = (f: () => boolean) => () => {
      try {
        return f();
      } catch {
        return false;
      }
    };
    let stop: () => void = () => undefined;
    let printed = '';
    const run = runCli(['run', plan, '--state', state], {
      cwd: dir,
      env,
      onStart: (child) => {
        stop = () => child.kill('SIGINT');
        child.stdout?.on('data', (c) => (printed += String(c)));
      },
    });
    await until(
      async () => safely(paused)(),
      (p) => p,
      30_000,
    );
    // In a pipe the progress line looks at the run every second: the pause's line, with its next
    // step, is there within one look. Unpausing before it would leave nothing to check.
    await until(
      () => Promise.resolve(printed),
      (out) => out.split('\n').some((l) => l.startsWith('  next: ') && l.includes('--unpause')),
      30_000,
    );

    // The breaker's reason, as the checkpoint keeps it: both commands in it name this run.
    const reason = fromDb<{ paused_by: string }>(db, 'SELECT paused_by FROM control')[0]!.paused_by;
    const named = `${plan} --state 'my runs/retire.db'`;
    expect(reason).toContain(`"Failed moves" in shardmove status ${named}, then shardmove control ${named} --unpause`);
    expect(reason.endsWith(`shardmove control ${named} --unpause`)).toBe(true);
    const statusInReason = /in (shardmove status .+), then/.exec(reason)![1]!;
    const shown = await runPrinted(statusInReason, { cwd: dir, env });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/now: PAUSED by the failure breaker/);

    // status names the same command, and pasting it unpauses this run.
    const line = UNPAUSE.exec(shown.stdout)?.[1];
    expect(line).toBe(`shardmove control ${named} --unpause`);
    const unpaused = await runPrinted(line!, { cwd: dir, env });
    expect(unpaused.code, unpaused.stderr).toBe(0);
    expect(unpaused.stdout).toMatch(/^unpaused/);
    expect(safely(() => !paused())()).toBe(true);

    stop();
    const ended = await run;
    // Standard output is a pipe here: the line written when the breaker paused the run has its next step, whole.
    const next = ended.stdout.split('\n').find((l) => l.startsWith('  next: ') && l.includes('--unpause'));
    expect(next, ended.stdout).toBeDefined();
    expect(UNPAUSE.exec(next!)?.[1]).toBe(line);
  });
});
