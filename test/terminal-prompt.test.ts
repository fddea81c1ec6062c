/**
 * A confirmation prompt on a real terminal (a tmux pane, read back as the terminal renders it): the
 * readline library redraws its question with cursor codes of its own, which the escape of hostile
 * names used to turn into text (`\u001b[1G\u001b[0Jremove it? [y/N]`). The question renders as a
 * question, `y` and `n` do what they say (judged from the checkpoint's lock row), and a hostile name
 * printed before the question is still escaped.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { BIN, fromDb, tempDir, writePlan } from './support/cli-harness.js';
import { startPane, tmuxSkipReason } from './support/tmux.js';

const skip = tmuxSkipReason();
if (skip) console.warn(`skipping the terminal prompt tests: ${skip}`);

/** A screen clear, a window title, a bell and a carriage return in the lock holder's host name. */
const HOSTILE_HOST = 'evil\u001b[2J\u001b]0;pwned\u0007\rhost';

/** A checkpoint whose lock is held by a process on another host (so `unlock` asks). */
function lockedCheckpoint(dir: string): string {
  const file = join(dir, 'locked.db');
  openCheckpoint(file).close();
  const raw = new Database(file);
  try {
    raw
      .prepare(
        'INSERT INTO lock (id, pid, host, started_at, heartbeat_at, lease_ms, generation) VALUES (1, 4242, ?, ?, ?, ?, 1)',
      )
      .run(HOSTILE_HOST, Date.now(), Date.now(), 60_000);
  } finally {
    raw.close();
  }
  return file;
}

const lockRows = (file: string) => fromDb<{ pid: number }>(file, 'SELECT pid FROM lock');

describe.skipIf(skip !== null)('a confirmation prompt on a real terminal (tmux)', { timeout: 60_000 }, () => {
  for (const [answer, removed] of [
    ['y', true],
    ['n', false],
  ] as const) {
    it(`unlock: the question renders as a question, and "${answer}" ${removed ? 'removes' : 'keeps'} the lock`, async () => {
      const dir = tempDir('prompt');
      const plan = writePlan(dir);
      const file = lockedCheckpoint(dir);
      const pane = startPane([process.execPath, BIN, 'unlock', plan, '--state', file], { columns: 200, cwd: dir });

      const asked = await pane.waitFor(/remove it\? \[y\/N\]/);
      // The redraw codes did their work instead of being printed.
      expect(asked).not.toContain('\\u001b[1G');
      expect(asked).not.toContain('\\u001b[0J');
      expect(asked).toMatch(/^remove it\? \[y\/N\] ?$/m);
      // The host name was escaped: the screen was not cleared and shows the codes as text.
      expect(asked).toContain('evil\\u001b[2J\\u001b]0;pwned\\u0007\\u000dhost');
      expect(asked).toMatch(/the run lock of .*locked\.db is held by pid 4242/);

      pane.send(answer, 'Enter');
      const after = await pane.waitForExit();
      expect(after).toMatch(new RegExp(`^remove it\\? \\[y/N\\] ${answer}$`, 'm'));
      expect(pane.status()).toBe(removed ? 0 : 1);
      expect(after).toContain(removed ? 'unlocked: removed the lock of pid 4242' : 'not removed; nothing changed');
      expect(lockRows(file)).toHaveLength(removed ? 0 : 1);
    });
  }
});
