/**
 * The room check end to end: a drain that does not fit on its destination is refused in pre-flight
 * before any write (judged from the sandbox: no move, the weights as they were), and a dry run of
 * the same plan prints the fit table and refuses nothing.
 *
 * The sandbox and every command in this process on one simulated clock (./support/fake-clock.ts,
 * commands as ./support/sim-speedb.ts runs them), over real HTTP: no process and no real polls.
 * Nothing here is about the process boundary (exit codes are those `runCommandLine` maps).
 */
import { appendFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { flat, sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { FakeClock } from './support/fake-clock.js';
import { SIM_START } from './support/sim-harness.js';
import type { Simulation } from './support/sim-harness.js';
import { commandsOn } from './support/sim-harness.js';

async function weightsOf(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/v4/application/settings`, {
    headers: { 'PRIVATE-TOKEN': sandboxEnv(url).SHARDMOVE_TOKEN ?? '' },
  });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}

describe('capacity (in-process sandbox)', { timeout: 60_000 }, () => {
  let sandbox: RunningSandbox;
  let dir: string;
  let runCli: Simulation['shardmove'];
  beforeAll(async () => {
    dir = tempDir('capacity');
    const clock = new FakeClock(SIM_START);
    runCli = commandsOn(clock).shardmove;
    sandbox = await startSandbox({
      clock,
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
    expect(flat(dry.stdout + dry.stderr)).toMatch(
      /room on cluster: needs .* \+ keep_free 1\.0 GiB, free 2\.0 GiB: DOES NOT FIT/,
    );

    const run = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(flat(run.stdout + run.stderr)).toMatch(
      /the drain does not fit on cluster: it needs \d+ bytes .* and cluster has 2147483648 bytes \(2\.0 GiB\) free \(capacity\.storages\.cluster\.free\)/,
    );
    expect((sandbox.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number }).n).toBe(0);
    expect(await weightsOf(sandbox.url)).toEqual(before);
  });

  it('a dry run that does not fit says a real run would be refused, --detailed-exitcode 2; status finds it', async () => {
    const own = tempDir('capacity-dry');
    const plan = writePlan(own, {});
    appendFileSync(plan, 'capacity:\n  keep_free: 1GiB\n  storages:\n    cluster: {free: 2GiB}\n');
    const env = sandboxEnv(sandbox.url);
    const dry = await runCli(['run', plan, '--dry-run', '--detailed-exitcode'], { cwd: own, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(2);
    expect(flat(dry.stdout)).toMatch(
      /^DRY RUN COMPLETE, BUT A REAL RUN WOULD BE REFUSED \(1 reason below\): nothing was changed/,
    );
    expect(dry.stdout).not.toMatch(/^DRY RUN COMPLETE:/m);
    expect(dry.stdout).toMatch(
      /A real run would be refused:\n {2}- the drain does not fit on cluster: it needs \d+ bytes/,
    );
    // Without the flag the dry run still ends 0 (it finished), saying the same.
    const plain = await runCli(['run', plan, '--dry-run'], { cwd: own, env });
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/^DRY RUN COMPLETE, BUT A REAL RUN WOULD BE REFUSED/);
    // The flag is a dry run's.
    const wrong = await runCli(['run', plan, '--detailed-exitcode'], { cwd: own, env });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/--detailed-exitcode tells how a --dry-run came out .*: add --dry-run/);
    // No real run yet: status shows the dry run's checkpoint, and says so.
    const status = await runCli(['status', plan], { cwd: own, env: {} });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stderr).toMatch(
      /note: this plan has not run yet \(no .*state\/it\.db\); showing its dry run's checkpoint, .*state\/it\.dry-run\.db/,
    );
    expect(status.stdout).toMatch(
      /^Plan it \(dry run\): .*\n {2}a real run would be refused:\n {4}- the drain does not fit on cluster/m,
    );
    const asked = await runCli(['status', plan, '--dry-run', '--json'], { cwd: own, env: {} });
    expect(asked.code).toBe(0);
    expect(JSON.parse(asked.stdout)).toMatchObject({
      dryRun: true,
      wouldRefuse: [expect.stringMatching(/^the drain does not fit on cluster/)],
    });
    // A plan that fits: 0, and the plain headline.
    writePlan(own, {});
    appendFileSync(plan, 'capacity:\n  keep_free: 1GiB\n  storages:\n    cluster: {free: 2TiB}\n');
    const fits = await runCli(['run', plan, '--dry-run', '--detailed-exitcode', '--accept-plan-change'], {
      cwd: own,
      env,
    });
    expect(fits.code, fits.stdout + fits.stderr).toBe(0);
    expect(fits.stdout).toMatch(/^DRY RUN COMPLETE: nothing was changed on the instance/);
    rmSync(own, { recursive: true, force: true });
  });
});
