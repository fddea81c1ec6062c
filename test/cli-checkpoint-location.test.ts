/**
 * Where a plan's checkpoint is, end to end: beside the plan file (or where its `checkpoint:` field
 * says), found the same by every command from any directory; a checkpoint an older shardmove left
 * under the directory it ran in is never passed over by a second run; and a resume says what it
 * resumes. Judged from the files on disk and the sandbox's own moves.
 *
 * On the in-process harness (test/support/sim-harness.ts): every command through the executable's
 * command line, against a sandbox on one simulated clock, so a move's 1.5 s and the polls between
 * cost no real time. The subject is where each command looks for the checkpoint, not the process
 * boundary: the interrupted run is interrupted as Ctrl-C does (its context's signal).
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

import { invariantViolations, movesOf, moveTotal, storagesOf, writePlan } from './support/cli-harness.js';
import type { writeSeed } from './support/cli-harness.js';
import { interruptAtMovesInFlightSim, seededSimulation } from './support/sim-speeda.js';

/** A sandbox, a plan in `<dir>/ops plans/`, and two other directories to run commands from. */
async function setup(
  name: string,
  sandboxOptions: { moveDurationMs: number; workers: number },
  counts: Parameters<typeof writeSeed>[1],
) {
  const { dir, sim, env } = await seededSimulation(name, counts, sandboxOptions);
  const plans = join(dir, 'ops plans');
  const elsewhere = join(dir, 'elsewhere');
  const third = join(dir, 'third');
  for (const d of [plans, elsewhere, third]) mkdirSync(d);
  const plan = writePlan(plans, { concurrency: 4 });
  return { dir, sandbox: sim.sandbox, sim, runCli: sim.shardmove, plans, elsewhere, third, plan, env };
}

describe('the checkpoint beside the plan', { timeout: 90_000 }, () => {
  it('is found the same by every command from any directory', async () => {
    const { sandbox, runCli, plans, elsewhere, third, dir, plan, env } = await setup(
      'where',
      { moveDurationMs: 20, workers: 10 },
      { projects: 12, snippets: 2, groups: 2 },
    );
    const dry = await runCli(['run', plan, '--dry-run'], { cwd: elsewhere, env });
    expect(dry.code, dry.stderr).toBe(0);
    expect(readdirSync(join(plans, 'state')).sort()).toEqual(['it.dry-run.db', 'it.dry-run.log']);
    const twin = await runCli(['twin', join('ops plans', 'plan.yaml'), '--out', join(third, 'twin.yaml')], {
      cwd: dir,
    });
    expect(twin.code, twin.stderr).toBe(0);

    const run = await runCli(['run', join('..', 'ops plans', 'plan.yaml')], { cwd: third, env });
    expect(run.code, run.stderr).toBe(0);
    const checkpoint = join(plans, 'state', 'it.db');
    expect(existsSync(checkpoint)).toBe(true);
    const moves = await moveTotal(sandbox.url);

    // Each from a directory of its own, the readers at once (the revert's preview holds the lock
    // while it reads, which `control` may write beside); `unlock` after them, or it would take it.
    const [status, report, control, preview] = await Promise.all([
      runCli(['status', plan, '--json'], { cwd: elsewhere }),
      runCli(['report', 'plan.yaml', '--json'], { cwd: plans }),
      runCli(['control', plan, '--concurrency', '2'], { cwd: third }),
      runCli(['revert', plan, '--dry-run'], { cwd: elsewhere, env }),
    ]);
    const unlock = await runCli(['unlock', plan, '--yes'], { cwd: dir });
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ checkpoint, state: 'done' });
    expect(report.code, report.stderr).toBe(0);
    expect(control.stdout).toContain(`checkpoint: ${checkpoint}`);
    expect(unlock.stdout).toBe(`not locked: ${checkpoint}\nnothing to do\n`);
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.stdout).toContain(`revert of ${checkpoint}`);

    // Run again from yet another directory: the same finished run, nothing moved twice.
    const again = await runCli(['run', plan], { cwd: dir, env });
    expect(again.code, again.stderr).toBe(0);
    expect(await moveTotal(sandbox.url)).toBe(moves);
    for (const d of [dir, elsewhere, third]) expect(existsSync(join(d, 'state')), d).toBe(false);
  });

  it("is where the plan's checkpoint field says, relative to the plan file", async () => {
    const { runCli, plans, elsewhere, dir, plan, env } = await setup(
      'field',
      { moveDurationMs: 20, workers: 10 },
      { projects: 6, snippets: 1, groups: 1 },
    );
    appendFileSync(plan, 'checkpoint: ../runs/retire one.db\n');
    const run = await runCli(['run', plan], { cwd: elsewhere, env });
    expect(run.code, run.stderr).toBe(0);
    expect(readdirSync(join(dir, 'runs')).sort()).toEqual(['retire one.db', 'retire one.log']);
    const dry = await runCli(['run', 'plan.yaml', '--dry-run'], { cwd: plans, env });
    expect(dry.code, dry.stderr).toBe(0);
    expect(existsSync(join(dir, 'runs', 'retire one.dry-run.db'))).toBe(true);
    const status = await runCli(['status', plan, '--json'], { cwd: dir });
    expect(JSON.parse(status.stdout)).toMatchObject({ checkpoint: join(dir, 'runs', 'retire one.db'), state: 'done' });
    expect(existsSync(join(plans, 'state'))).toBe(false);
  });
});

describe('a checkpoint an older shardmove left under the directory it ran in', { timeout: 90_000 }, () => {
  it('is never passed over by a second run: refused with both places, moved as the message says, then resumed', async () => {
    const { sandbox, sim, runCli, plans, elsewhere, plan, env } = await setup(
      'legacy',
      { moveDurationMs: 1500, workers: 4 },
      { projects: 12, snippets: 2, groups: 2 },
    );
    // What shardmove wrote by default before: state/<name>.db under the current directory.
    const old = join(elsewhere, 'state', 'it.db');
    const first = await interruptAtMovesInFlightSim(
      sim,
      ['run', plan, '--state', join('state', 'it.db')],
      { cwd: elsewhere, env },
      old,
      4,
      1500,
    );
    expect(first.code).toBe(130);
    const moves = await moveTotal(sandbox.url);

    const refused = await runCli(['run', plan], { cwd: elsewhere, env });
    expect(refused.code, refused.stderr).toBe(4);
    expect(refused.stderr).toContain(`belongs beside the plan file, at\n  ${join(plans, 'state', 'it.db')}\n`);
    expect(refused.stderr).toContain(`under the current directory:\n  ${old}\n`);
    expect(existsSync(join(plans, 'state'))).toBe(false);
    expect(await moveTotal(sandbox.url)).toBe(moves);
    const status = await runCli(['status', plan], { cwd: elsewhere });
    expect(status.code).toBe(4);

    // The operator runs the commands the refusal printed, as printed.
    const commands = refused.stderr
      .split('\n')
      .filter((l) => /^ {2}(mkdir -p|mv -i) /.test(l))
      .join('\n');
    expect(commands).toMatch(/mv -i .*it\.db .*it\.log/s);
    expect(spawnSync('sh', ['-c', commands], { cwd: elsewhere, stdio: 'ignore' }).status).toBe(0);
    expect(existsSync(old)).toBe(false);

    const resumed = await runCli(['run', plan], { cwd: elsewhere, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(
      new RegExp(
        `^resuming the run started \\S+Z \\(\\S+ ago\\): \\d+ of \\d+ item\\(s\\) moved, \\d+ in flight \\(checkpoint ${join(plans, 'state', 'it.db').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\)$`,
        'm',
      ),
    );
    for (const kind of ['projects', 'snippets', 'groups'] as const)
      expect(
        [...(await storagesOf(sandbox.url, kind)).values()].filter((s) => s !== 'cluster'),
        kind,
      ).toEqual([]);
    for (const kind of ['project', 'snippet', 'group'] as const)
      expect(invariantViolations(await movesOf(sandbox.url, kind), 'cluster'), kind).toEqual([]);
  });
});

describe(
  'a checkpoint under the current directory that another plan of the same name keeps there',
  { timeout: 90_000 },
  () => {
    it("is that plan's, not taken for this plan's left-behind one: no refusal, no mv, and that plan still finds it", async () => {
      const { dir, sim, env } = await seededSimulation(
        'same-name',
        { projects: 6, snippets: 1, groups: 1 },
        { moveDurationMs: 20, workers: 10 },
      );
      const { sandbox, shardmove: runCli } = sim;
      const a = join(dir, 'a');
      const b = join(dir, 'b');
      for (const d of [a, b]) mkdirSync(d);
      writePlan(a, { name: 'retire', concurrency: 4, from: ['nfs-1'] });
      writePlan(b, { name: 'retire', concurrency: 3, from: ['nfs-2'] });
      const ofA = join(a, 'state', 'retire.db');
      const first = await runCli(['run', 'plan.yaml'], { cwd: a, env });
      expect(first.code, first.stderr).toBe(0);
      const moves = await moveTotal(sandbox.url);
      const statusOfA = async () => JSON.parse((await runCli(['status', 'plan.yaml', '--json'], { cwd: a })).stdout);
      expect(await statusOfA()).toMatchObject({ checkpoint: ofA, state: 'done' });

      // As an older release left it, without the plan file its run ran: the plan beside it keeps it there.
      const db = new Database(ofA);
      db.prepare("UPDATE events SET data = json_remove(data, '$.planFile') WHERE type = 'run.started'").run();
      db.close();
      const status = await runCli(['status', join('..', 'b', 'plan.yaml')], { cwd: a });
      expect(status.code, status.stderr).toBe(1);
      expect(status.stderr).toContain(
        `note: ${ofA}, under the current directory, is the checkpoint of another plan of this name (${join(a, 'plan.yaml')}), not this plan's`,
      );
      expect(status.stderr).toContain(`no checkpoint at ${join(b, 'state', 'retire.db')}`);
      expect(status.stderr).not.toContain('mv -i');

      // b runs with its own checkpoint, beside it; a's is where it was, and a still finds its run.
      const run = await runCli(['run', join('..', 'b', 'plan.yaml')], { cwd: a, env });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stderr).not.toContain('mv -i');
      expect(existsSync(join(b, 'state', 'retire.db'))).toBe(true);
      expect(await moveTotal(sandbox.url)).toBeGreaterThan(moves);
      expect(await statusOfA()).toMatchObject({ checkpoint: ofA, state: 'done' });
      // Now that a's checkpoint records its plan file, the same holds from a's folder with b's plan by any path.
      const again = await runCli(['status', join(dir, 'b', 'plan.yaml'), '--json'], { cwd: a });
      expect(JSON.parse(again.stdout)).toMatchObject({ checkpoint: join(b, 'state', 'retire.db') });
    });
  },
);
