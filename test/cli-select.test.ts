/**
 * Choosing what moves (`move.select`), end to end against a sandbox, judged from the
 * sandbox's own records (where every item is, which moves it made): namespaces with their
 * subgroups, projects by id, exclusions, project snippets with their project, group wikis with
 * their group, personal snippets with their author's namespace; a select file; names the instance
 * does not have refused with exit 2 at their file:line:col before any write; an exclusion of
 * everything and a selection of nothing moving nothing; the room judged on the selection only.
 *
 * On the in-process harness (./support/sim-harness.ts, changedSimulation of ./support/sim-speeda.ts):
 * the sandbox and every command in this process on one simulated clock, over real HTTP, so polls
 * and move durations cost no real seconds. Nothing here is about the process boundary (exit codes
 * are those `runCommandLine` maps, as the executable's).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Document } from 'yaml';
import { flat, fromDb, movesOf } from './support/cli-harness.js';
import { changedSimulation } from './support/sim-speeda.js';

/**
 * Everything on nfs-1 or nfs-2: groups acme, acme/team (a subgroup) and other; projects in each, in
 * alice's personal namespace and in `acmeish` (a name that starts like acme and is not in it);
 * project snippets of three projects, and personal snippets by alice and by bob.
 */
function inventory(seed: Document): void {
  const at = (storage: string) => ({ storage, size_mb: 10 });
  seed.setIn(
    ['inventory', 'groups'],
    [
      { id: 1, name: 'acme', ...at('nfs-1') },
      { id: 2, name: 'acme/team', ...at('nfs-1') },
      { id: 3, name: 'other', ...at('nfs-1') },
    ],
  );
  seed.setIn(
    ['inventory', 'projects'],
    [
      { id: 1, name: 'web', namespace: 'acme', ...at('nfs-1') },
      { id: 2, name: 'api', namespace: 'acme/team', ...at('nfs-1') },
      { id: 3, name: 'vault', namespace: 'acme/team', ...at('nfs-1') },
      // Large: a room check that counted it would refuse the run.
      { id: 4, name: 'site', namespace: 'other', storage: 'nfs-1', size_mb: 8000 },
      { id: 5, name: 'dots', namespace: 'alice', ...at('nfs-2') },
      { id: 6, name: 'tools', namespace: 'other', ...at('nfs-2') },
      { id: 7, name: 'x', namespace: 'acmeish', ...at('nfs-1') },
      // A name outside ASCII, sent URL-encoded to GET /namespaces/:id.
      { id: 8, name: 'crème', namespace: 'café', ...at('nfs-1') },
    ],
  );
  seed.setIn(
    ['inventory', 'snippets'],
    [
      { id: 1, name: 's-api', project: 2, ...at('nfs-1') },
      { id: 2, name: 's-vault', project: 3, ...at('nfs-1') },
      { id: 3, name: 's-site', project: 4, ...at('nfs-1') },
      { id: 4, name: 's-alice', author: 'alice', ...at('nfs-2') },
      { id: 5, name: 's-bob', author: 'bob', ...at('nfs-2') },
    ],
  );
}

function writePlan(dir: string, select: string[], extra: string[] = []): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: sel',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      'move:',
      '  from: [nfs-1, nfs-2]',
      '  to: cluster',
      '  select:',
      ...select.map((l) => `    ${l}`),
      'poll: { interval: 100ms }',
      'retry: { max_attempts: 2, backoff: 100ms }',
      ...extra,
      '',
    ].join('\n'),
  );
  return file;
}

/** Where each item is now, by the sandbox's own table: `project:1` -> storage. */
function storages(db: string): Map<string, string> {
  const rows = fromDb<{ kind: string; id: number; storage: string }>(db, 'SELECT kind, id, storage FROM items');
  return new Map(rows.map((r) => [`${r.kind}:${r.id}`, r.storage]));
}

/** The items the sandbox moved (by its move records), as `project:1`, sorted. */
async function moved(url: string): Promise<string[]> {
  const out: string[] = [];
  for (const kind of ['project', 'snippet', 'group'] as const)
    for (const m of await movesOf(url, kind)) out.push(`${kind}:${m.itemId}`);
  return out.sort();
}

describe('move.select', { timeout: 120_000 }, () => {
  it('moves what the namespaces and ids choose, with their snippets and wikis, and nothing excluded', async () => {
    const {
      sim: sandbox,
      dir,
      db,
      env,
    } = await changedSimulation('select', { projects: 0, snippets: 0, groups: 0 }, inventory);
    const plan = writePlan(
      dir,
      // GitLab's paths ignore case: ACME is acme.
      ['namespaces: [ACME, alice]', 'projects: [6]', 'exclude: [acme/team/vault]'],
      ['capacity:', '  storages:', '    cluster: {free: 2GiB}'],
    );

    const dry = await sandbox.shardmove(['run', plan, '--dry-run'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/projects on nfs-1: 2 of 6 \(4 stay: not selected\)/);
    expect(await moved(sandbox.url)).toEqual([]);

    const run = await sandbox.shardmove(['run', plan], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^DONE: moved 8 of 16 as planned: 8 not selected/);
    expect(run.stdout).toMatch(/Verification: passed/);
    expect(run.stdout).toMatch(/still there, as planned \(not selected\)/);

    const expected = [
      'group:1',
      'group:2',
      'project:1',
      'project:2',
      'project:5',
      'project:6',
      'snippet:1',
      'snippet:4',
    ];
    expect(await moved(sandbox.url)).toEqual(expected);
    const where = storages(db);
    for (const key of expected) expect(where.get(key), key).toBe('cluster');
    for (const key of [
      'group:3',
      'project:3',
      'project:4',
      'project:7',
      'project:8',
      'snippet:2',
      'snippet:3',
      'snippet:5',
    ])
      expect(where.get(key), key).not.toBe('cluster');

    const status = await sandbox.shardmove(['status', plan, '--json'], { cwd: dir, env });
    const s = JSON.parse(status.stdout) as { staying: number; notSelected: number; remaining: number };
    expect(s).toMatchObject({ staying: 8, notSelected: 8, remaining: 0 });
  });

  it('takes a select file of ids and paths, and exclude alone chooses everything else', async () => {
    const {
      sim: sandbox,
      dir,
      db,
      env,
    } = await changedSimulation('select-file', { projects: 0, snippets: 0, groups: 0 }, inventory);
    writeFileSync(join(dir, 'pilot.txt'), '# the pilot\n\nother\n  5  \ncafé\n');
    const run = await sandbox.shardmove(['run', writePlan(dir, ['file: pilot.txt', 'exclude: [6]'])], {
      cwd: dir,
      env,
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    // other (its wiki, its project 4 and that project's snippet), alice's project 5, café's 8; not 6, excluded.
    expect(await moved(sandbox.url)).toEqual(['group:3', 'project:4', 'project:5', 'project:8', 'snippet:3']);

    const {
      sim: sb2,
      dir: dir2,
      db: db2,
      env: env2,
    } = await changedSimulation('select-exclude', { projects: 0, snippets: 0, groups: 0 }, inventory);
    const only = await sb2.shardmove(['run', writePlan(dir2, ['exclude: [acme]'])], { cwd: dir2, env: env2 });
    expect(only.code, only.stdout + only.stderr).toBe(0);
    // Everything outside acme and its subgroups: acmeish is not in acme; personal snippets move.
    expect(await moved(sb2.url)).toEqual([
      'group:3',
      'project:4',
      'project:5',
      'project:6',
      'project:7',
      'project:8',
      'snippet:3',
      'snippet:4',
      'snippet:5',
    ]);
    expect(storages(db2).get('project:1')).toBe('nfs-1');
    expect(storages(db).get('project:6')).toBe('nfs-2');
  });

  it('refuses names the instance does not have with exit 2 at their file:line:col, before any write', async () => {
    const {
      sim: sandbox,
      dir,
      db,
      env,
    } = await changedSimulation('select-bad', { projects: 0, snippets: 0, groups: 0 }, inventory);
    writeFileSync(join(dir, 'pilot.txt'), 'other\n9007199254740991\nnowhere/at-all\n');
    const plan = writePlan(dir, [
      'namespaces: [acme, "grüppe", acme/web]',
      'projects: [99999, "acme/team", "acme/we\\"b"]',
      'exclude: [nobody]',
      'file: pilot.txt',
    ]);
    const weightsBefore = fromDb<{ value: string }>(db, "SELECT value FROM meta WHERE key = 'settings'");
    const run = await sandbox.shardmove(['run', plan], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(2);
    const out = flat(run.stdout);
    expect(out).toMatch(/plan\.yaml:10:24: no group or user has the full path "grüppe"/);
    expect(out).toMatch(
      /plan\.yaml:10:34: "acme\/web" is a project, not a namespace: list it under move\.select\.projects/,
    );
    expect(out).toMatch(/plan\.yaml:11:16: no project has id 99999/);
    expect(out).toMatch(
      /plan\.yaml:11:23: "acme\/team" is a namespace, not a project: list it under move\.select\.namespaces/,
    );
    expect(out).toMatch(/plan\.yaml:11:36: no project has the full path "acme\/we\\"b"/);
    expect(out).toMatch(/plan\.yaml:12:15: no project, group or user has the full path "nobody"/);
    expect(out).toMatch(/pilot\.txt:2: no project has id 9007199254740991/);
    expect(out).toMatch(/pilot\.txt:3: no project, group or user has the full path "nowhere\/at-all"/);
    expect(out).toMatch(/SHARDMOVE_SELECT_UNKNOWN/);
    expect(out).not.toMatch(/pilot\.txt:1:/);
    // Nothing written: no move, the weights as they were.
    expect(await moved(sandbox.url)).toEqual([]);
    expect(fromDb<{ value: string }>(db, "SELECT value FROM meta WHERE key = 'settings'")).toEqual(weightsBefore);

    // The same plan fixed runs (the refused attempt wrote nothing that fixes its plan).
    const fixed = writePlan(dir, ['namespaces: [other]']);
    const again = await sandbox.shardmove(['run', fixed], { cwd: dir, env });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(await moved(sandbox.url)).toEqual(['group:3', 'project:4', 'project:6', 'snippet:3']);
  });

  it('moves nothing when the exclusion takes everything or the selection finds nothing on the sources', async () => {
    const {
      sim: sandbox,
      dir,
      env,
    } = await changedSimulation('select-none', { projects: 0, snippets: 0, groups: 0 }, inventory);
    const everything = await sandbox.shardmove(
      ['run', writePlan(dir, ['exclude: [acme, other, alice, bob, acmeish, root, café]'])],
      {
        cwd: dir,
        env,
      },
    );
    expect(everything.code, everything.stdout + everything.stderr).toBe(0);
    expect(everything.stdout).toMatch(/^DONE: moved 0 of 16 as planned: 16 not selected/);
    expect(everything.stdout).toMatch(/Verification: passed/);
    // root owns no project and no personal snippet here: the namespace exists and selects nothing.
    const nothing = await sandbox.shardmove(
      ['run', writePlan(dir, ['namespaces: [root]']), '--state', join(dir, 'b.db')],
      {
        cwd: dir,
        env,
      },
    );
    expect(nothing.code, nothing.stdout + nothing.stderr).toBe(0);
    expect(nothing.stdout).toMatch(/^DONE: moved 0 of 16 as planned: 16 not selected/);
    expect(await moved(sandbox.url)).toEqual([]);
  });

  it('is refused with bulk mode by validate, with no network', async () => {
    const { sim: sandbox, dir } = await changedSimulation(
      'select-bulk',
      { projects: 0, snippets: 0, groups: 0 },
      inventory,
    );
    const plan = writePlan(dir, ['namespaces: [acme]'], []);
    writeFileSync(plan, readFileSync(plan, 'utf8').replace('  to: cluster', '  to: cluster\n  mode: bulk'));
    const v = await sandbox.shardmove(['validate', plan], {
      cwd: dir,
      env: { SHARDMOVE_URL: 'http://127.0.0.1:9', SHARDMOVE_TOKEN: 'x' },
    });
    expect(v.code).toBe(2);
    expect(v.stderr).toMatch(/plan\.yaml:\d+:\d+: move\.select: bulk mode moves everything on a source/);
  });
});
