/**
 * Copies left behind stay true (the sandbox and the CLI over real HTTP): a
 * copy on the storage its item lives on now is the live repository (Gitaly's ReplicateRepository
 * fetches into it), never listed for removal, whatever moved the item back (a revert, a move by
 * hand); and a move killed after its copy, before the switch, leaves a copy on its destination,
 * which is listed. Judged from the sandbox's own records: where each item is, and the copies
 * (`stale_copies`) it holds on each storage.
 *
 * On the in-process harness (./support/sim-speedf.ts): the sandbox, restarted on its database file
 * and port with other faults as a process would be, and every command on one simulated clock, so
 * polls, backoffs and move durations cost no real seconds. Nothing here is about the process
 * boundary.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, flat, fromDb, sandboxEnv, writePlan } from './support/cli-harness.js';
import type { SimResult } from './support/sim-harness.js';
import { restartableSimulation } from './support/sim-speedf.js';
import type { RestartableSimulation } from './support/sim-speedf.js';

const PLURAL = { project: 'projects', snippet: 'snippets', group: 'groups' } as const;
type SandboxKind = keyof typeof PLURAL;

/** A copy as the outputs list it (`orphans` of status and report --json). */
interface Listed {
  kind: string;
  id: number;
  source: string;
  side: 'source' | 'destination';
  known: string;
  itemStorage: string | null;
}

interface Live {
  kind: string;
  id: number;
  storage: string;
}

/** The copies the sandbox holds, as `kind:id@storage` (the kind plural, as shardmove names it). */
function sandboxCopies(db: string): string[] {
  return fromDb<{ kind: SandboxKind; item_id: number; storage: string }>(
    db,
    'SELECT kind, item_id, storage FROM stale_copies',
  )
    .map((c) => `${PLURAL[c.kind]}:${c.item_id}@${c.storage}`)
    .sort();
}

/** Where the sandbox serves each item from, by `kind:id` (the kind plural). */
function sandboxStorages(db: string): Map<string, string> {
  return new Map(
    fromDb<{ kind: SandboxKind; id: number; storage: string }>(db, 'SELECT kind, id, storage FROM items').map((i) => [
      `${PLURAL[i.kind]}:${i.id}`,
      i.storage,
    ]),
  );
}

async function statusJson(
  sb: RestartableSimulation,
  plan: string,
  state: string,
): Promise<{ orphans: Listed[]; liveCopies: Live[] }> {
  const r: SimResult = await sb.shardmove(['status', plan, '--state', state, '--json'], { cwd: sb.dir });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { orphans: Listed[]; liveCopies: Live[] };
}

const key = (c: { kind: string; id: number }, storage: string) => `${c.kind}:${c.id}@${storage}`;

/** No listed copy is on the storage its item lives on, by the sandbox's records. */
function expectNoneLive(listed: readonly Listed[], db: string): void {
  const where = sandboxStorages(db);
  for (const c of listed) expect(where.get(`${c.kind}:${c.id}`), key(c, c.source)).not.toBe(c.source);
}

/** The value of the copies series for (storage, side) in a metrics file, 0 when absent. */
function copiesSeries(file: string, storage: string, side: string): number {
  const line = readFileSync(file, 'utf8')
    .split('\n')
    .find(
      (l) =>
        l.startsWith('shardmove_copies_left_behind{') &&
        l.includes(`storage="${storage}"`) &&
        l.includes(`side="${side}"`),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('copies left behind stay true (real HTTP, simulated clock)', { timeout: 120_000 }, () => {
  it('a revert makes the copies the forward run left live: its status and report (JSON and HTML) list none, and the revert says which', async () => {
    const sb = restartableSimulation('left-revert', { projects: 10, snippets: 3, groups: 2 });
    // Every forward move dies after the switch: each item on cluster, its copy left on nfs-1.
    let sandbox = await sb.restart({ failAfterSwitchRate: 1 });
    const env = sandboxEnv(sandbox.url);
    const plan = writePlan(sb.dir, { concurrency: 4, from: ['nfs-1'] });
    const state = join(sb.dir, 'state', 'it.db');
    const forward = await sb.shardmove(['run', plan], { cwd: sb.dir, env });
    expect(forward.code, forward.stdout + forward.stderr).toBe(0);
    const left = sandboxCopies(sb.db);
    expect(left.length).toBeGreaterThan(5);
    const before = await statusJson(sb, plan, state);
    expect(before.orphans.map((c) => key(c, c.source)).sort()).toEqual(left);
    expectNoneLive(before.orphans, sb.db);

    // The same instance without the fault: the revert moves every item back onto its copy.
    sandbox = await sb.restart();
    const revert = await sb.shardmove(['revert', plan, '--yes'], { cwd: sb.dir, env });
    expect(revert.code, revert.stdout + revert.stderr).toBe(0);
    expect(sandboxCopies(sb.db)).toEqual([]);
    const where = sandboxStorages(sb.db);
    for (const c of left) expect(where.get(c.split('@')[0]!)).toBe('nfs-1');

    // The forward run's own outputs: nothing to remove, the same copies said live.
    const after = await statusJson(sb, plan, state);
    expectNoneLive(after.orphans, sb.db);
    expect(after.orphans).toEqual([]);
    expect(after.liveCopies.map((c) => key(c, c.storage)).sort()).toEqual(left);
    expect(revert.stdout).toContain(`Copies that are live (${left.length})`);
    expect(flat(revert.stdout)).toMatch(
      /the revert moved it back onto it \(move \d+\): the copy became its repository/,
    );
    const text = await sb.shardmove(['status', plan, '--state', state], { cwd: sb.dir });
    expect(text.stdout).not.toContain('Source copies left behind');
    expect(text.stdout).toContain(`Copies that are live (${left.length})`);
    const html = join(sb.dir, 'report.html');
    const report = await sb.shardmove(['report', plan, '--state', state, '--json', '--html', html], { cwd: sb.dir });
    expect(report.code, report.stderr).toBe(0);
    const data = JSON.parse(report.stdout) as { orphans: Listed[]; liveCopies: Live[] };
    expect(data.orphans).toEqual([]);
    expect(data.liveCopies).toHaveLength(left.length);
    const page = readFileSync(html, 'utf8');
    expect(page).not.toContain('Source copies left behind');
    expect(page).toContain(`Copies that are live (${left.length})`);
  });

  it('a move killed after its copy leaves that copy on the destination: listed as the sandbox holds it, in the report, status and metrics; a retry onto it makes it live', async () => {
    const sb = restartableSimulation('left-dest', { projects: 24, snippets: 4, groups: 2 });
    let sandbox = await sb.restart({ failAfterCopyRate: 0.5, seed: 7 });
    const env = sandboxEnv(sandbox.url);
    const plan = writePlan(sb.dir, { concurrency: 6, from: ['nfs-1'] });
    const state = join(sb.dir, 'state', 'it.db');
    const metrics = join(sb.dir, 'metrics', 'it.prom');
    const run = await sb.shardmove(['run', plan, '--metrics-file', metrics], { cwd: sb.dir, env });
    // Items whose two attempts both died are quarantined; the others moved, a first copy reused.
    expect(run.code, run.stdout + run.stderr).toBe(3);
    const left = sandboxCopies(sb.db);
    expect(left.length).toBeGreaterThan(0);
    expect(left.every((c) => c.endsWith('@cluster'))).toBe(true);
    const moved = fromDb<{ n: number }>(sb.db, "SELECT count(*) AS n FROM moves WHERE state = 'failed'")[0]!.n;
    expect(moved).toBeGreaterThan(left.length);

    expect(run.stdout).toContain(`Copies left on the destination by failed moves (${left.length})`);
    const status = await statusJson(sb, plan, state);
    expect(status.orphans.map((c) => key(c, c.source)).sort()).toEqual(left);
    for (const c of status.orphans) {
      expect(c.side).toBe('destination');
      // Re-checked on the instance when the run ended: the item is on its source.
      expect(c).toMatchObject({ known: 'instance', itemStorage: 'nfs-1' });
    }
    expectNoneLive(status.orphans, sb.db);
    expect(copiesSeries(metrics, 'cluster', 'destination')).toBe(left.length);

    // Fixed: the retry of each quarantined item fetches into its copy, which becomes the repository.
    sandbox = await sb.restart();
    const retried = await sb.shardmove(['run', plan, '--retry-quarantined', '--metrics-file', metrics], {
      cwd: sb.dir,
      env,
    });
    expect(retried.code, retried.stdout + retried.stderr).toBe(0);
    expect(sandboxCopies(sb.db)).toEqual([]);
    expect((await statusJson(sb, plan, state)).orphans).toEqual([]);
    expect(retried.stdout).not.toContain('Copies left on the destination by failed moves');
    expect(copiesSeries(metrics, 'cluster', 'destination')).toBe(0);
  });

  it('an item moved back onto its copy by hand is found there when the run ends again: live, not listed', async () => {
    const sb = restartableSimulation('left-hand', { projects: 6, snippets: 1, groups: 1 });
    let sandbox = await sb.restart({ failAfterSwitchRate: 1 });
    const env = sandboxEnv(sandbox.url);
    const plan = writePlan(sb.dir, { concurrency: 3, from: ['nfs-1'] });
    const state = join(sb.dir, 'state', 'it.db');
    const forward = await sb.shardmove(['run', plan], { cwd: sb.dir, env });
    expect(forward.code, forward.stdout + forward.stderr).toBe(0);
    const left = sandboxCopies(sb.db).filter((c) => c.startsWith('projects:'));
    const back = Number(left[0]!.split('@')[0]!.split(':')[1]);

    sandbox = await sb.restart();
    const res = await fetch(`${sandbox.url}/api/v4/projects/${back}/repository_storage_moves`, {
      method: 'POST',
      headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ destination_storage_name: 'nfs-1' }),
    });
    expect(res.status).toBe(201);
    // The sandbox's move runs on the simulated clock: the test moves it, 20 ms a step.
    const until = sb.clock.now() + 20_000;
    while (sandboxStorages(sb.db).get(`projects:${back}`) !== 'nfs-1') {
      if (sb.clock.now() > until) throw new Error(`project ${back} never went back`);
      await sb.clock.advanceAsync(20);
    }
    // The finished run, run again: it moves nothing and reads where each item with a copy lives.
    const again = await sb.shardmove(['run', plan], { cwd: sb.dir, env });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(flat(again.stdout)).toMatch(
      new RegExp(`projects ${back} \\S+ on nfs-1: re-checked on the instance at \\S+: the item lives there`),
    );
    const status = await statusJson(sb, plan, state);
    expect(status.orphans.map((c) => key(c, c.source)).sort()).toEqual(sandboxCopies(sb.db));
    expect(status.liveCopies.map((c) => key(c, c.storage))).toEqual([`projects:${back}@nfs-1`]);
    expectNoneLive(status.orphans, sb.db);
  });
});
