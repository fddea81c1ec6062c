/**
 * Hidden and pending-delete projects on a release whose per-item move routes cannot find them
 * (16.2 EE: both answer 404 as for a deleted project), end to end against a sandbox process and
 * judged from the sandbox's database and the CLI's output: where the plan allows the bulk move of
 * the source, the dry run says they go by it and the run moves them with it, confirmed by move
 * records; where `move.select` forbids it, they are quarantined with that reason and remedy. None
 * is ever called deleted.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { flat, fromDb, runCli, sandboxEnv, startSeededSandbox, writePlan } from './support/cli-harness.js';

const HIDDEN = 3;
const PENDING = 4;

async function sandboxAt162(name: string) {
  return startSeededSandbox(name, { projects: 12, snippets: 0, groups: 0 }, (seed) => {
    seed.setIn(['instance', 'version'], '16.2.0');
    seed.setIn(
      ['inventory', 'projects'],
      [
        { id: HIDDEN, storage: 'nfs-1', hidden: true },
        { id: PENDING, storage: 'nfs-1', pending_delete: true },
      ],
    );
  });
}

/** The plan of the harness for projects only, off nfs-1 and nfs-2. */
function projectsPlan(dir: string): string {
  const plan = writePlan(dir, { from: ['nfs-1', 'nfs-2'] });
  writeFileSync(plan, readFileSync(plan, 'utf8').replace('kinds: [projects, snippets, groups]', 'kinds: [projects]'));
  return plan;
}

const storageOf = (db: string, id: number) =>
  fromDb<{ storage: string }>(db, "SELECT storage FROM items WHERE kind = 'project' AND id = ?", id)[0]?.storage;

describe('hidden and pending-delete projects on 16.2 EE (separate processes)', { timeout: 90_000 }, () => {
  it('a plan that takes the whole source: the dry run names the bulk move, the run moves them by it, and nothing is called deleted', async () => {
    const { sandbox, dir, db } = await sandboxAt162('hidden-16-2-bulk');
    const plan = projectsPlan(dir);
    const env = sandboxEnv(sandbox.url);
    const dry = await runCli(['run', plan, '--dry-run'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(flat(dry.stdout)).toContain(
      '2 hidden/pending-delete projects would move by the bulk move of nfs-1 on 16.2.0 (GitLab 16.2.0 answers 404 for them on every per-item move route)',
    );

    const r = await runCli(['run', plan], { cwd: dir, env });
    const said = r.stdout + r.stderr;
    expect(r.code, said).toBe(0);
    expect(said).not.toMatch(/deleted/i);
    expect(flat(r.stdout)).toContain('2 hidden/pending-delete projects move by the bulk move of nfs-1 on 16.2.0');
    for (const id of [HIDDEN, PENDING]) expect(storageOf(db, id), `project ${id}`).toBe('cluster');
    expect(
      fromDb<{ n: number }>(
        db,
        "SELECT count(*) AS n FROM items WHERE kind = 'project' AND storage IN ('nfs-1', 'nfs-2')",
      )[0]?.n,
    ).toBe(0);
    // Confirmed by move records: each one's move came from the bulk move of nfs-1 and finished.
    const moves = fromDb<{ item_id: number; state: string; source: string }>(
      db,
      "SELECT item_id, state, source FROM moves WHERE kind = 'project' AND item_id IN (?, ?)",
      HIDDEN,
      PENDING,
    );
    expect(moves.map((m) => [m.item_id, m.state, m.source]).sort()).toEqual([
      [HIDDEN, 'finished', 'nfs-1'],
      [PENDING, 'finished', 'nfs-1'],
    ]);
  });

  it('a plan with move.select: they are quarantined with the reason and the remedy, never called deleted', async () => {
    const { sandbox, dir, db } = await sandboxAt162('hidden-16-2-select');
    const plan = projectsPlan(dir);
    const text = readFileSync(plan, 'utf8').replace(
      'kinds: [projects]',
      // Any selection forbids the bulk move, which would take everything on the source.
      'kinds: [projects]\n  select: { exclude: [1] }',
    );
    writeFileSync(plan, text);
    const r = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    const said = r.stdout + r.stderr;
    expect(r.code, said).toBe(3);
    expect(said).not.toMatch(/deleted/i);
    expect(flat(r.stdout)).toMatch(
      /2 hidden\/pending-delete projects stay on nfs-1, quarantined: GitLab 16\.2\.0 answers 404 for them on every per-item move route, and move\.select forbids the bulk move of nfs-1/,
    );
    expect(flat(r.stdout)).toContain(
      'hidden-unreachable: before 16.7 GitLab finds hidden and pending-delete projects only',
    );
    for (const id of [HIDDEN, PENDING]) expect(storageOf(db, id), `project ${id}`).toBe('nfs-1');
    expect(
      fromDb<{ n: number }>(db, "SELECT count(*) AS n FROM moves WHERE kind = 'project' AND item_id IN (3, 4)")[0]?.n,
    ).toBe(0);
  });
});
