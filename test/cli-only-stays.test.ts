/**
 * What stays on the source after a reviewed list's run (`run --only FILE`) that ended with
 * quarantined items, its list missing one project the review removed: no output says nothing is
 * left; the final summary, `status`, `status --json`, `report --json` and the HTML report each
 * count and name (the metrics file counts) the two quarantined projects and the one not in the list, from the sandbox's
 * storage-filtered listing at verification. A resume that does nothing new then still reports the
 * whole migration: its first start, its duration over both processes, every event on the timeline.
 *
 * On the in-process harness (test/support/sim-harness.ts): every command through the executable's
 * command line against a sandbox on one simulated clock, so moves, polls and backoffs cost no real
 * time; the sandbox with broken items is the same instance started again on its address and
 * database. "Both processes" are the two runs of the checkpoint, one after the other.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Document } from 'yaml';
import { flat, sandboxEnv } from './support/cli-harness.js';
import { changedSimulation } from './support/sim-speeda.js';
import { restartSandbox } from './support/sim-speedd.js';

function inventory(seed: Document): void {
  seed.setIn(['inventory', 'groups'], []);
  seed.setIn(
    ['inventory', 'projects'],
    [1, 2, 3, 4, 5].map((id) => ({ id, name: `p${id}`, namespace: 'acme', storage: 'nfs-1', size_mb: 5 })),
  );
  seed.setIn(['inventory', 'snippets'], []);
}

const PLAN = [
  'version: 1',
  'name: stays',
  'instance:',
  '  url: ${SHARDMOVE_URL}',
  '  token: ${SHARDMOVE_TOKEN}',
  'move:',
  '  from: [nfs-1]',
  '  to: cluster',
  '  kinds: [projects]',
  'poll: { interval: 100ms }',
  'retry: { max_attempts: 1, backoff: 100ms }',
  '',
].join('\n');

interface Stays {
  listed: boolean;
  total: number;
  bySource: { source: string; why: string; n: number }[];
  items: { kind: string; id: number; path: string; source: string; why: string }[];
}

const STAYING = [
  { kind: 'projects', id: 3, path: 'acme/p3', source: 'nfs-1', why: 'quarantined' },
  { kind: 'projects', id: 4, path: 'acme/p4', source: 'nfs-1', why: 'quarantined' },
  { kind: 'projects', id: 5, path: 'acme/p5', source: 'nfs-1', why: 'not in the list' },
];

const SAYS = 'passed for what this run moves; 3 items stay on nfs-1 (2 quarantined, 1 not in the list)';

/**
 * A sandbox whose projects 3 and 4 always fail to move, a dry run's list with project 5 removed by
 * the review, and the `--only` run of that list (exit 3).
 */
async function quarantinedListRun(name: string) {
  const { sim, dir, db } = await changedSimulation(name, { projects: 0, snippets: 0, groups: 0 }, inventory);
  const runCli = sim.shardmove;
  const plan = join(dir, 'plan.yaml');
  writeFileSync(plan, PLAN);
  const broken = await restartSandbox(sim, sim.sandbox, {
    seed: join(dir, 'seed.yaml'),
    db,
    moveDurationMs: 20,
    workers: 20,
    faults: { brokenItems: ['project:3', 'project:4'] },
  });
  const env = sandboxEnv(broken.url);
  const dry = await runCli(['run', plan, '--dry-run', '--items', 'list.jsonl'], { cwd: dir, env });
  expect(dry.code, dry.stdout + dry.stderr).toBe(0);
  const list = join(dir, 'list.jsonl');
  // The review removed project 5 from the list.
  const lines = readFileSync(list, 'utf8').split('\n').filter(Boolean);
  writeFileSync(list, `${lines.filter((l) => !/"kind":"projects","id":5,/.test(l)).join('\n')}\n`);

  const run = await runCli(['run', plan, '--only', 'list.jsonl', '--metrics-file', 'run.prom'], { cwd: dir, env });
  expect(run.code, run.stdout + run.stderr).toBe(3);
  return { plan, dir, env, run, runCli };
}

describe('run --only: what stays is named', { timeout: 180_000 }, () => {
  it('names the quarantined items and the one left out of the list everywhere, and never says nothing is left', async () => {
    const { plan, dir, env, run, runCli } = await quarantinedListRun('only-stays');
    // The summary wraps at 80 columns in a pipe: its sentences are read with their lines joined.
    expect(flat(run.stdout)).toMatch(
      /^DONE WITH QUARANTINED ITEMS: 2 of the 4 items of the list list\.jsonl quarantined, 2 moved and verified\b/,
    );
    expect(flat(run.stdout)).toContain(`Verification: ${SAYS}`);
    expect(run.stdout).toContain('  projects 3 acme/p3 on nfs-1: quarantined');
    expect(run.stdout).toContain('  projects 5 acme/p5 on nfs-1: not in the list');
    expect(run.stdout).not.toMatch(/nothing (of the moved kinds )?is left|everything else moved/i);

    const metrics = readFileSync(join(dir, 'run.prom'), 'utf8');
    expect(metrics).toContain('shardmove_items_staying{plan="stays",storage="nfs-1",why="quarantined"} 2');
    expect(metrics).toContain('shardmove_items_staying{plan="stays",storage="nfs-1",why="not in the list"} 1');

    const status = await runCli(['status', plan], { cwd: dir, env });
    expect(status.stdout).toContain(`Verification: ${SAYS}`);
    expect(status.stdout).toContain('  projects 5 acme/p5 on nfs-1: not in the list');
    const json = JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir, env })).stdout) as {
      verification: { ok: boolean; says: string; stays: Stays };
    };
    expect(json.verification).toMatchObject({ ok: true, says: SAYS });
    expect(json.verification.stays).toMatchObject({ listed: true, total: 3, items: STAYING });
    expect(json.verification.stays.bySource).toEqual([
      { source: 'nfs-1', why: 'not in the list', n: 1 },
      { source: 'nfs-1', why: 'quarantined', n: 2 },
    ]);

    const report = JSON.parse((await runCli(['report', plan, '--json'], { cwd: dir, env })).stdout) as {
      verification: { result: { stays: Stays } };
    };
    expect(report.verification.result.stays).toMatchObject({ total: 3, items: STAYING });
    const html = await runCli(['report', plan, '--html', '-'], { cwd: dir, env });
    expect(html.code, html.stderr).toBe(0);
    expect(html.stdout).toContain(`Passed for what this run moves; 3 items stay on nfs-1`);
    expect(html.stdout).toContain('<td>acme/p5</td><td>nfs-1</td><td>not in the list</td>');
    expect(html.stdout).not.toMatch(/nothing of the moved kinds is left/);
  });

  it('reports the whole migration after a resume that does nothing new: its first start, duration and timeline', async () => {
    const { plan, dir, env, runCli } = await quarantinedListRun('only-stays-resume');
    type Outcome = { startedAt: number; lastEventAt: number; activeMs: number; processes: number };
    type Report = { outcome: Outcome; timeline: { start: number; markers: { t: number; label: string }[] } };
    const readReport = async () =>
      JSON.parse((await runCli(['report', plan, '--json'], { cwd: dir, env })).stdout) as Report;
    const first = await readReport();
    expect(first.outcome.processes).toBe(1);
    const again = await runCli(['run', plan, '--only', 'list.jsonl'], { cwd: dir, env });
    expect(again.code, again.stdout + again.stderr).toBe(3);
    const firstIso = new Date(first.outcome.startedAt).toISOString().replace(/\.\d+Z$/, 'Z');
    expect(again.stderr).toContain(`resuming the run started ${firstIso}`);
    expect(again.stdout).toContain(`  took `);
    expect(flat(again.stdout)).toContain(`from the first start at ${firstIso}`);
    expect(flat(again.stdout)).toMatch(/running .* of it, in 2 processes \(this one /);
    expect(flat(again.stdout)).toContain(`Verification: ${SAYS}`);
    const after = await readReport();
    expect(after.outcome.startedAt).toBe(first.outcome.startedAt);
    expect(after.timeline.start).toBe(first.timeline.start);
    expect(after.outcome.processes).toBe(2);
    expect(after.outcome.lastEventAt - after.outcome.startedAt).toBeGreaterThanOrEqual(
      first.outcome.lastEventAt - first.outcome.startedAt,
    );
    expect(after.outcome.activeMs).toBeGreaterThanOrEqual(first.outcome.activeMs);
    // Every event of both processes is on the timeline, none before its start.
    expect(after.timeline.markers.filter((m) => m.label.startsWith('finished')).length).toBe(2);
    expect(after.timeline.markers.every((m) => m.t >= 0)).toBe(true);
  });
});
