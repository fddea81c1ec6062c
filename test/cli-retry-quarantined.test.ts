/**
 * `run --retry-quarantined`: items quarantined by a finished run stay quarantined on a plain `run`
 * (a known-failures list, not a crash loop), and get another try once the operator fixed them on
 * the instance and asks for it. The "fix" is the sandbox restarted on its database and port
 * without the broken items.
 *
 * On the in-process harness (./support/sim-speedf.ts): the sandbox, restarted as a process would
 * be, and every command in this process on one simulated clock, over real HTTP, so polls, backoffs
 * and move durations cost no real seconds. The printed command is split into words by /bin/sh, as
 * the operator's paste would be (./support/sim-speedb.ts shellWords). Nothing here is about the
 * process boundary.
 */
import { describe, expect, it } from 'vitest';
import { invariantViolations, movesOf, sandboxEnv, storagesOf, writePlan } from './support/cli-harness.js';
import { shellWords } from './support/sim-speedb.js';
import { restartableSimulation } from './support/sim-speedf.js';

describe('shardmove run --retry-quarantined (real HTTP, simulated clock)', { timeout: 60_000 }, () => {
  it('a plain run leaves quarantined items alone; after a fix, --retry-quarantined moves them', async () => {
    const sb = restartableSimulation(
      'retry-quarantined',
      { projects: 30, snippets: 8, groups: 4 },
      { moveDurationMs: 20, workers: 20 },
    );
    const { dir } = sb;
    const runCli = sb.shardmove;
    let sandbox = await sb.restart({ brokenItems: ['project:3', 'snippet:5'] });
    const plan = writePlan(dir);
    const env = () => sandboxEnv(sandbox.url);

    const first = await runCli(['run', plan], { cwd: dir, env: env() });
    expect(first.code, first.stderr).toBe(3);
    const movesOf3 = async () => (await movesOf(sandbox.url, 'project')).filter((m) => m.itemId === 3).length;
    const triedBefore = await movesOf3();
    expect(triedBefore).toBe(2);

    // Run again without the flag: still exit 3, and not one more move of the broken items.
    const again = await runCli(['run', plan], { cwd: dir, env: env() });
    expect(again.code, again.stderr).toBe(3);
    expect(await movesOf3()).toBe(triedBefore);

    // The operator fixes the items: the same instance (same address, same data), no longer broken.
    const port = new URL(sandbox.url).port;
    sandbox = await sb.restart();
    expect(sandbox.url).toBe(`http://127.0.0.1:${port}`);

    const dry = await runCli(['run', plan, '--retry-quarantined', '--dry-run'], { cwd: dir, env: env() });
    expect(dry.code).toBe(2);
    expect(dry.stderr).toContain('--retry-quarantined changes the checkpoint; a --dry-run never does');

    // The command the report printed for this ("once fixed: ..."), run as printed through a shell.
    // On the line after its label when the two do not fit in 80 columns: the command itself is never broken.
    const printed = /^ {2}once fixed:\s+(shardmove .+)$/m.exec(again.stdout)?.[1];
    expect(printed).toBe(`shardmove run ${plan} --retry-quarantined`);
    const retried = await runCli(shellWords(printed!, dir), { cwd: dir, env: env() });
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stderr).toContain('note: 2 quarantined item(s) get another try');
    expect(retried.stdout).toContain('DONE: every repository moved and verified');
    expect((await storagesOf(sandbox.url, 'projects')).get(3)).toBe('cluster');
    expect((await storagesOf(sandbox.url, 'snippets')).get(5)).toBe('cluster');
    expect(await movesOf3()).toBe(triedBefore + 1);
    for (const kind of ['project', 'snippet', 'group'] as const) {
      expect(invariantViolations(await movesOf(sandbox.url, kind), 'cluster'), kind).toEqual([]);
    }

    const status = await runCli(['status', plan, '--json'], { cwd: dir });
    expect((JSON.parse(status.stdout) as { state: string; quarantined: unknown[] }).quarantined).toEqual([]);
  });
});
