/**
 * The names of `move.select` as the instance holds them, end to end against a sandbox:
 * projects named to move that are on no source storage are named in the dry run, the run's summary
 * and `status` (each with where it is), and a group whose path is all digits, quoted in the plan,
 * is read as that path (GitLab reads an all-digit id in a route as an id).
 *
 * On the in-process harness (test/support/sim-harness.ts): every command through the executable's
 * command line against a sandbox on one simulated clock. The subject is what the commands read of
 * the plan and the instance, not the process boundary.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Document } from 'yaml';
import { flat, movesOf } from './support/cli-harness.js';
import { changedSimulation } from './support/sim-speeda.js';

function inventory(seed: Document): void {
  const at = (storage: string) => ({ storage, size_mb: 5 });
  seed.setIn(
    ['inventory', 'groups'],
    [
      { id: 1, name: 'acme', ...at('nfs-1') },
      { id: 5, name: '2024', ...at('nfs-1') },
    ],
  );
  seed.setIn(
    ['inventory', 'projects'],
    [
      { id: 1, name: 'web', namespace: 'acme', ...at('nfs-1') },
      { id: 2, name: 'far', namespace: 'acme', ...at('nfs-2') },
      { id: 3, name: 'old', namespace: 'other', ...at('nfs-2') },
      { id: 4, name: 'docs', namespace: 'other', ...at('default') },
      { id: 5, name: 'q1', namespace: '2024', ...at('nfs-1') },
      { id: 6, name: 'q2', namespace: '2024/q', ...at('nfs-1') },
      // Project id 2024 is not in the group "2024": were the name read as an id, it would be chosen.
      { id: 2024, name: 'trap', namespace: 'other', ...at('nfs-1') },
    ],
  );
  seed.setIn(['inventory', 'snippets'], []);
}

function writePlan(dir: string, select: string): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: names',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      'move:',
      '  from: [nfs-1]',
      '  to: cluster',
      '  kinds: [projects]',
      `  select: ${select}`,
      'poll: { interval: 100ms }',
      'retry: { max_attempts: 1, backoff: 100ms }',
      '',
    ].join('\n'),
  );
  return file;
}

const projectMoves = async (url: string) => (await movesOf(url, 'project')).map((m) => m.itemId).sort((a, b) => a - b);

describe('move.select names on the instance', { timeout: 120_000 }, () => {
  it('names the projects it was told to move that are on no source, in the dry run, the summary and status', async () => {
    const { sim, dir, env } = await changedSimulation('sel-names', { projects: 0, snippets: 0, groups: 0 }, inventory);
    const plan = writePlan(dir, '{ namespaces: [acme], projects: [acme/far, other/old, 4] }');
    const said = [
      /move\.select: "acme\/far" \(.*plan\.yaml:10:44\) is named but not on a source storage \(on nfs-2\): this run does not move it/,
      /move\.select: "other\/old" \(.*plan\.yaml:10:54\) is named but not on a source storage \(on nfs-2\)/,
      /move\.select: project 4 \(.*plan\.yaml:10:65\) is named but not on a source storage \(on default\)/,
    ];
    const dry = await sim.shardmove(['run', plan, '--dry-run'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    for (const s of said) expect(flat(dry.stdout)).toMatch(s);

    const run = await sim.shardmove(['run', plan], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(await projectMoves(sim.url)).toEqual([1]);
    for (const s of said) expect(flat(run.stdout)).toMatch(s);
    const status = await sim.shardmove(['status', plan], { cwd: dir, env });
    for (const s of said) expect(status.stdout).toMatch(s);
  });

  it('reads a quoted all-digit namespace as a path, and refuses an unquoted one with the way to write it', async () => {
    const { sim, dir, env } = await changedSimulation('sel-digits', { projects: 0, snippets: 0, groups: 0 }, inventory);
    const plan = writePlan(dir, '{ namespaces: ["2024"], exclude: ["2024/q"] }');
    const run = await sim.shardmove(['run', plan], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(await projectMoves(sim.url)).toEqual([5]);

    const bare = writePlan(dir, '{ namespaces: [2024] }');
    const refused = await sim.shardmove(['validate', bare], { cwd: dir, env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /plan\.yaml:10:26.*a group whose path is all digits is written in quotes \("2024"\)/,
    );
  });
});
