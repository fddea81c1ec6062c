/**
 * The room check end to end: a drain that does not fit on its destination is refused in pre-flight
 * before any write (judged from the sandbox: no move, the weights as they were), and a dry run of
 * the same plan prints the fit table and refuses nothing.
 */
import { appendFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { runCli, sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';

async function weightsOf(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/v4/application/settings`, {
    headers: { 'PRIVATE-TOKEN': sandboxEnv(url).SHARDMOVE_TOKEN ?? '' },
  });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}

describe('capacity (in-process sandbox)', { timeout: 60_000 }, () => {
  let sandbox: RunningSandbox;
  let dir: string;
  beforeAll(async () => {
    dir = tempDir('capacity');
    sandbox = await startSandbox({
      seed: writeSeed(dir, { projects: 20, snippets: 2, groups: 2 }),
      workers: 4,
      moveDurationMs: 10,
    });
  });
  afterAll(async () => {
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a drain that does not fit before any write, and a dry run shows the fit without refusing', async () => {
    const before = await weightsOf(sandbox.url);
    const plan = writePlan(dir, {});
    appendFileSync(plan, 'capacity:\n  keep_free: 1GiB\n  storages:\n    cluster: {free: 2GiB}\n');
    const dry = await runCli(['run', plan, '--dry-run'], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(dry.stdout + dry.stderr).toMatch(
      /room on cluster: needs .* \+ keep_free 1\.0 GiB, free 2\.0 GiB: DOES NOT FIT/,
    );

    const run = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.stdout + run.stderr).toMatch(
      /the drain does not fit on cluster: it needs \d+ bytes .* and cluster has 2147483648 bytes \(2\.0 GiB\) free \(capacity\.storages\.cluster\.free\)/,
    );
    expect((sandbox.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number }).n).toBe(0);
    expect(await weightsOf(sandbox.url)).toEqual(before);
  });
});
