/**
 * `shardmove revert` on what an operator really has: a forward checkpoint written by an older release
 * (schema 14: no destination per item, no recorded plan), after a dry run of the same plan, and a
 * dry run of the revert itself first. Judged from the sandbox's own records.
 *
 * On the in-process harness (./support/sim-harness.ts): the sandbox and every command in this
 * process on one simulated clock, over real HTTP, so polls and move durations cost no real seconds.
 * Nothing here is about the process boundary.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { migrate } from '../src/store/schema.js';
import { moveTotal, storagesOf, writePlan } from './support/cli-harness.js';
import { seededSimulation } from './support/sim-speeda.js';

const KINDS = ['projects', 'snippets', 'groups'] as const;

async function everything(url: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const kind of KINDS) for (const [id, s] of await storagesOf(url, kind)) out.set(`${kind}:${id}`, s);
  return out;
}

/**
 * `current`'s rows in a file of schema 14, as a release of that schema wrote them: every column that
 * schema has, nothing of the later ones (an item's destination, the recorded plan).
 */
function asSchema14(current: string, file: string): void {
  const db = new Database(file);
  try {
    migrate(db, file, 14);
    db.prepare('ATTACH DATABASE ? AS cur').run(current);
    const tables = db
      .prepare(
        `SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT IN ('item_counts', 'sqlite_sequence')`,
      )
      .all() as { name: string }[];
    for (const { name } of tables) {
      const cols = (db.prepare(`PRAGMA main.table_info(${name})`).all() as { name: string }[]).map((c) => c.name);
      db.exec(`INSERT INTO main.${name} (${cols.join(', ')}) SELECT ${cols.join(', ')} FROM cur.${name}`);
    }
    db.exec('DELETE FROM main.lock');
    db.exec('DETACH DATABASE cur');
  } finally {
    db.close();
  }
}

describe('shardmove revert on an older checkpoint, after dry runs', { timeout: 150_000 }, () => {
  it('reverts a forward run whose checkpoint a schema-14 release wrote, after a dry run of the plan and of the revert', async () => {
    const {
      dir,
      sim: sandbox,
      env,
    } = await seededSimulation(
      'revert-older',
      { projects: 14, snippets: 3, groups: 2 },
      { moveDurationMs: 30, workers: 10 },
    );
    const runCli = sandbox.shardmove;
    const plan = writePlan(dir, { concurrency: 4 });
    const before = await everything(sandbox.url);
    const forward = await runCli(['run', plan, '--state', join('new', 'fwd.db')], { cwd: dir, env });
    expect(forward.code, forward.stderr).toBe(0);
    mkdirSync(join(dir, 'old'));
    asSchema14(join(dir, 'new', 'fwd.db'), join(dir, 'old', 'fwd.db'));
    rmSync(join(dir, 'new'), { recursive: true });
    const afterForward = await moveTotal(sandbox.url);

    // A dry run of the same plan beside it (its own checkpoint), then a dry run of the revert: nothing moves.
    const dry = await runCli(['run', plan, '--dry-run', '--state', join('old', 'rehearsal.db')], { cwd: dir, env });
    expect(dry.code, dry.stderr).toBe(0);
    const preview = await runCli(['revert', plan, '--state', join('old', 'fwd.db'), '--dry-run'], { cwd: dir, env });
    expect(preview.code, `${preview.stdout}${preview.stderr}`).toBe(0);
    expect(preview.stdout).toMatch(/move \d+ projects back from cluster to nfs-1/);
    expect(await moveTotal(sandbox.url)).toBe(afterForward);

    // A changed plan: refused, and the checkpoint cannot say which field changed.
    const text = readFileSync(plan, 'utf8');
    writeFileSync(plan, text.replace('concurrency: 4', 'concurrency: 5'));
    const changed = await runCli(['revert', plan, '--state', join('old', 'fwd.db'), '--yes'], { cwd: dir, env });
    expect(changed.code, changed.stderr).toBe(4);
    expect(changed.stderr).toContain('did not record the plan, so which fields differ cannot be told');
    writeFileSync(plan, text);

    const revert = await runCli(['revert', plan, '--state', join('old', 'fwd.db'), '--yes'], { cwd: dir, env });
    expect(revert.code, `${revert.stdout}${revert.stderr}`).toBe(0);
    expect(await everything(sandbox.url)).toEqual(before);
    // Twice: nothing asked, nothing moved.
    const moves = await moveTotal(sandbox.url);
    const twice = await runCli(['revert', plan, '--state', join('old', 'fwd.db')], { cwd: dir, env });
    expect(twice.code, `${twice.stdout}${twice.stderr}`).toBe(0);
    expect(await moveTotal(sandbox.url)).toBe(moves);
  });
});
