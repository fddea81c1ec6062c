/**
 * What an operator sees during a rollback, on a real terminal (a tmux pane 80 columns wide, read
 * back as the terminal renders it): `shardmove revert` asks on the terminal (answered `y`), moves
 * items back, the failure breaker pauses it, an operator takes the pause over with `shardmove
 * control --pause`, and Ctrl-C stops it. The revert's screen used to go on showing a rate and an
 * ETA through all of it. The situation is built, not waited for: the moves back of three items
 * always fail (`--broken-items`), and the breaker trips at the second failure. What happened is
 * judged from the checkpoint (the breaker's event, the control row), what was shown from the screen.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { SandboxProcess } from './support/cli-harness.js';
import { BIN, fromDb, runCli, sandboxEnv, startSandboxProcess, tempDir, writeSeed } from './support/cli-harness.js';
import { startPane, tmuxSkipReason } from './support/tmux.js';

const skip = tmuxSkipReason();
if (skip) console.warn(`skipping the progress screen tests: ${skip}`);

function writeBreakerPlan(dir: string): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: screen',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      'move:',
      '  from: [nfs-1, nfs-2, default]',
      '  to: cluster',
      '  kinds: [projects]',
      '  concurrency: 3',
      'weights: { cluster: 100, nfs-1: 0, nfs-2: 0, default: 0 }',
      'poll: { interval: 100ms }',
      'retry: { max_attempts: 3, backoff: 100ms, pause_after: { failures: 2, within: 10m } }',
      '',
    ].join('\n'),
  );
  return file;
}

async function sandbox(args: string[]): Promise<SandboxProcess> {
  const s = await startSandboxProcess(args);
  onTestFinished(() => s.stop());
  return s;
}

/** The screen's rows, trailing blanks dropped; the live line is the last one. */
const rows = (screen: string) => screen.split('\n').map((r) => r.trimEnd());

describe.skipIf(skip !== null)('the progress line of a revert on a real terminal (tmux, 80 columns)', () => {
  it(
    'shows the breaker, an operator pause and the stop, each as a line that stays, with no ETA while paused',
    { timeout: 90_000 },
    async () => {
      const dir = tempDir('screen');
      const seed = writeSeed(dir, { projects: 24, snippets: 0, groups: 0 });
      const db = join(dir, 'sandbox.db');
      const plan = writeBreakerPlan(dir);
      const forward = await sandbox(['--seed', seed, '--db', db, '--move-duration', '20', '--workers', '20']);
      const ran = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(forward.url) });
      expect(ran.code, ran.stderr).toBe(0);
      await forward.stop();

      // The same instance again (on its own address: a revert works only on its forward run's
      // instance), where moving three of the items back always fails.
      const broken = fromDb<{ id: number }>(
        join(dir, 'state', 'screen.db'),
        "SELECT id FROM items WHERE kind = 'projects' AND state = 'moved' ORDER BY id LIMIT 3",
      ).map((r) => `project:${r.id}`);
      const back = await sandbox([
        '--port',
        new URL(forward.url).port,
        '--seed',
        seed,
        '--db',
        db,
        '--move-duration',
        '400',
        '--workers',
        '20',
        '--broken-items',
        broken.join(','),
      ]);
      const env = sandboxEnv(back.url);
      const pane = startPane([process.execPath, BIN, 'revert', plan], { columns: 80, cwd: dir, env });

      // The rollback's question, answered on the terminal.
      await pane.waitFor(/move these items back\? \[y\/N\]/);
      pane.send('y', 'Enter');

      const tripped = await pane.waitFor(/PAUSED by the failure breaker: \d+ moves failed within 10m/);
      const revertDb = join(dir, 'state', 'screen.revert.db');
      expect(fromDb(revertDb, "SELECT seq FROM events WHERE type = 'breaker.tripped'")).toHaveLength(1);
      // The note stays above; the live line says who paused it, and no ETA counts down.
      expect(
        rows(tripped).some((r) => /^\d\d:\d\d:\d\d PAUSED by the failure breaker: 2 moves failed within 10m$/.test(r)),
      ).toBe(true);
      // 80 columns: the pause and its reason, the counts with the moves in flight; the step's label gave way.
      const live = await pane.waitFor((s) => /PAUSED \(breaker\).*\d+\/24 done/.test(rows(s).at(-1) ?? ''));
      expect(rows(live).at(-1)).toMatch(/^(\[\S+\] )?PAUSED \(breaker\): 2 moves failed within 10m \| \d+\/24 done/);
      // The next step under the note (the terminal wraps it; its words are checked in printed-control.test.ts).
      expect(live).toMatch(/^ {2}next: "Failed moves" in status lists what it counted; `shardmove control /m);
      expect(rows(live).every((r) => r.length <= 80)).toBe(true);
      expect(live).not.toMatch(/moves\/min/);

      // An operator takes the pause over: the screen says so at once.
      const control = await runCli(['control', plan, '--state', revertDb, '--pause'], { cwd: dir, env });
      expect(control.code, control.stderr).toBe(0);
      await pane.waitFor(/^\d\d:\d\d:\d\d PAUSED by shardmove control$/m);
      // No longer "PAUSED (breaker)": the operator's pause (its full form where the label gave way).
      await pane.waitFor((s) => /(^|\] |\| )PAUSED( by shardmove control)? \| \d+\/24 done/.test(rows(s).at(-1) ?? ''));
      expect(
        fromDb<{ paused: number; paused_by: string | null }>(revertDb, 'SELECT paused, paused_by FROM control'),
      ).toEqual([{ paused: 1, paused_by: null }]);

      pane.send('C-c');
      const stopped = await pane.waitForExit();
      expect(pane.status(), stopped).toBe(130);
      // The question rendered as a question; the live line was taken away, the notes stayed.
      expect(stopped).toMatch(/^move these items back\? \[y\/N\] y$/m);
      expect(stopped).toMatch(/PAUSED by the failure breaker/);
      expect(stopped).not.toMatch(/ETA \d/);
    },
  );
});
