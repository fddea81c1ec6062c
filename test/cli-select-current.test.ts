/**
 * The selection judged on the instance's current state, end to end against a sandbox and judged
 * from its own records: a project transferred into an excluded namespace while the run drains (one
 * schedule, and drain by kind) or after a reviewed list was made is never moved, is named as having
 * left the selection, and is counted as staying in every output (headline, summary, status, status
 * --json, report --json); verification does not pass it as moved.
 *
 * On the in-process harness (test/support/sim-harness.ts): every command through the executable's
 * command line against a sandbox on one simulated clock, so moves and polls cost no real time. The
 * run changed under is held by the clock (its one move in flight cannot end) until the test has
 * transferred the project, by construction.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { Document } from 'yaml';
import { flat, movesOf } from './support/cli-harness.js';
import { changedSimulation } from './support/sim-speeda.js';
import { changedSimulationWith, holdUntilSim } from './support/sim-speedd.js';

/** acme's projects 1 to 3 on nfs-1, and acme/team's project 4 (excluded by the plans below). */
function inventory(seed: Document): void {
  const on = { storage: 'nfs-1', size_mb: 5 };
  seed.setIn(['inventory', 'groups'], []);
  seed.setIn(
    ['inventory', 'projects'],
    [
      { id: 1, name: 'web', namespace: 'acme', ...on },
      { id: 2, name: 'api', namespace: 'acme', ...on },
      { id: 3, name: 'ops', namespace: 'acme', ...on },
      { id: 4, name: 'vault', namespace: 'acme/team', ...on },
    ],
  );
  seed.setIn(['inventory', 'snippets'], []);
}

function writePlan(dir: string, extra: string[] = []): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: current',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      'move:',
      '  from: [nfs-1]',
      '  to: cluster',
      '  kinds: [projects]',
      '  concurrency: 1',
      '  select: { namespaces: [acme], exclude: [acme/team] }',
      ...extra.map((l) => `  ${l}`),
      'poll: { interval: 100ms }',
      'retry: { max_attempts: 2, backoff: 100ms }',
      '',
    ].join('\n'),
  );
  return file;
}

/** How long a move of the sandbox a run is changed under takes (of the simulated clock). */
const MOVE_MS = 1_500;

const projectMoves = async (url: string) => (await movesOf(url, 'project')).map((m) => m.itemId).sort();

interface KindJson {
  kind: string;
  total: number;
  done: number;
  staying: number;
  notSelected: number;
  skipped: number;
}

describe('move.select judged on the current state', { timeout: 120_000 }, () => {
  for (const order of ['together', 'by-kind'] as const) {
    it(`does not move a project transferred into an excluded namespace mid-run (move.order: ${order})`, async () => {
      const { sim, dir, env } = await changedSimulationWith(
        `sel-now-${order}`,
        { projects: 0, snippets: 0, groups: 0 },
        inventory,
        { moveDurationMs: MOVE_MS, workers: 20 },
      );
      const runCli = sim.shardmove;
      const plan = writePlan(dir, [`order: ${order}`]);
      // One move is held in flight (concurrency 1): the other two are listed and wait for its slot.
      let first: number[] = [];
      let moved = 0;
      let transferred = 0;
      const end = await holdUntilSim(
        sim,
        ['run', plan],
        { cwd: dir, env },
        async () => (first = await projectMoves(sim.url)).length > 0,
        MOVE_MS,
        () => {
          expect(first).toHaveLength(1);
          const waiting = [1, 2, 3].filter((id) => id !== first[0]);
          moved = waiting[0]!;
          transferred = waiting[1]!;
          // As a transfer does: the project's namespace changes on the instance.
          sim.sandbox.state.db
            .prepare("UPDATE items SET namespace = ? WHERE kind = 'project' AND id = ?")
            .run('acme/team', transferred);
        },
      );
      expect(end.code, end.stdout + end.stderr).toBe(0);
      // The sandbox's records: the transferred project got no move.
      expect(await projectMoves(sim.url)).toEqual([first[0]!, moved].sort());
      const name = ['web', 'api', 'ops'][transferred - 1]!;
      expect(end.stdout.split('\n')[0]).toBe('DONE: moved 2 of 4 as planned: 2 not selected');
      expect(end.stdout).toMatch(/Verification: passed/);
      expect(end.stdout).toContain('Not moved: left the selection (1)');
      // Named by the path a listing last showed (the old one, or the new one once listed again).
      expect(flat(end.stdout)).toMatch(
        new RegExp(
          `projects ${transferred} \\(acme/(team/)?${name}\\) on nfs-1: left the selection: now acme/team/${name}, excluded by acme/team`,
        ),
      );
      expect(end.stdout).toMatch(/projects: 2 moved of 4, 0 quarantined, 2 left on the source as planned/);

      const status = await runCli(['status', plan], { cwd: dir, env });
      expect(status.stdout).toContain(`left the selection: now acme/team/${name}, excluded by acme/team`);
      expect(status.stdout).toMatch(/projects +2\/4 done/);
      const json = JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir, env })).stdout) as {
        kinds: KindJson[];
        leftSelection: { total: number; items: { id: number; reason: string }[] };
      };
      expect(json.kinds).toEqual([expect.objectContaining({ kind: 'projects', total: 4, done: 2, staying: 2 })]);
      expect(json.leftSelection.total).toBe(1);
      expect(json.leftSelection.items.map((i) => i.id)).toEqual([transferred]);
      const report = JSON.parse((await runCli(['report', plan, '--json'], { cwd: dir, env })).stdout) as {
        outcome: { total: number; staying: number; notSelected: number };
      };
      expect(report.outcome).toMatchObject({ total: 4, staying: 2, notSelected: 2 });
    });
  }

  it('run --only does not move a listed project transferred into an excluded namespace since the review', async () => {
    const { sim, dir, db, env } = await changedSimulation(
      'sel-now-only',
      { projects: 0, snippets: 0, groups: 0 },
      inventory,
    );
    const runCli = sim.shardmove;
    const plan = writePlan(dir);
    const dry = await runCli(['run', plan, '--dry-run', '--items', 'list.jsonl'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(flat(dry.stdout)).toMatch(/Item list: 3 item\(s\)/);
    const raw = new Database(db);
    raw.prepare("UPDATE items SET namespace = 'acme/team' WHERE kind = 'project' AND id = 2").run();
    raw.close();

    const run = await runCli(['run', plan, '--only', 'list.jsonl'], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(await projectMoves(sim.url)).toEqual([1, 3]);
    expect(flat(run.stdout)).toMatch(
      /^DONE: 2 of the 3 items of the list list\.jsonl moved \(1 left the selection\) and verified\b/,
    );
    expect(flat(run.stdout)).toContain(
      'projects 2 (acme/api) on nfs-1: left the selection: now acme/team/api, excluded by acme/team',
    );
    expect(flat(run.stdout)).toMatch(/projects: 2 moved of 3, 0 quarantined, 1 left on the source as planned/);
    const json = JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir, env })).stdout) as {
      kinds: KindJson[];
      listOutcome: string;
    };
    expect(json.kinds).toEqual([expect.objectContaining({ kind: 'projects', total: 3, done: 2, staying: 1 })]);
    expect(json.listOutcome).toBe('2 of the 3 items of the list list.jsonl moved (1 left the selection)');
  });

  it('a revert does not move back a project transferred into an excluded namespace since the run', async () => {
    const { sim, dir, db, env } = await changedSimulation(
      'sel-now-revert',
      { projects: 0, snippets: 0, groups: 0 },
      inventory,
    );
    const runCli = sim.shardmove;
    const plan = writePlan(dir);
    const run = await runCli(['run', plan], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(await projectMoves(sim.url)).toEqual([1, 2, 3]);
    const raw = new Database(db);
    raw.prepare("UPDATE items SET namespace = 'acme/team' WHERE kind = 'project' AND id = 2").run();
    raw.close();

    const revert = await runCli(['revert', plan, '--yes'], { cwd: dir, env });
    expect(revert.code, revert.stdout + revert.stderr).toBe(0);
    // The sandbox's records: 1 and 3 moved back, 2 moved once (forward) and left where it is.
    expect(await projectMoves(sim.url)).toEqual([1, 1, 2, 3, 3]);
    expect(flat(revert.stdout)).toContain(
      'REVERTED EXCEPT 1 THAT LEFT THE SELECTION: everything else the run moved is back where it came from, verified',
    );
    expect(flat(revert.stdout)).toContain('left the selection: now acme/team/api, excluded by acme/team');
  });
});
