/**
 * `shardmove weights restore` against the sandbox after a real run: refused while the
 * run holds the checkpoint, puts back the weights recorded before the run's first write, and a
 * second call changes nothing.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { restoreTarget } from '../src/actors/weight-changes.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { CliResult } from './support/cli-harness.js';
import {
  ADMIN_TOKEN,
  movesOf,
  runCli,
  sandboxEnv,
  startSandboxProcess,
  tempDir,
  writePlan,
  writeSeed,
} from './support/cli-harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function weightsOf(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}

/** Every file in `dir` with a digest of its bytes. */
const filesOf = (dir: string) =>
  Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((n) => [
        n,
        createHash('sha256')
          .update(readFileSync(join(dir, n)))
          .digest('hex'),
      ]),
  );

/** Weights as GitLab weighs them: a storage absent from the hash weighs 0. */
const positive = (w: Record<string, number>) => Object.fromEntries(Object.entries(w).filter(([, v]) => v > 0));

describe('restoreTarget', () => {
  it('puts back the recorded weights and zeroes storages the record did not name', () => {
    expect(restoreTarget({ default: 100 }, { default: 0, cluster: 100 })).toEqual({
      target: { default: 100, cluster: 0 },
      changes: [
        { storage: 'cluster', from: 100, to: 0 },
        { storage: 'default', from: 0, to: 100 },
      ],
    });
    expect(restoreTarget({ default: 100, cluster: 0 }, { default: 100 }).changes).toEqual([]);
  });
});

describe('shardmove weights restore (separate processes, real HTTP)', { timeout: 90_000 }, () => {
  it('refuses during a run, restores after it, and a second call changes nothing', async () => {
    const dir = tempDir('weights');
    const sandbox = await startSandboxProcess([
      '--move-duration',
      '100',
      '--workers',
      '10',
      '--seed',
      writeSeed(dir, { projects: 30, snippets: 3, groups: 2 }),
    ]);
    onTestFinished(async () => {
      await sandbox.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const plan = writePlan(dir, { concurrency: 3 });
    const env = sandboxEnv(sandbox.url);
    const before = await weightsOf(sandbox.url);
    const restore = (...args: string[]) => runCli(['weights', 'restore', plan, ...args], { cwd: dir, env });

    const nothing = await restore('--yes');
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('no checkpoint at');

    const run: Promise<CliResult> = runCli(['run', plan], { cwd: dir, env });
    const until = Date.now() + 20_000;
    while ((await movesOf(sandbox.url, 'project')).length < 3 && Date.now() < until) await sleep(50);
    const during = await restore('--yes');
    expect(during.code, during.stderr).toBe(4);
    expect(during.stderr).toMatch(/locked by pid \d+/);
    const ended = await run;
    expect(ended.code, ended.stderr).toBe(0);
    // The printed command names this plan and checkpoint, pasteable as it is.
    expect(ended.stdout).toMatch(/shardmove weights restore \S*plan\.yaml --state \S+\.db\)/);
    const after = await weightsOf(sandbox.url);
    expect(positive(after)).toEqual({ cluster: 100 });
    expect(positive(before)).not.toEqual(positive(after));

    // No terminal to ask and no --yes: refused, nothing written, not even to the checkpoint or
    // beside it (the preview takes no lock and opens no log).
    const state = filesOf(join(dir, 'state'));
    const unasked = await restore();
    expect(unasked.code).toBe(2);
    expect(unasked.stdout).toMatch(/storage\s+now\s+restored/);
    expect(unasked.stderr).toContain('pass --yes');
    expect(await weightsOf(sandbox.url)).toEqual(after);
    expect(filesOf(join(dir, 'state'))).toEqual(state);

    const restored = await restore('--yes');
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toMatch(/cluster\s+100\s+->\s+0/);
    expect(restored.stdout).toContain('restored: repository_storages_weighted is');
    const back = await weightsOf(sandbox.url);
    expect(positive(back)).toEqual(positive(before));

    const again = await restore('--yes');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('nothing to change');
    expect(await weightsOf(sandbox.url)).toEqual(back);

    const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
    const events = store.readEvents(0, 100_000);
    store.close();
    expect(events.filter((e) => e.type === 'weights.restored')).toHaveLength(1);
    expect(
      events.filter((e) => e.type === 'http.mutating' && (e.data as { method?: string }).method === 'PUT'),
    ).toHaveLength(2);
  });
});
