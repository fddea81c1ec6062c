/**
 * A run under an OAuth token that lives 2 seconds, as real processes: killed with SIGKILL just
 * after refreshes (the old pair already dead), it resumes from the pair written back to the token
 * files. The long run across several lifetimes and its refresh rhythm are judged on one simulated
 * clock: token-oauth-expiry-sim.test.ts.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { invariantViolations, movesOf, runCli, storagesOf, tempDir } from './support/cli-harness.js';
import { sandboxOauthTokens, startLoggedSandbox, writeSecretPlan, writeSecretSeed } from './support/secrets-harness.js';

const TTL_S = 2;
/** 65 items, each move exactly MOVE_MS long, at most WORKERS at once on the sandbox. */
const ITEMS = { projects: 50, snippets: 10, groups: 5 };
const MOVE_MS = 600;
const WORKERS = 5;

describe('OAuth token expiring every 2 s during a run of several lifetimes', { timeout: 90_000 }, () => {
  it('killed with SIGKILL right after refreshes, it resumes with the pair written back and completes', async () => {
    const root = tempDir('token-oauth-kill');
    const work = join(root, 'work');
    mkdirSync(work);
    const sandboxDb = join(root, 'sandbox.db');
    const sandbox = await startLoggedSandbox([
      '--seed',
      writeSecretSeed(root, { ...ITEMS, oauthTtlSeconds: TTL_S }),
      '--db',
      sandboxDb,
      '--move-duration',
      String(MOVE_MS),
      '--workers',
      String(WORKERS),
    ]);
    onTestFinished(async () => {
      await sandbox.stop();
      rmSync(root, { recursive: true, force: true });
    });
    const { plan } = writeSecretPlan(work, { auth: 'oauth', concurrency: WORKERS });
    const env = { SHARDMOVE_URL: sandbox.url };
    // Each kill comes 300 ms after the sandbox issued a new pair: the old one is dead by then, so
    // only the written-back files can carry the run on.
    for (let kill = 0; kill < 2; kill += 1) {
      const seen = sandboxOauthTokens(sandboxDb).refreshes;
      const r = await runCli(['run', plan], {
        cwd: work,
        env,
        onStart: (child) => {
          void (async () => {
            const until = Date.now() + 20_000;
            while (Date.now() < until && sandboxOauthTokens(sandboxDb).refreshes === seen)
              await new Promise((w) => setTimeout(w, 50));
            await new Promise((w) => setTimeout(w, 300));
            child.kill('SIGKILL');
          })();
        },
      });
      expect(r.code, r.stdout).toBeNull();
      expect(sandboxOauthTokens(sandboxDb).refreshes).toBeGreaterThan(seen);
    }
    const last = await runCli(['run', plan], { cwd: work, env });
    expect(last.code, last.stdout).toBe(0);
    for (const kind of ['project', 'snippet', 'group'] as const)
      expect(invariantViolations(await movesOf(sandbox.url, kind), 'cluster'), kind).toEqual([]);
    for (const kind of ['projects', 'snippets', 'groups'] as const) {
      expect(
        [...(await storagesOf(sandbox.url, kind)).values()].filter((s) => s !== 'cluster'),
        kind,
      ).toEqual([]);
    }
  });
});
