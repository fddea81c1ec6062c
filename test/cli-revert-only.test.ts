/**
 * `shardmove revert --only FILE` end to end against a sandbox process, judged from the sandbox's own
 * records: only the listed items the forward run moved go back; a listed item the forward run did
 * not move, and one renamed since the review, are named and not touched; the forward run's other
 * items stay on the destination and the verification says so; a second list continues (an item
 * of both lists is not moved twice), and a plain revert moves back the rest. A list none of whose
 * items the forward run moved, a list of another plan and bad flags are refused before anything
 * is written.
 *
 * On the in-process harness (test/support/sim-harness.ts): every command through the executable's
 * command line against a sandbox on one simulated clock, so moves and polls cost no real time. The
 * subject is what a revert does with a list, not the process boundary: the interrupted revert is
 * interrupted as Ctrl-C does (its context's signal), its moves held by the clock until then.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { Document } from 'yaml';
import {
  ADMIN_TOKEN,
  flat,
  fromDb,
  movesOf,
  storagesOf,
  writePlan as writeHarnessPlan,
} from './support/cli-harness.js';
import { changedSimulation, seededSimulation } from './support/sim-speeda.js';
import { advanceUntil, interruptWhenSim } from './support/sim-speedd.js';

/** acme's six projects on nfs-1, other's one. */
function inventory(seed: Document): void {
  const on = { storage: 'nfs-1', size_mb: 5 };
  seed.setIn(
    ['inventory', 'groups'],
    [
      { id: 1, name: 'acme', storage: 'default', size_mb: 1 },
      { id: 2, name: 'other', storage: 'default', size_mb: 1 },
    ],
  );
  seed.setIn(
    ['inventory', 'projects'],
    [1, 2, 3, 4, 5, 6]
      .map((id) => ({ id, name: `p${id}`, namespace: 'acme', ...on }))
      .concat([{ id: 7, name: 'site', namespace: 'other', ...on }]),
  );
}

function writePlan(dir: string): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: ronly',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      'move:',
      '  from: [nfs-1]',
      '  to: cluster',
      '  kinds: [projects]',
      '  concurrency: 10',
      '  select: { namespaces: [acme] }',
      'poll: { interval: 100ms }',
      'retry: { max_attempts: 1, backoff: 100ms }',
      '',
    ].join('\n'),
  );
  return file;
}

function storageOf(db: string, id: number): string | undefined {
  return fromDb<{ storage: string }>(db, "SELECT storage FROM items WHERE kind = 'project' AND id = ?", id)[0]?.storage;
}

/** The list with only the lines of these project ids (and the header). */
function sublist(dir: string, from: string, to: string, ids: number[]): void {
  const lines = readFileSync(join(dir, from), 'utf8').split('\n').filter(Boolean);
  const keep = lines.filter((l, i) => i === 0 || ids.some((id) => l.includes(`"kind":"projects","id":${id},`)));
  writeFileSync(join(dir, to), `${keep.join('\n')}\n`);
}

/** How long a move of the interrupted revert's sandbox takes (of the simulated clock). */
const MOVE_MS = 1_500;

/** Moves back (off cluster) per project id, from the sandbox's move records. */
async function movesBack(url: string): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const m of await movesOf(url, 'project'))
    if (m.source === 'cluster') out.set(m.itemId, (out.get(m.itemId) ?? 0) + 1);
  return out;
}

describe('revert --only: a reviewed list moved back', { timeout: 180_000 }, () => {
  it('moves back only the listed items, names the others, continues with a second list, and a plain revert does the rest', async () => {
    const { sim, dir, db, env } = await changedSimulation(
      'revert-only',
      { projects: 0, snippets: 0, groups: 0 },
      inventory,
    );
    const runCli = sim.shardmove;
    const plan = writePlan(dir);
    const dry = await runCli(['run', plan, '--dry-run', '--items', 'all.jsonl'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    // Since the review: project 3 moved by someone else, so the forward run never moves it.
    const post = await fetch(`${sim.url}/api/v4/projects/3/repository_storage_moves`, {
      method: 'POST',
      headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ destination_storage_name: 'default' }),
    });
    expect(post.status).toBe(201);
    await advanceUntil(sim, () => storageOf(db, 3) === 'default');
    const forward = await runCli(['run', plan], { cwd: dir, env });
    expect(forward.code, forward.stdout + forward.stderr).toBe(0);
    for (const id of [1, 2, 4, 5, 6]) expect(storageOf(db, id)).toBe('cluster');
    const weightsAfterForward = await (
      await fetch(`${sim.url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } })
    ).json();

    // Refused before anything is written: a list none of whose items the forward run moved; bad flags.
    sublist(dir, 'all.jsonl', 'none.jsonl', [3]);
    const none = await runCli(['revert', plan, '--only', 'none.jsonl', '--yes'], { cwd: dir, env });
    expect(none.code, none.stdout + none.stderr).toBe(2);
    expect(none.stderr).toMatch(/none\.jsonl cannot be applied: none of its 1 item\(s\) was moved by the forward run/);
    expect(none.stderr).toMatch(/none\.jsonl:2: projects 3: the forward run did not move it/);
    const flags = await runCli(['revert', plan, '--only', 'none.jsonl', '--overwrite-weights', '--yes'], {
      cwd: dir,
      env,
    });
    expect(flags.code).toBe(2);
    expect(flags.stderr).toMatch(/--overwrite-weights goes with a plain revert/);
    expect(await movesBack(sim.url)).toEqual(new Map());

    // List A: projects 1, 2 and 3. Project 2 is renamed since the review.
    sublist(dir, 'all.jsonl', 'a.jsonl', [1, 2, 3]);
    const raw = new Database(db);
    raw.prepare("UPDATE items SET name = 'p2-new', path = 'p2-new' WHERE kind = 'project' AND id = 2").run();
    raw.close();
    const preview = await runCli(['revert', plan, '--only', 'a.jsonl', '--dry-run'], { cwd: dir, env });
    expect(preview.code, preview.stdout + preview.stderr).toBe(0);
    expect(flat(preview.stdout)).toMatch(/only the items of the list a\.jsonl:/);
    expect(flat(preview.stdout)).toMatch(/dry run: nothing was changed/);
    expect(await movesBack(sim.url)).toEqual(new Map());
    const a = await runCli(['revert', plan, '--only', 'a.jsonl', '--yes'], { cwd: dir, env });
    expect(a.code, a.stdout + a.stderr).toBe(0);
    expect(flat(a.stdout)).toMatch(/only the items of the list a\.jsonl:/);
    expect(flat(a.stdout)).toMatch(/1 of them not moved by the forward run \(not touched\):/);
    expect(flat(a.stdout)).toMatch(/a\.jsonl:\d+: project 3 \(acme\/p3\): the forward run did not move it/);
    expect(flat(a.stdout)).toMatch(/3 item\(s\) of the forward run stay on the destination: not in the list/);
    expect(flat(a.stdout)).toMatch(/project 2 \(acme\/p2-new\): renamed since the list was made/);
    expect(flat(a.stdout)).toMatch(/REVERTED EXCEPT 3 NOT IN THE LIST: 3 item\(s\) stay on the destination/);
    expect(flat(a.stdout)).toMatch(
      /Verification: passed for what this run moves; 3 items stay on cluster \(3 not in the list\)/,
    );
    expect(storageOf(db, 1)).toBe('nfs-1');
    expect(storageOf(db, 2)).toBe('cluster');
    expect(storageOf(db, 3)).toBe('default');
    for (const id of [4, 5, 6]) expect(storageOf(db, id)).toBe('cluster');
    expect(await movesBack(sim.url)).toEqual(new Map([[1, 1]]));
    // A part of the drain goes back: the weights the forward run left stay.
    const weightsNow = await (
      await fetch(`${sim.url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } })
    ).json();
    expect(weightsNow).toEqual(weightsAfterForward);

    // The forward run's status and report say that a revert ran, what went back where, and what is still there.
    const status = await runCli(['status', plan], { cwd: dir, env });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(
      /Reverted: a revert ran \(revert --only a\.jsonl\): done, started \S+Z, ended \S+Z\n {2}1 of the forward run's 5 item\(s\) moved back \(1 to nfs-1\)\n {2}3 still on the destination \(3 not in the list\); 1 skipped/,
    );
    const json = JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir, env })).stdout) as {
      revert: { state: string; back: unknown; stillThere: number; notTaken: number; skipped: number; lists: string[] };
    };
    expect(json.revert).toMatchObject({
      state: 'done',
      back: [{ storage: 'nfs-1', n: 1 }],
      stillThere: 3,
      notTaken: 3,
      skipped: 1,
      lists: ['a.jsonl'],
    });
    const report = JSON.parse((await runCli(['report', plan, '--json'], { cwd: dir, env })).stdout) as {
      revert: unknown;
    };
    expect(report.revert).toEqual(json.revert);
    const html = await runCli(['report', plan, '--html', '-'], { cwd: dir, env });
    expect(html.stdout).toMatch(/<h1>shardmove report: ronly<\/h1>/);
    expect(html.stdout).toMatch(/<h2>Reverted<\/h2>\n<p>A revert ran \(revert --only a\.jsonl\): done/);
    const own = await runCli(['report', plan, '--state', join(dir, 'state', 'ronly.revert.db'), '--html', '-'], {
      cwd: dir,
      env,
    });
    expect(own.code, own.stderr).toBe(0);
    expect(own.stdout).toMatch(/<title>Revert of ronly \(\S+ronly\.db\): shardmove report<\/title>/);
    expect(own.stdout).not.toMatch(/<h2>Reverted<\/h2>/);

    // Again with the same list: nothing more moves.
    const again = await runCli(['revert', plan, '--only', 'a.jsonl', '--yes'], { cwd: dir, env });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(await movesBack(sim.url)).toEqual(new Map([[1, 1]]));

    // List B: projects 1 (already back), 4 and 5. Project 6 stays.
    sublist(dir, 'all.jsonl', 'b.jsonl', [1, 4, 5]);
    const b = await runCli(['revert', plan, '--only', 'b.jsonl', '--yes'], { cwd: dir, env });
    expect(b.code, b.stdout + b.stderr).toBe(0);
    expect(flat(b.stdout)).toMatch(/1 of them taken by an earlier revert already \(not moved again\)/);
    expect(flat(b.stdout)).toMatch(
      /Verification: passed for what this run moves; 1 item stays on cluster \(1 not in the list\)/,
    );
    expect(flat(b.stdout)).toMatch(/projects 6 acme\/p6 on cluster: not in the list/);
    for (const id of [1, 4, 5]) expect(storageOf(db, id)).toBe('nfs-1');
    expect(storageOf(db, 6)).toBe('cluster');
    expect(await movesBack(sim.url)).toEqual(
      new Map([
        [1, 1],
        [4, 1],
        [5, 1],
      ]),
    );

    // A plain revert moves back the rest (project 6); project 2, renamed, stays skipped.
    const rest = await runCli(['revert', plan, '--yes'], { cwd: dir, env });
    expect(rest.code, rest.stdout + rest.stderr).toBe(0);
    expect(storageOf(db, 6)).toBe('nfs-1');
    expect(storageOf(db, 2)).toBe('cluster');
    expect(storageOf(db, 7)).toBe('nfs-1');
    expect(await movesBack(sim.url)).toEqual(
      new Map([
        [1, 1],
        [4, 1],
        [5, 1],
        [6, 1],
      ]),
    );
  });

  it('an interrupted list resumes with the same list; another list is refused meanwhile (exit 4) and moves nothing', async () => {
    // Moves of 1.5 s (of the simulated clock), which the clock holds in flight until the interrupt.
    const { sim, dir, env } = await seededSimulation(
      'revert-only-resume',
      { projects: 8, snippets: 0, groups: 0 },
      { moveDurationMs: MOVE_MS, workers: 50 },
    );
    const runCli = sim.shardmove;
    const plan = writeHarnessPlan(dir, { concurrency: 4, from: ['nfs-1', 'nfs-2', 'default'] });
    const dry = await runCli(['run', plan, '--dry-run', '--items', 'all.jsonl'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const forward = await runCli(['run', plan], { cwd: dir, env });
    expect(forward.code, forward.stdout + forward.stderr).toBe(0);
    sublist(dir, 'all.jsonl', 'a.jsonl', [1, 2, 3, 4]);
    sublist(dir, 'all.jsonl', 'b.jsonl', [5, 6]);
    const moves = async () => [
      ...(await movesOf(sim.url, 'project')),
      ...(await movesOf(sim.url, 'snippet')),
      ...(await movesOf(sim.url, 'group')),
    ];
    const back = async () => (await moves()).filter((m) => m.source === 'cluster').map((m) => `${m.itemId}:${m.state}`);
    const a = await interruptWhenSim(
      sim,
      ['revert', plan, '--only', 'a.jsonl', '--yes'],
      { cwd: dir, env },
      async () => (await back()).length >= 4,
      MOVE_MS,
    );
    expect(a.code, a.stdout + a.stderr).toBe(130);
    expect(a.stderr).toMatch(/To continue it: shardmove revert \S+ --only a\.jsonl/);
    const b = await runCli(['revert', plan, '--only', 'b.jsonl', '--yes'], { cwd: dir, env });
    expect(b.code, b.stdout + b.stderr).toBe(4);
    expect(b.stderr).toMatch(
      /holds 4 item\(s\) of an earlier revert not in b\.jsonl still to move back .*--only a\.jsonl/,
    );
    expect((await back()).length).toBe(4);
    const resumed = await runCli(['revert', plan, '--only', 'a.jsonl', '--yes'], { cwd: dir, env });
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect((await back()).sort()).toEqual(['1:finished', '2:finished', '3:finished', '4:finished']);
    const storages = await storagesOf(sim.url, 'projects');
    for (const id of [5, 6, 7, 8]) expect(storages.get(id)).toBe('cluster');
  });
});
