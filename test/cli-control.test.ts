/**
 * `shardmove control` against a live run: the sandbox, the run and the operator's commands over real
 * HTTP and one shared checkpoint file.
 *
 * On the in-process harness (test/support/sim-harness.ts): the run on a simulated clock that the test
 * holds and moves a timer at a time (./support/sim-speede.ts), so "once 12 moves exist", "once the
 * pause is taken" and "once what was in flight has ended" are reached by construction and cost no
 * real time; the operator's commands run beside it on the same wall time with timers of their own,
 * as commands of another process on the host would. The subject is what control writes and the run
 * does with it, not the process boundary.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseControlChange } from '../src/cli/control.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { allMovesOf, invariantViolations, movesOf, writePlan } from './support/cli-harness.js';
import { HELD_MOVE_MS } from './support/held-sandbox.js';
import { seededSimulation } from './support/sim-speeda.js';
import { holdClock, operatorCommands, releaseClock, stepUntil } from './support/sim-speede.js';

async function projectMoves(url: string): Promise<number> {
  return (await movesOf(url, 'project')).length;
}

describe('parseControlChange', () => {
  it('reads --pause, --unpause and --concurrency N|plan, and names what is wrong', () => {
    expect(parseControlChange({ pause: true, unpause: false })).toEqual({ paused: true });
    expect(parseControlChange({ pause: false, unpause: true, concurrency: '7' })).toEqual({
      paused: false,
      concurrency: 7,
    });
    expect(parseControlChange({ pause: false, unpause: false, concurrency: 'plan' })).toEqual({ concurrency: null });
    expect(parseControlChange({ pause: false, unpause: false })).toEqual({});
    expect(() => parseControlChange({ pause: true, unpause: true })).toThrow(/--pause and --unpause together/);
    for (const bad of ['0', '1001', '2.5', '-1', 'ten', '']) {
      expect(() => parseControlChange({ pause: false, unpause: false, concurrency: bad }), bad).toThrow(
        /--concurrency must be a whole number from 1 to 1000/,
      );
    }
  });
});

describe('shardmove control (in process, one simulated clock, real HTTP)', { timeout: 60_000 }, () => {
  it('pauses a live run (moves in flight finish, no new ones), lowers its cap and unpauses it; the run completes', async () => {
    const { dir, sim, env } = await seededSimulation(
      'control',
      { projects: 80, snippets: 6, groups: 4 },
      { moveDurationMs: 250, workers: 20 },
    );
    const { sandbox, clock } = sim;
    // The operator's commands: beside the run, never waiting on its held clock.
    const runCli = operatorCommands(sim).shardmove;
    const plan = writePlan(dir, { concurrency: 6 });
    const control = (...args: string[]) => runCli(['control', plan, ...args], { cwd: dir, env });

    // Nothing to steer before the first run, and bad options are refused before any file is touched.
    const early = await control('--pause');
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/no checkpoint at .*it\.db: the plan has not run yet/);
    expect((await control('--pause', '--unpause')).code).toBe(2);
    const bad = await control('--concurrency', '0');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--concurrency must be a whole number from 1 to 1000');

    holdClock(clock);
    const run = sim.start(['run', plan], { cwd: dir, env });
    expect(
      await stepUntil(
        clock,
        () => projectMoves(sandbox.url),
        (n) => n >= 12,
      ),
    ).toBeGreaterThanOrEqual(12);

    const paused = await control('--pause');
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toMatch(
      /^paused: no new moves; the moves in flight are followed to their end; once unpaused: cap 6, the plan's\n/,
    );
    expect(paused.stdout).toMatch(/the run \(pid \d+\) applies it within one poll interval/);

    // The run takes the pause at its next turn (it records the cap as paused); what was in flight
    // then ends by itself, on the sandbox's own records, and nothing new is created after it.
    const pausedSeen = await stepUntil(
      clock,
      () => {
        const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
        try {
          return store.lastEventOf(['cap.changed'])?.data.paused === true;
        } finally {
          store.close();
        }
      },
      (seen) => seen,
    );
    expect(pausedSeen).toBe(true);
    const open = (moves: { state: string }[]) =>
      moves.filter((m) => !['finished', 'failed', 'cleanup failed'].includes(m.state));
    expect(
      open(
        await stepUntil(
          clock,
          () => movesOf(sandbox.url, 'project'),
          (m) => open(m).length === 0,
        ),
      ),
    ).toEqual([]);
    const atPause = await projectMoves(sandbox.url);

    const status = await runCli(['status', plan, '--json'], { cwd: dir, env });
    const report = JSON.parse(status.stdout) as {
      state: string;
      control: { paused: boolean; concurrency: number | null; planConcurrency: number };
    };
    expect(report.state).toBe('running');
    expect(report.control).toMatchObject({ paused: true, concurrency: null, planConcurrency: 6 });
    const text = await runCli(['status', plan], { cwd: dir, env });
    expect(text.stdout).toMatch(
      /\n {2}now: PAUSED by shardmove control \(since [^)]+\)\n {7}`shardmove control \S+plan\.yaml --unpause` goes on\n/,
    );
    expect(text.stdout).toMatch(
      /remaining; [\d.]+ moves\/min over the last 10 minutes; ETA paused \(nothing new is scheduled\)\n/,
    );
    // The JSON of control carries numbers: the plan's cap, the cap now (0: paused) and once unpaused.
    const json = JSON.parse((await control('--json')).stdout) as { control: Record<string, unknown> };
    expect(json.control).toMatchObject({
      paused: true,
      concurrency: null,
      planConcurrency: 6,
      cap: 0,
      capWhenUnpaused: 6,
    });
    // Named with --state (a revert's checkpoint is), the plan is still read for its cap.
    const byState = await runCli(['control', plan, '--state', join(dir, 'state', 'it.db'), '--json'], { cwd: dir });
    expect((JSON.parse(byState.stdout) as typeof json).control).toMatchObject({
      planConcurrency: 6,
      capWhenUnpaused: 6,
    });

    // Still nothing new, after all the reads above and twenty poll intervals of the run's clock:
    // the paused run schedules nothing.
    const heldFrom = clock.now();
    await stepUntil(
      clock,
      () => clock.now(),
      (t) => t >= heldFrom + 2_000,
    );
    expect(await projectMoves(sandbox.url)).toBe(atPause);
    const resumed = await control('--unpause', '--concurrency', '3');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/^unpaused: cap 3 \(the plan's is 6\)\n/);
    await releaseClock(clock, run);
    const done = await run.done;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain('DONE: every repository moved and verified');
    expect(await projectMoves(sandbox.url)).toBeGreaterThan(atPause);
    expect(invariantViolations(await movesOf(sandbox.url, 'project'), 'cluster')).toEqual([]);

    // The audit trail has both changes; the override stays in the checkpoint until reset.
    const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
    try {
      const changes = store
        .readEvents(0, 1_000_000)
        .filter((e) => e.type === 'control.changed')
        .map((e) => e.data);
      expect(changes).toEqual([
        { concurrency: null, paused: true, previous: { concurrency: null, paused: false } },
        { concurrency: 3, paused: false, previous: { concurrency: null, paused: true } },
      ]);
    } finally {
      store.close();
    }
    // A later run of the checkpoint says which override is in force before it does anything.
    const again = await sim.shardmove(['run', plan], { cwd: dir, env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain(
      "note: the concurrency cap is 3 (shardmove control; the plan says 6); `--concurrency plan` goes back to the plan's",
    );
    const shown = await control();
    expect(shown.stdout).toMatch(/^in force: cap 3, set with shardmove control \(the plan's is 6\)\ncheckpoint: /);
    expect((await control('--concurrency', 'plan')).stdout).toMatch(/^cap back to the plan's 6\nno run is going/);
    expect((await control('--unpause')).stdout).toMatch(/^not paused, nothing to unpause; cap 6, the plan's\n/);

    // A finished run's status shows how it ended, not a rate, an ETA or the last cap as if it went on.
    const ended = await runCli(['status', plan], { cwd: dir, env });
    expect(ended.stdout).toMatch(
      /^Plan it: done, ended \d{4}-\d\d-\d\dT[\d:.]+Z\n {2}\d+ items known: \d+ done, 0 remaining\n/,
    );
    expect(ended.stdout).not.toMatch(/moves\/min|ETA|now: |cap \d/);
    const endedJson = JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir })).stdout) as Record<
      string,
      unknown
    >;
    expect(endedJson).toMatchObject({ state: 'done', ended: { state: 'done' }, etaMs: null, cap: null, now: null });
  });
});

describe("another plan's checkpoint (in process, one simulated clock, real HTTP)", { timeout: 90_000 }, () => {
  it('is refused by control, status, report, unlock, twin and run alike (exit 4, one message), and the live run is not stopped', async () => {
    // Moves of a minute of the run's clock, which the test holds: the run stays live while refused.
    const { dir, sim, env } = await seededSimulation(
      'control-other',
      { projects: 6, snippets: 1, groups: 1 },
      { moveDurationMs: HELD_MOVE_MS, workers: 50 },
    );
    const { clock } = sim;
    const runCli = operatorCommands(sim).shardmove;
    for (const d of ['e', 'other', 'same-name']) mkdirSync(join(dir, d));
    const e = writePlan(join(dir, 'e'), { name: 'e', concurrency: 2 });
    const other = writePlan(join(dir, 'other'), { name: 'other', concurrency: 3 });
    // Another plan of the same name in another folder: its file, not its name, tells them apart.
    const sameName = writePlan(join(dir, 'same-name'), { name: 'e', concurrency: 4 });
    const state = join(dir, 'e', 'state', 'e.db');
    holdClock(clock);
    const run = sim.start(['run', e], { cwd: dir, env });
    await stepUntil(
      clock,
      async () => (await allMovesOf(sim.url)).length,
      (n) => n >= 2,
    );

    const refusals: string[] = [];
    for (const plan of [other, sameName]) {
      for (const args of [
        ['control', plan, '--state', state, '--stop'],
        ['control', plan, '--state', state, '--pause'],
        ['status', plan, '--state', state],
        ['report', plan, '--state', state, '--json'],
        ['unlock', plan, '--state', state, '--yes'],
        ['twin', plan, '--state', state, '--out', join(dir, 'twin.yaml')],
        ['run', plan, '--state', state],
      ]) {
        const r = await runCli(args, { cwd: dir, env });
        expect(r.code, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(4);
        refusals.push(r.stderr.replace(/^shardmove( \w+)?: /, ''));
      }
    }
    const expected = (plan: string, name: string) =>
      `refusing: ${state} is the checkpoint of plan "e" (${e}), not of plan "${name}" (${plan}): under this plan it would show, steer or resume the other plan's run.`;
    expect(refusals.map((r) => r.split('\n')[0]!.slice(0, expected(other, 'other').length))).toEqual([
      ...Array<string>(7).fill(expected(other, 'other')),
      ...Array<string>(7).fill(expected(sameName, 'e')),
    ]);
    expect(existsSync(join(dir, 'twin.yaml'))).toBe(false);

    // Nothing reached plan e's run: no stop, no pause, its lock held; it ends as it would have.
    const store = openCheckpoint(state, { readOnly: true });
    try {
      const control = store.readControl();
      expect([control.paused, control.stop ?? null]).toEqual([false, null]);
      expect(store.readLock()).not.toBeNull();
    } finally {
      store.close();
    }
    await releaseClock(clock, run);
    const ended = await run.done;
    expect(ended.code, ended.stdout + ended.stderr).toBe(0);
    // The plan itself, from any folder, still steers its own checkpoint.
    expect((await runCli(['control', e, '--state', state], { cwd: dir, env })).code).toBe(0);
    expect((await runCli(['status', join('e', 'plan.yaml')], { cwd: dir, env })).code).toBe(0);
  });
});
