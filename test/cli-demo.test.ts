/**
 * `npm start` (= `shardmove demo`): the embedded sandbox, plans/demo.yaml, seeded move failures that
 * are retried, live progress, a verified result and exit 0 (how long it takes, and how long its slots
 * idle while items are due, is the benchmark's to say: `BENCH_ROWS=6 npm run bench`).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { ADMIN_TOKEN, ROOT, runCli, tempDir } from './support/cli-harness.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('shardmove demo', () => {
  it('moves everything with retried failures, none quarantined, verifies and exits 0', async () => {
    dir = tempDir('demo');
    const state = join(dir, 'demo.db');
    const r = await runCli(['demo', '--state', state], { cwd: ROOT });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('DONE: every repository moved and verified');
    expect(r.stdout).toContain('Verification: passed');
    expect(r.stdout).toMatch(/projects: 300 moved of 300, 0 quarantined/);
    expect(r.stdout).toMatch(/snippets: 40 moved of 40/);
    expect(r.stdout).toMatch(/groups: 20 moved of 20/);
    expect(r.stdout).toMatch(/Demo: [1-9]\d* failed moves were retried/);

    const store = openCheckpoint(state, { readOnly: true });
    try {
      const events = store.readEvents(0, 100_000);
      const types = events.map((e) => e.type);
      expect(types.filter((t) => t === 'item.retry').length).toBeGreaterThan(0);
      expect(store.summary(Date.now()).quarantined).toEqual([]);
    } finally {
      store.close();
    }
    for (const text of [r.stdout, r.stderr, readFileSync(join(dir, 'demo.log'), 'utf8')])
      expect(text).not.toContain(ADMIN_TOKEN);
    expect(readFileSync(state).includes(ADMIN_TOKEN)).toBe(false);
  });
});

describe('shardmove demo leaves nothing in the temporary directory', () => {
  /** Runs the demo without --state under a private TMPDIR; signals it once its progress shows. */
  async function interrupted(signals: number) {
    dir = tempDir('demo-tmp');
    const tmp = join(dir, 'tmp');
    mkdirSync(tmp);
    let sawProgress = false;
    const r = await runCli(['demo'], {
      cwd: ROOT,
      env: { TMPDIR: tmp },
      onStart: (child) => {
        let out = '';
        child.stdout?.on('data', (c) => {
          out += String(c);
          // The first progress line (non-TTY: after ~10 s) is too slow to wait for: the first drain step suffices.
          if (sawProgress || !/checkpoint: .*\n +\(temporary/.test(out)) return;
          sawProgress = true;
          const created = readdirSync(tmp);
          expect(created.some((f) => f.startsWith('shardmove-demo-'))).toBe(true);
          // Two different signals back to back: both are delivered (one kind is not queued), and the
          // second one exits at once, before the first one's orderly stop could clean up.
          setTimeout(() => {
            child.kill('SIGINT');
            if (signals > 1) child.kill('SIGTERM');
          }, 1_500);
        });
      },
    });
    // tsx keeps its compile cache there too (tsx-<uid>): only the demo's own directory counts.
    return { r, left: readdirSync(tmp).filter((f) => f.startsWith('shardmove-')), sawProgress };
  }

  it('on Ctrl-C: exits 130 and removes its checkpoint directory', async () => {
    const { r, left, sawProgress } = await interrupted(1);
    expect(sawProgress).toBe(true);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).toContain('temporary checkpoint is removed');
    expect(left).toEqual([]);
  });

  it('on a second signal (immediate exit): still removes it', async () => {
    const { r, left } = await interrupted(2);
    expect(r.code, r.stderr).toBe(130);
    expect(left).toEqual([]);
  });
});
