/**
 * A long run under an OAuth token that lives 2 seconds: the run spans several lifetimes and
 * completes, and the sandbox's own credential records show the rotation: one refresh per lifetime
 * or so, each after three quarters of the previous token's life, not a refresh before every request.
 * Killed with SIGKILL just after refreshes (the old pair already dead), it resumes from the pair
 * written back to the token files.
 */
import { lstatSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { invariantViolations, movesOf, runCli, storagesOf, tempDir } from './support/cli-harness.js';
import { sandboxOauthTokens, startLoggedSandbox, writeSecretPlan, writeSecretSeed } from './support/secrets-harness.js';

const TTL_S = 2;
/** 65 items, each move exactly MOVE_MS long, at most WORKERS at once on the sandbox. */
const ITEMS = { projects: 50, snippets: 10, groups: 5 };
const MOVE_MS = 600;
const WORKERS = 5;
/**
 * The least time the run can take, however fast the machine or the orchestrator: the sandbox's own
 * work. Chosen to span more than three token lifetimes by construction, not by measurement.
 */
const MIN_RUN_MS = Math.ceil((ITEMS.projects + ITEMS.snippets + ITEMS.groups) / WORKERS) * MOVE_MS;

describe('OAuth token expiring every 2 s during a run of several lifetimes', { timeout: 90_000 }, () => {
  it('completes, refreshing about once per lifetime (sandbox records), never in a storm', async () => {
    const root = tempDir('token-oauth');
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
    // The refresh token lives elsewhere (a secrets directory) behind a symlink: it is updated there.
    const vault = join(root, 'vault');
    mkdirSync(vault);
    renameSync(join(work, 'refresh.txt'), join(vault, 'refresh.txt'));
    symlinkSync(join(vault, 'refresh.txt'), join(work, 'refresh.txt'));
    const started = Date.now();
    const r = await runCli(['run', plan], { cwd: work, env: { SHARDMOVE_URL: sandbox.url } });
    const tookMs = Date.now() - started;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('Verification: passed');
    expect(MIN_RUN_MS).toBeGreaterThan(3 * TTL_S * 1000);
    for (const kind of ['projects', 'snippets', 'groups'] as const) {
      expect(
        [...(await storagesOf(sandbox.url, kind)).values()].filter((s) => s !== 'cluster'),
        kind,
      ).toEqual([]);
    }
    let finished = 0;
    for (const kind of ['project', 'snippet', 'group'] as const) {
      const moves = await movesOf(sandbox.url, kind);
      expect(invariantViolations(moves, 'cluster'), kind).toEqual([]);
      finished += moves.filter((m) => m.state === 'finished').length;
    }
    // The work MIN_RUN_MS counts was really done.
    expect(finished).toBeGreaterThanOrEqual(ITEMS.projects + ITEMS.snippets + ITEMS.groups);

    const issued = sandboxOauthTokens(sandboxDb);
    // The seeded token's expiry is unknown to the client: its first refresh comes on the first 401
    // after the sandbox started; from then on one refresh per 3/4 lifetime while the run goes on.
    // At least: the run lasted MIN_RUN_MS or more. At most: no storm over the time it really took.
    expect(issued.refreshes).toBeGreaterThanOrEqual(Math.floor(MIN_RUN_MS / (TTL_S * 1000)) - 1);
    expect(issued.refreshes).toBeLessThanOrEqual(Math.ceil(tookMs / (0.75 * TTL_S * 1000)) + 2);
    const gaps = issued.createdMs.slice(1).map((t, i) => t - issued.createdMs[i]!);
    expect(
      gaps.filter((g) => g < 0.6 * TTL_S * 1000),
      JSON.stringify(gaps),
    ).toEqual([]);
    // The token files hold the newest pair, so a later run starts from working tokens.
    expect(readFileSync(join(work, 'access.txt'), 'utf8').trim()).toBe(issued.values.at(-2));
    expect(readFileSync(join(vault, 'refresh.txt'), 'utf8').trim()).toBe(issued.values.at(-1));
    expect(lstatSync(join(work, 'refresh.txt')).isSymbolicLink()).toBe(true);
  });

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
