/**
 * Fork networks in plain sight, end to end against a sandbox: the dry run and `status`
 * name each network (its root, members, pool and destination), and a reviewed list's run
 * (`run --only`) counts the room as the dry run that wrote the list did, the pool bytes included;
 * the twin of the dry run carries the networks, so its rehearsal finds the same networks and room.
 *
 * On the in-process harness (test/support/sim-harness.ts): every command through the executable's
 * command line against sandboxes (the instance's and the twin's) on one simulated clock. What is
 * judged is what the commands print and count, not the process boundary.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Document } from 'yaml';
import { changedSimulation, sandboxBeside } from './support/sim-speeda.js';

/**
 * Networks on nfs-1: root 1 with forks 2 and 3 (3 forked again by 4, standalone), root 5 with fork
 * 6; 7 alone; 9 a fork of 8, which is on `default`.
 */
function inventory(seed: Document): void {
  const on = { storage: 'nfs-1', namespace: 'acme', visibility: 'public' };
  seed.setIn(
    ['inventory', 'projects'],
    [
      { id: 1, name: 'core', size_mb: 400, ...on },
      { id: 2, name: 'core-a', size_mb: 30, forked_from: 1, ...on },
      { id: 3, name: 'core-b', size_mb: 20, forked_from: 1, ...on },
      { id: 4, name: 'core-b-x', size_mb: 10, forked_from: 3, ...on },
      { id: 5, name: 'lib', size_mb: 200, ...on },
      { id: 6, name: 'lib-a', size_mb: 15, forked_from: 5, ...on },
      { id: 7, name: 'alone', size_mb: 50, ...on },
      // A root that stays on a storage outside the plan, read by id for its pool's size.
      { id: 8, name: 'upstream', size_mb: 300, ...on, storage: 'default' },
      { id: 9, name: 'upstream-a', size_mb: 5, forked_from: 8, ...on },
    ],
  );
}

function writePlan(dir: string, to = 'cluster', capacity: string | null = '{ cluster: { free: 100GiB } }'): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: forks',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      'move:',
      '  from: [nfs-1]',
      `  to: ${to}`,
      '  kinds: [projects]',
      ...(capacity === null ? [] : ['capacity:', `  storages: ${capacity}`]),
      'poll: { interval: 100ms }',
      '',
    ].join('\n'),
  );
  return file;
}

/** Every destination's room line, as `storage: needs`. */
const roomLines = (out: string) => [...out.matchAll(/room on (\S+): needs ([^+]+) \+/g)].map((m) => `${m[1]}: ${m[2]}`);
const roomLine = (out: string) => /room on cluster: needs ([^+]+) \+/.exec(out)?.[1] ?? null;

describe('fork networks', { timeout: 180_000 }, () => {
  it('the dry run, status and report name each network; the --only run counts the room as its dry run did', async () => {
    const { sim, dir, env } = await changedSimulation('forks', { projects: 0, snippets: 0, groups: 0 }, inventory);
    const runCli = sim.shardmove;
    const plan = writePlan(dir);
    const dry = await runCli(['run', plan, '--dry-run', '--items', 'list.jsonl'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const dryRoom = roomLine(dry.stdout);
    expect(dryRoom, dry.stdout).not.toBeNull();
    const networks = [
      /^Fork networks \(3, 6 members on the sources, pools 900 MiB in all\):$/m,
      /^ {2}project 1 acme\/core: 3 members, pool 400 MiB on nfs-1, to cluster$/m,
      /^ {2}project 5 acme\/lib: 2 members, pool 200 MiB on nfs-1, to cluster$/m,
      // Past 80 columns: the root on a line of its own.
      /^ {2}project 8 \(root not on the sources\):\n {4}1 member, pool 300 MiB on default, to cluster$/m,
    ];
    for (const re of networks) expect(dry.stdout).toMatch(re);
    const dryStatus = await runCli(['status', plan, '--state', 'state/forks.dry-run.db'], { cwd: dir, env });
    for (const re of networks) expect(dryStatus.stdout).toMatch(re);
    // The twin carries the networks: its sandbox has the same networks and pools, and the rehearsal's
    // dry run says so, with the same room.
    mkdirSync(join(dir, 'twin'));
    const twin = await runCli(['twin', plan, '--out', 'twin/forks.yaml'], { cwd: dir, env });
    expect(twin.code, twin.stdout + twin.stderr).toBe(0);
    expect(readFileSync(join(dir, 'twin', 'forks.yaml'), 'utf8')).toContain(
      '#   fork networks: 3 (6 members on the sources), each member written under inventory.projects',
    );
    const b = await sandboxBeside(sim, { seed: join(dir, 'twin', 'forks.yaml') });
    const rehearsal = await runCli(['run', 'twin/forks.plan.yaml', '--dry-run'], {
      cwd: dir,
      env: { SHARDMOVE_TWIN_URL: b.url, SHARDMOVE_TWIN_TOKEN: 'glpat-twin-rehearsal-admin-0001' },
    });
    expect(rehearsal.code, rehearsal.stdout + rehearsal.stderr).toBe(0);
    const renamed = [
      /^ {2}project 1 twin\/project-1: 3 members, pool 400 MiB on nfs-1, to cluster$/m,
      /^ {2}project 5 twin\/project-5: 2 members, pool 200 MiB on nfs-1, to cluster$/m,
      // Past 80 columns: the root on a line of its own.
      /^ {2}project 8 \(root not on the sources\):\n {4}1 member, pool 300 MiB on default, to cluster$/m,
    ];
    for (const re of [networks[0]!, ...renamed]) expect(rehearsal.stdout).toMatch(re);
    expect(roomLine(rehearsal.stdout)).toBe(dryRoom);

    const run = await runCli(['run', plan, '--only', 'list.jsonl'], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const status = await runCli(['status', plan], { cwd: dir, env });
    expect(roomLine(status.stdout), status.stdout).toBe(dryRoom);
    for (const re of networks) expect(status.stdout).toMatch(re);

    type Net = {
      root: number;
      members: number;
      poolBytes: number;
      destinations: string[];
      memberList?: { id: number }[];
    };
    type View = { count: number; members: number; poolBytes: number; networks: Net[] };
    const small = JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir, env })).stdout) as {
      networks: View;
    };
    expect(small.networks).toMatchObject({ count: 3, members: 6, poolBytes: 900 * 2 ** 20 });
    expect(small.networks.networks.map((n) => [n.root, n.members, n.destinations])).toEqual([
      [1, 3, ['cluster']],
      [5, 2, ['cluster']],
      [8, 1, ['cluster']],
    ]);
    expect(small.networks.networks[0]).not.toHaveProperty('memberList');
    const members = (v: View) => v.networks.map((n) => n.memberList?.map((m) => m.id));
    const items = JSON.parse((await runCli(['status', plan, '--json', '--items'], { cwd: dir, env })).stdout) as {
      networks: View;
    };
    expect(members(items.networks)).toEqual([[1, 2, 3], [5, 6], [9]]);
    const report = JSON.parse((await runCli(['report', plan, '--json'], { cwd: dir, env })).stdout) as {
      networks: View;
    };
    expect(members(report.networks)).toEqual([[1, 2, 3], [5, 6], [9]]);
    const html = await runCli(['report', plan, '--html', '-'], { cwd: dir, env });
    expect(html.stdout).toMatch(/<section id="networks-section"><h2>Fork networks \(3\)<\/h2>/);
    expect(html.stdout).toMatch(/<td>1 acme\/core, 2 acme\/core-a, 3 acme\/core-b<\/td>/);
  });

  it('on two destinations too: the list pins each item, and its run counts the room its dry run did', async () => {
    const { sim, dir, env } = await changedSimulation('forks-two', { projects: 0, snippets: 0, groups: 0 }, inventory);
    const runCli = sim.shardmove;
    const plan = writePlan(dir, '[cluster, nfs-2]', '{ cluster: { free: 100GiB }, nfs-2: { free: 100GiB } }');
    const dry = await runCli(['run', plan, '--dry-run', '--items', 'list.jsonl'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const dryRooms = roomLines(dry.stdout);
    expect(dryRooms, dry.stdout).toHaveLength(2);
    const run = await runCli(['run', plan, '--only', 'list.jsonl'], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(roomLines(run.stdout)).toEqual(dryRooms);
  });

  it("on a release that drops a moved fork's pool link, the list's run warns as its dry run did", async () => {
    const { sim, dir, env } = await changedSimulation('forks-old', { projects: 0, snippets: 0, groups: 0 }, (seed) => {
      inventory(seed);
      seed.setIn(['instance', 'version'], '16.2.0');
    });
    const runCli = sim.shardmove;
    const plan = writePlan(dir, 'cluster', null);
    const warning = (out: string) => /GitLab 16\.2\.0 drops a moved fork's pool link: [^\n]*/.exec(out)?.[0] ?? null;
    const dry = await runCli(['run', plan, '--dry-run', '--items', 'list.jsonl'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(warning(dry.stdout), dry.stdout).toMatch(/: 4 fork\(s\) of 3 network\(s\)/);
    const run = await runCli(['run', plan, '--only', 'list.jsonl'], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(warning(run.stdout)).toBe(warning(dry.stdout));
  });
});
