/**
 * `npm start` (= `shardmove demo`): the embedded sandbox, plans/demo.yaml, seeded move failures that
 * are retried, live progress, a verified result and exit 0, well within a minute.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { ADMIN_TOKEN, ROOT, runCli, tempDir } from './support/cli-harness.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('shardmove demo', () => {
  it('moves everything with retried failures, none quarantined, verifies and exits 0 in under a minute', async () => {
    dir = tempDir('demo');
    const state = join(dir, 'demo.db');
    const started = Date.now();
    const r = await runCli(['demo', '--state', state], { cwd: ROOT });
    const tookMs = Date.now() - started;
    expect(r.code, r.stderr).toBe(0);
    expect(tookMs).toBeLessThan(60_000);
    expect(r.stdout).toContain('DONE: every repository moved and verified');
    expect(r.stdout).toContain('Verification: passed');
    expect(r.stdout).toMatch(/projects: 300 moved of 300, 0 quarantined/);
    expect(r.stdout).toMatch(/snippets: 40 moved of 40/);
    expect(r.stdout).toMatch(/groups: 20 moved of 20/);
    expect(r.stdout).toMatch(/Demo: [1-9]\d* failed moves were retried/);

    const store = openCheckpoint(state, { readOnly: true });
    try {
      const types = store.readEvents(0, 100_000).map((e) => e.type);
      expect(types.filter((t) => t === 'item.retry').length).toBeGreaterThan(0);
      expect(store.summary(Date.now()).quarantined).toEqual([]);
    } finally {
      store.close();
    }
    for (const text of [r.stdout, r.stderr, readFileSync(join(dir, 'demo.log'), 'utf8')]) expect(text).not.toContain(ADMIN_TOKEN);
    expect(readFileSync(state).includes(ADMIN_TOKEN)).toBe(false);
  });
});
