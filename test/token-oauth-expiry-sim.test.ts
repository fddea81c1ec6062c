/**
 * A long run under an OAuth token that lives 2 seconds, on the in-process harness: the orchestrator
 * and the sandbox share one simulated clock, so the run spans several token lifetimes of that
 * clock in the milliseconds its own work takes. The run completes, and the sandbox's own
 * credential records show the rotation: one refresh per lifetime or so, each after three quarters
 * of the previous token's life, not a refresh before every request. (A kill and a resume from the
 * written-back pair is a real process's story: token-oauth-expiry.test.ts.)
 */
import { lstatSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { invariantViolations, movesOf, storagesOf, tempDir } from './support/cli-harness.js';
import { sandboxOauthTokens, writeSecretPlan, writeSecretSeed } from './support/secrets-harness.js';
import { startSimulation } from './support/sim-harness.js';

const TTL_S = 2;
/** 65 items, each move exactly MOVE_MS long, at most WORKERS at once on the sandbox. */
const ITEMS = { projects: 50, snippets: 10, groups: 5 };
const MOVE_MS = 600;
const WORKERS = 5;
/**
 * The least time the run can take on its clock, however fast the machine or the orchestrator: the
 * sandbox's own work. Chosen to span more than three token lifetimes by construction.
 */
const MIN_RUN_MS = Math.ceil((ITEMS.projects + ITEMS.snippets + ITEMS.groups) / WORKERS) * MOVE_MS;

describe('OAuth token expiring every 2 s during a run of several lifetimes (one simulated clock)', () => {
  it('completes, refreshing about once per lifetime (sandbox records), never in a storm', async () => {
    const root = tempDir('token-oauth-sim');
    onTestFinished(() => rmSync(root, { recursive: true, force: true }));
    const work = join(root, 'work');
    mkdirSync(work);
    const sandboxDb = join(root, 'sandbox.db');
    const sim = await startSimulation({
      seed: writeSecretSeed(root, { ...ITEMS, oauthTtlSeconds: TTL_S }),
      db: sandboxDb,
      moveDurationMs: MOVE_MS,
      workers: WORKERS,
    });
    const { plan } = writeSecretPlan(work, { auth: 'oauth', concurrency: WORKERS });
    // The refresh token lives elsewhere (a secrets directory) behind a symlink: it is updated there.
    const vault = join(root, 'vault');
    mkdirSync(vault);
    renameSync(join(work, 'refresh.txt'), join(vault, 'refresh.txt'));
    symlinkSync(join(vault, 'refresh.txt'), join(work, 'refresh.txt'));
    const started = sim.clock.now();
    const r = await sim.shardmove(['run', plan], { cwd: work, env: { SHARDMOVE_URL: sim.url } });
    const tookMs = sim.clock.now() - started;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('Verification: passed');
    expect(MIN_RUN_MS).toBeGreaterThan(3 * TTL_S * 1000);
    for (const kind of ['projects', 'snippets', 'groups'] as const) {
      expect(
        [...(await storagesOf(sim.url, kind)).values()].filter((s) => s !== 'cluster'),
        kind,
      ).toEqual([]);
    }
    let finished = 0;
    for (const kind of ['project', 'snippet', 'group'] as const) {
      const moves = await movesOf(sim.url, kind);
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
});
