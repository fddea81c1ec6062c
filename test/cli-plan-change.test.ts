/**
 * A plan is fixed by the run's first write, not by a pre-flight that refused: after "Nothing was
 * written ... run the same command again", the fixed plan runs; once the run wrote, a changed plan
 * is refused naming each changed field. Judged from the sandbox's moves and the checkpoint. The
 * runs and the sandbox are in this process on one simulated clock (./support/sim-harness.ts).
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { invariantViolations, movesOf, moveTotal, storagesOf, writePlan } from './support/cli-harness.js';
import { interruptAtMovesInFlightSim, seededSimulation } from './support/sim-speeda.js';

/** A simulation with moves of `moveMs` of its clock and `workers` workers, and a plan of concurrency 4. */
async function setup(name: string, moveMs: number, workers: number) {
  const { dir, sim, env } = await seededSimulation(
    name,
    { projects: 12, snippets: 2, groups: 2 },
    { moveDurationMs: moveMs, workers },
  );
  const runCli = (args: string[], opts: { cwd: string; env: Record<string, string | undefined> }) =>
    sim.shardmove(args, opts);
  return { dir, sim, sandbox: sim.sandbox, env, runCli, plan: writePlan(dir, { concurrency: 4 }) };
}

async function expectAllMovedOnce(url: string) {
  for (const kind of ['projects', 'snippets', 'groups'] as const)
    expect(
      [...(await storagesOf(url, kind)).values()].filter((s) => s !== 'cluster'),
      kind,
    ).toEqual([]);
  for (const kind of ['project', 'snippet', 'group'] as const)
    expect(invariantViolations(await movesOf(url, kind), 'cluster'), kind).toEqual([]);
}

describe('a changed plan (one simulated clock, real HTTP)', () => {
  it('after a pre-flight that refused and wrote nothing, is the plan of the next run: it runs, and says why', async () => {
    const { dir, sandbox, plan, env, runCli } = await setup('change-preflight', 20, 10);
    const base = readFileSync(plan, 'utf8');
    writeFileSync(plan, `${base}capacity:\n  storages:\n    cluster: {free: 1KiB}\n`);
    const refused = await runCli(['run', plan], { cwd: dir, env });
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stdout + refused.stderr).toContain('Nothing was written');
    expect(await moveTotal(sandbox.url)).toBe(0);

    writeFileSync(plan, `${base}capacity:\n  storages:\n    cluster: {free: 1TiB}\n`);
    const fixed = await runCli(['run', plan], { cwd: dir, env });
    expect(fixed.code, fixed.stdout + fixed.stderr).toBe(0);
    expect(fixed.stderr).toMatch(
      /^note: the plan changed since the checkpoint was written \(capacity\.storages\.cluster\.free: 1\.0 KiB -> 1\.0 TiB\), but the last attempt wrote nothing to the instance and recorded no item: this run starts with this plan$/m,
    );
    await expectAllMovedOnce(sandbox.url);
  });

  it('once the run wrote, is refused naming every changed field; --accept-plan-change goes on', async () => {
    const { dir, sim, sandbox, plan, env, runCli } = await setup('change-fixed', 1500, 4);
    const checkpoint = join(dir, 'state', 'it.db');
    const first = await interruptAtMovesInFlightSim(sim, ['run', plan], { cwd: dir, env }, checkpoint, 4, 1500);
    expect(first.code).toBe(130);
    const moves = await moveTotal(sandbox.url);

    writeFileSync(
      plan,
      readFileSync(plan, 'utf8')
        .replace('concurrency: 4', 'concurrency: 8')
        .replace('max_attempts: 2', 'max_attempts: 5'),
    );
    appendFileSync(plan, '# a comment and a token rotation are no change\n');
    const refused = await runCli(['run', plan], { cwd: dir, env: { ...env, SHARDMOVE_TOKEN: env.SHARDMOVE_TOKEN! } });
    expect(refused.code, refused.stderr).toBe(4);
    expect(refused.stderr).toContain(
      'refusing to resume: the plan changed since the checkpoint was written:\n' +
        '  move.concurrency: 4 -> 8\n' +
        '  retry.max_attempts: 2 -> 5\n' +
        'Run again with --accept-plan-change',
    );
    expect(await moveTotal(sandbox.url)).toBe(moves);

    const accepted = await runCli(['run', plan, '--accept-plan-change'], { cwd: dir, env });
    expect(accepted.code, accepted.stderr).toBe(0);
    await expectAllMovedOnce(sandbox.url);
    // The checkpoint now keeps the accepted plan: the same plan resumes without a word.
    const store = openCheckpoint(checkpoint, { readOnly: true });
    try {
      expect(JSON.parse(store.loadRun()!.plan!)).toMatchObject({ move: { concurrency: 8 }, retry: { maxAttempts: 5 } });
    } finally {
      store.close();
    }
  });
});
