/**
 * `status --watch` on a real terminal (a tmux pane 80 columns wide, read back as the terminal
 * renders it) while a drain runs: one status screen redrawn in place, never a second block below the
 * first, following the run as its moves end and as an operator pauses it, then Ctrl-C exits 0. The
 * run's moves are held by the sandbox's own clock (./support/held-sandbox.ts), so what changes on
 * the screen, and when, is built by the test.
 */
import { describe, expect, it } from 'vitest';
import { BIN, runCli, sandboxEnv, tempDir, writePlan } from './support/cli-harness.js';
import { ended, startHeldSandbox } from './support/held-sandbox.js';
import { startPane, tmuxSkipReason } from './support/tmux.js';
import { until } from './support/until.js';

const skip = tmuxSkipReason();
if (skip) console.warn(`skipping the status --watch screen test: ${skip}`);

/** How many status screens the terminal shows at once: each starts with the plan's line. */
const screens = (s: string) => s.split('\n').filter((r) => /^Plan it: /.test(r)).length;

describe.skipIf(skip !== null)('status --watch on a real terminal (tmux, 80 columns)', () => {
  it(
    'redraws one screen in place as a running drain moves and is paused, and ends 0 on Ctrl-C',
    { timeout: 90_000 },
    async () => {
      const dir = tempDir('watch-screen');
      const held = await startHeldSandbox(dir, { projects: 16, snippets: 0, groups: 0 });
      const plan = writePlan(dir, { concurrency: 4 });
      const env = sandboxEnv(held.url);
      const run = runCli(['run', plan], { cwd: dir, env });
      await until(
        async () => (await held.moves()).filter((m) => !ended(m)).length,
        (n) => n >= 4,
        30_000,
      );
      const pane = startPane([process.execPath, BIN, 'status', plan, '--watch', '--interval', '1s'], {
        columns: 80,
        rows: 40,
        cwd: dir,
      });
      const first = await pane.waitFor(/Plan it: running/);
      expect(screens(first)).toBe(1);
      // No pipe header on a terminal: the screen is replaced, not appended to.
      expect(first).not.toContain('=== shardmove status at');
      const done = (s: string) => /(\d+)\/\d+ done/.exec(s)?.[1] ?? /projects\s+(\d+)\/\d+ done/.exec(s)?.[1] ?? null;
      const before = done(first);

      held.letGo();
      const moved = await pane.waitFor((s) => done(s) !== before && /Plan it: running/.test(s));
      expect(screens(moved)).toBe(1);

      const paused = await runCli(['control', plan, '--pause'], { cwd: dir });
      expect(paused.code, paused.stderr).toBe(0);
      const held2 = await pane.waitFor(/PAUSED by shardmove control/);
      expect(screens(held2)).toBe(1);
      for (const row of held2.split('\n')) expect(row.length).toBeLessThanOrEqual(80);

      pane.send('C-c');
      // The terminal echoes ^C and the watch prints nothing after it: the shell's status follows on that row.
      await pane.waitFor(/\[exit 0\]/);

      await runCli(['control', plan, '--unpause'], { cwd: dir });
      const result = await held.pumpUntil(run);
      expect(result.code, result.stderr).toBe(0);
    },
  );
});
