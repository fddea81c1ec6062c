/**
 * The counts of a reviewed list's run (`run --only FILE`) when most of its items were moved by hand
 * or deleted since the review: the headline, the summary's line per kind, `status`, `status --json`
 * and `report --json` all say the same: one moved, the rest not moved (no longer where the list
 * says), judged from the sandbox's own records.
 *
 * On the in-process harness (test/support/sim-harness.ts): every command through the executable's
 * command line against a sandbox on one simulated clock. The subject is the counts the commands
 * give, not the process boundary.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { Document } from 'yaml';
import { flat, movesOf } from './support/cli-harness.js';
import { changedSimulation } from './support/sim-speeda.js';

function inventory(seed: Document): void {
  seed.setIn(['inventory', 'groups'], []);
  seed.setIn(
    ['inventory', 'projects'],
    [1, 2, 3, 4, 5].map((id) => ({ id, name: `p${id}`, namespace: 'acme', storage: 'nfs-1', size_mb: 5 })),
  );
  seed.setIn(['inventory', 'snippets'], []);
}

describe('run --only: counts that agree', { timeout: 120_000 }, () => {
  it('says 1 of 5 moved everywhere when 4 listed items were moved by hand or deleted', async () => {
    const { sim, dir, db, env } = await changedSimulation(
      'only-counts',
      { projects: 0, snippets: 0, groups: 0 },
      inventory,
    );
    const plan = join(dir, 'plan.yaml');
    writeFileSync(
      plan,
      [
        'version: 1',
        'name: counts',
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
      ].join('\n'),
    );
    const dry = await sim.shardmove(['run', plan, '--dry-run', '--items', 'list.jsonl'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const raw = new Database(db);
    raw.prepare("UPDATE items SET storage = 'default' WHERE kind = 'project' AND id IN (2, 3)").run();
    raw.prepare("DELETE FROM items WHERE kind = 'project' AND id IN (4, 5)").run();
    raw.close();

    const run = await sim.shardmove(['run', plan, '--only', 'list.jsonl'], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect((await movesOf(sim.url, 'project')).map((m) => m.itemId)).toEqual([1]);
    // The headline wraps at 80 columns in a pipe.
    expect(flat(run.stdout)).toMatch(
      /^DONE: 1 of the 5 items of the list list\.jsonl moved \(4 no longer where it says\) and verified\b/,
    );
    expect(flat(run.stdout)).toContain(
      ' projects: 1 moved of 5, 0 quarantined, 4 not moved (no longer where the list says)',
    );
    expect(flat(run.stdout)).not.toMatch(/5 moved of 5/);

    const status = await sim.shardmove(['status', plan], { cwd: dir, env });
    expect(status.stdout).toMatch(/projects +1\/5 done, .*, 4 not moved \(no longer where the list says\)/);
    expect(status.stdout).toContain('5 items known: 1 done, 0 remaining, 4 not moved (no longer where the list says)');
    const json = JSON.parse((await sim.shardmove(['status', plan, '--json'], { cwd: dir, env })).stdout) as {
      kinds: { kind: string; total: number; done: number; skipped: number }[];
      remaining: number;
    };
    expect(json.kinds).toEqual([expect.objectContaining({ kind: 'projects', total: 5, done: 1, skipped: 4 })]);
    expect(json.remaining).toBe(0);
    const report = JSON.parse((await sim.shardmove(['report', plan, '--json'], { cwd: dir, env })).stdout) as {
      outcome: { headline: string; total: number; remaining: number };
    };
    expect(report.outcome).toMatchObject({ total: 5, remaining: 0 });
    expect(report.outcome.headline).toBe(
      'Done: 1 of the 5 items of the list list.jsonl moved (4 no longer where it says) and verified',
    );
  });
});
