/**
 * A reviewed item list applied exactly (`run --dry-run --items FILE`, then `run --only FILE`), end
 * to end against a sandbox process and judged from the sandbox's own records: only the listed items
 * move, a removed line's item stays, an item moved elsewhere or deleted since the review is reported
 * and nothing is moved in its place; a list edited by hand (a line added, a destination changed, a
 * line twice, a huge id), a directory, a list made under another plan are refused before anything is
 * read from the instance; a CSV list with quotes and a formula-like title round-trips; quarantined
 * items of a list are retried with --retry-quarantined, and nothing else moves.
 *
 * On the in-process harness (test/support/sim-harness.ts): every command through the executable's
 * command line against a sandbox on one simulated clock, so the moves, polls and backoffs cost no
 * real time. The subject is what the commands do with a list, not the process boundary; the
 * sandbox with broken items is the same instance started again on its address and database.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { Document } from 'yaml';
import { ADMIN_TOKEN, flat, fromDb, movesOf, sandboxEnv } from './support/cli-harness.js';
import { changedSimulation } from './support/sim-speeda.js';
import { advanceUntil, restartSandbox } from './support/sim-speedd.js';

/** acme's projects (one named with a quote and a comma), a snippet titled like a formula, acme's wiki; other's project. */
function inventory(seed: Document): void {
  const on = { storage: 'nfs-1', size_mb: 5 };
  seed.setIn(
    ['inventory', 'groups'],
    [
      { id: 1, name: 'acme', ...on },
      { id: 2, name: 'other', ...on },
    ],
  );
  seed.setIn(
    ['inventory', 'projects'],
    [1, 2, 3, 4, 5, 6]
      .map((id) => ({ id, name: id === 6 ? 'we"b, x' : `p${id}`, namespace: 'acme', ...on }))
      .concat([{ id: 7, name: 'site', namespace: 'other', ...on }]),
  );
  seed.setIn(['inventory', 'snippets'], [{ id: 1, name: '=HYPERLINK("http://x")', project: 1, ...on }]);
}

function writePlan(dir: string, concurrency = 10): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: only',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      'move:',
      '  from: [nfs-1]',
      '  to: cluster',
      `  concurrency: ${concurrency}`,
      '  select: { namespaces: [acme] }',
      'poll: { interval: 100ms }',
      'retry: { max_attempts: 1, backoff: 100ms }',
      '',
    ].join('\n'),
  );
  return file;
}

async function ourMoves(url: string): Promise<string[]> {
  const out: string[] = [];
  for (const kind of ['project', 'snippet', 'group'] as const)
    for (const m of await movesOf(url, kind)) out.push(`${kind}:${m.itemId}`);
  return out.sort();
}

function storageOf(db: string, kind: string, id: number): string | undefined {
  return fromDb<{ storage: string }>(db, 'SELECT storage FROM items WHERE kind = ? AND id = ?', kind, id)[0]?.storage;
}

const listed = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

describe('run --only: a reviewed item list', { timeout: 180_000 }, () => {
  it('moves exactly the listed items, reports those moved or deleted since, and refuses a plain run on its checkpoint', async () => {
    const { sim, dir, db, env } = await changedSimulation('only', { projects: 0, snippets: 0, groups: 0 }, inventory);
    const runCli = sim.shardmove;
    const plan = writePlan(dir);
    const dry = await runCli(['run', plan, '--dry-run', '--items', 'list.jsonl'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/Item list: 8 item\(s\) the run would move, written to list\.jsonl/);
    const lines = listed(join(dir, 'list.jsonl'));
    expect(lines).toHaveLength(9);
    expect(JSON.parse(lines[0]!)).toMatchObject({ shardmove_items: 1, plan: 'only', items: 8 });
    expect(lines.some((l) => l.includes('"id":7'))).toBe(false);

    // Reviewed: project 2 is taken out. Since the review: project 3 moved by someone else, project 4 deleted.
    writeFileSync(join(dir, 'list.jsonl'), `${lines.filter((l) => !/"kind":"projects","id":2,/.test(l)).join('\n')}\n`);
    const post = await fetch(`${sim.url}/api/v4/projects/3/repository_storage_moves`, {
      method: 'POST',
      headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ destination_storage_name: 'default' }),
    });
    expect(post.status).toBe(201);
    await advanceUntil(sim, () => storageOf(db, 'project', 3) === 'default');
    expect(storageOf(db, 'project', 3)).toBe('default');
    const raw = new Database(db);
    raw.prepare("DELETE FROM items WHERE kind = 'project' AND id = 4").run();
    raw.close();

    const run = await runCli(['run', plan, '--only', 'list.jsonl'], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Verification: passed/);
    // The headline, its wrapped rest joined (the summary wraps at 80 columns in a pipe).
    expect(flat(run.stdout)).toMatch(
      /^DONE: \d+ of the \d+ items of the list list\.jsonl moved \(2 no longer where it says\) and verified\b/,
    );
    expect(flat(run.stdout)).toMatch(
      /Not moved: no longer where the list says \(2\); nothing was moved in their place:/,
    );
    expect(flat(run.stdout)).toMatch(
      /projects 3 \(acme\/p3\) listed on nfs-1: no longer on nfs-1 as the list says: now on default/,
    );
    expect(flat(run.stdout)).toMatch(/projects 4 \(acme\/p4\) listed on nfs-1: no longer on the instance \(deleted\)/);

    // The sandbox's records: the listed items moved once each, the foreign move the only one of 3.
    expect(await ourMoves(sim.url)).toEqual([
      'group:1',
      'project:1',
      'project:3',
      'project:5',
      'project:6',
      'snippet:1',
    ]);
    for (const id of [1, 5, 6]) expect(storageOf(db, 'project', id)).toBe('cluster');
    expect(storageOf(db, 'project', 2)).toBe('nfs-1');
    expect(storageOf(db, 'project', 3)).toBe('default');
    expect(storageOf(db, 'project', 7)).toBe('nfs-1');
    expect(storageOf(db, 'group', 2)).toBe('nfs-1');

    const status = await runCli(['status', plan, '--json', '--items'], { cwd: dir, env });
    const items = (JSON.parse(status.stdout) as { items: { kind: string; id: number; state: string }[] }).items;
    expect(items.filter((i) => i.state === 'left').map((i) => i.id)).toEqual([3, 4]);
    expect(items).toHaveLength(7);
    const report = await runCli(['report', plan, '--json', '--items'], { cwd: dir, env });
    expect((JSON.parse(report.stdout) as { items: unknown[] }).items).toEqual(items);
    expect(JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir, env })).stdout)).not.toHaveProperty(
      'items',
    );
    const noJson = await runCli(['status', plan, '--items'], { cwd: dir, env });
    expect(noJson.code).toBe(2);
    expect(noJson.stderr).toMatch(/--items lists every item in the JSON output: add --json/);

    const plain = await runCli(['run', plan], { cwd: dir, env });
    expect(plain.code, plain.stdout + plain.stderr).toBe(4);
    expect(plain.stderr).toMatch(
      /holds the run of the reviewed list list\.jsonl .*run it again with --only list\.jsonl/,
    );
    expect((await ourMoves(sim.url)).length).toBe(6);
  });

  it('refuses a list edited by hand, a directory and flags that cannot go together, before reading the instance', async () => {
    const { sim, dir, env } = await changedSimulation('only-bad', { projects: 0, snippets: 0, groups: 0 }, inventory);
    const runCli = sim.shardmove;
    const plan = writePlan(dir);
    const dry = await runCli(['run', plan, '--dry-run', '--items', 'list.jsonl'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const lines = listed(join(dir, 'list.jsonl'));
    const p5 = lines.findIndex((l) => /"kind":"projects","id":5,/.test(l));
    const variants: [string, string[], RegExp][] = [
      [
        'added.jsonl',
        [...lines, lines[p5]!.replace('"id":5,', '"id":7,').replace('acme/p5', 'other/site')],
        /added\.jsonl:10: projects 7: its check does not match .*typed by hand/,
      ],
      [
        'to-source.jsonl',
        lines.map((l, i) => (i === p5 ? l.replace('"destination":"cluster"', '"destination":"nfs-1"') : l)),
        new RegExp(`to-source\\.jsonl:${p5 + 1}: projects 5: its check does not match`),
      ],
      [
        'twice.jsonl',
        [...lines, lines[p5]!],
        new RegExp(`twice\\.jsonl:10: projects 5 is listed twice \\(first on line ${p5 + 1}\\)`),
      ],
      [
        'huge.jsonl',
        [...lines.slice(0, p5), lines[p5]!.replace('"id":5,', '"id":99999999999999999999,'), ...lines.slice(p5 + 1)],
        new RegExp(`huge\\.jsonl:${p5 + 1}: id must be a whole number`),
      ],
      ['cut.jsonl', [...lines.slice(0, 3), lines[3]!.slice(0, 20)], /cut\.jsonl:4: not a JSON object/],
      ['empty.jsonl', [lines[0]!], /empty\.jsonl: the list names no item/],
    ];
    for (const [name, text, expected] of variants) {
      writeFileSync(join(dir, name), `${text.join('\n')}\n`);
      const r = await runCli(['run', plan, '--only', name], { cwd: dir, env });
      expect(r.code, `${name}: ${r.stderr}`).toBe(2);
      expect(r.stderr, name).toMatch(expected);
    }
    mkdirSync(join(dir, 'adir.jsonl'));
    const d = await runCli(['run', plan, '--only', 'adir.jsonl'], { cwd: dir, env });
    expect(d.code).toBe(2);
    expect(d.stderr).toMatch(/adir\.jsonl: a directory, not a file/);
    const missing = await runCli(['run', plan, '--only', 'nope.jsonl'], { cwd: dir, env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/nope\.jsonl: no such file/);

    const both = await runCli(['run', plan, '--only', 'list.jsonl', '--dry-run'], { cwd: dir, env });
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--only applies a reviewed list; a --dry-run makes one/);
    const real = await runCli(['run', plan, '--items', 'x.jsonl'], { cwd: dir, env });
    expect(real.code).toBe(2);
    expect(real.stderr).toMatch(/--items FILE writes the list a dry run would move: add --dry-run/);
    const odd = await runCli(['run', plan, '--dry-run', '--items', 'list.txt'], { cwd: dir, env });
    expect(odd.code).toBe(2);
    expect(odd.stderr).toMatch(/name the format: a \.jsonl or \.csv file, or --items-format jsonl\|csv/);
    const intoDir = await runCli(['run', plan, '--dry-run', '--items', 'adir.jsonl'], { cwd: dir, env });
    expect(intoDir.code).toBe(2);
    expect(intoDir.stderr).toMatch(/adir\.jsonl is a directory; name a file/);

    const overPlan = await runCli(['run', plan, '--dry-run', '--items', 'plan.yaml', '--items-format', 'jsonl'], {
      cwd: dir,
      env,
    });
    expect(overPlan.code).toBe(2);
    expect(overPlan.stderr).toMatch(/--items plan\.yaml is the plan/);

    // Nothing of all that moved anything, nor wrote a real run's checkpoint.
    expect(await ourMoves(sim.url)).toEqual([]);
    expect(readFileSync(plan, 'utf8')).toMatch(/name: only/);
  });

  it('refuses a list made under another plan with exit 4, naming both hashes and what changed', async () => {
    const { sim, dir, env } = await changedSimulation('only-plan', { projects: 0, snippets: 0, groups: 0 }, inventory);
    const runCli = sim.shardmove;
    const dry = await runCli(['run', writePlan(dir), '--dry-run', '--items', 'list.jsonl'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const made = (JSON.parse(listed(join(dir, 'list.jsonl'))[0]!) as { plan_hash: string }).plan_hash;
    const plan = writePlan(dir, 4);
    const run = await runCli(['run', plan, '--only', 'list.jsonl'], { cwd: dir, env });
    expect(run.code, run.stderr).toBe(4);
    expect(run.stderr).toContain(`was made under plan hash ${made}`);
    expect(run.stderr).toMatch(/hashes [0-9a-f]{64} now; changed since:\n\s+move\.concurrency: 10 -> 4/);
    expect(run.stderr).toMatch(/SHARDMOVE_ITEMS_OTHER_PLAN|make it again with `shardmove run/);
    expect(await ourMoves(sim.url)).toEqual([]);
  });

  it('round-trips a CSV list with quotes, commas and a formula-like title', async () => {
    const { sim, dir, db, env } = await changedSimulation(
      'only-csv',
      { projects: 0, snippets: 0, groups: 0 },
      inventory,
    );
    const runCli = sim.shardmove;
    const plan = writePlan(dir);
    const dry = await runCli(['run', plan, '--dry-run', '--items', 'list.csv'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const text = readFileSync(join(dir, 'list.csv'), 'utf8');
    expect(text.split('\r\n')[0]).toBe('kind,id,path,size_bytes,source,destination,plan_hash,check');
    expect(text).toContain('projects,6,"acme/we""b, x",');
    expect(text).toContain(`snippets,1,"'=HYPERLINK(""http://x"")",`);
    const run = await runCli(['run', plan, '--only', 'list.csv'], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout.split('\n')[0]).toBe('DONE: every item of the list list.csv moved and verified');
    // status and the HTML report say the same of the list's run.
    const status = await runCli(['status', plan, '--json'], { cwd: dir, env });
    expect(JSON.parse(status.stdout).listOutcome).toBe('every item of the list list.csv moved');
    const html = await runCli(['report', plan, '--html', 'r.html'], { cwd: dir, env });
    expect(html.code, html.stderr).toBe(0);
    expect(readFileSync(join(dir, 'r.html'), 'utf8')).toContain(
      'Done: every item of the list list.csv moved and verified',
    );
    expect(await ourMoves(sim.url)).toHaveLength(8);
    expect(storageOf(db, 'project', 6)).toBe('cluster');
    expect(storageOf(db, 'snippet', 1)).toBe('cluster');
  });

  it('applies a CSV list saved again by a spreadsheet or a Windows tool: a BOM, CR CR LF line ends, empty rows', async () => {
    const { sim, dir, db, env } = await changedSimulation(
      'only-crlf',
      { projects: 0, snippets: 0, groups: 0 },
      inventory,
    );
    const runCli = sim.shardmove;
    const plan = writePlan(dir);
    const dry = await runCli(['run', plan, '--dry-run', '--items', 'list.csv'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const rows = readFileSync(join(dir, 'list.csv'), 'utf8').trimEnd().split('\r\n');
    // The review keeps two items: project 6 (the quoted path with a comma) and snippet 1.
    const kept = rows.filter((r, i) => i === 0 || r.startsWith('projects,6,') || r.startsWith('snippets,1,'));
    expect(kept).toHaveLength(3);
    writeFileSync(join(dir, 'saved.csv'), `\uFEFF${kept.join('\r\r\n')}\r\r\n,,,,,,,\r\r\n`);
    const run = await runCli(['run', plan, '--only', 'saved.csv'], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout.split('\n')[0]).toBe('DONE: every item of the list saved.csv moved and verified');
    expect(await ourMoves(sim.url)).toHaveLength(2);
    expect(storageOf(db, 'project', 6)).toBe('cluster');
    expect(storageOf(db, 'snippet', 1)).toBe('cluster');
  });

  it('retries the quarantined items of a list with --retry-quarantined, and moves nothing else', async () => {
    const { sim, dir, db, env } = await changedSimulation(
      'only-retry',
      { projects: 0, snippets: 0, groups: 0 },
      inventory,
    );
    const runCli = sim.shardmove;
    const plan = writePlan(dir);
    // The same database and address, with project 5's moves failing.
    const seed = join(dir, 'seed.yaml');
    const options = { seed, db, moveDurationMs: 20, workers: 20 };
    const broken = await restartSandbox(sim, sim.sandbox, { ...options, faults: { brokenItems: ['project:5'] } });
    expect(sandboxEnv(broken.url)).toEqual(env);
    expect((await runCli(['run', plan, '--dry-run', '--items', 'list.jsonl'], { cwd: dir, env })).code).toBe(0);
    writeFileSync(
      join(dir, 'list.jsonl'),
      `${listed(join(dir, 'list.jsonl'))
        .filter((l) => !/"kind":"projects","id":2,/.test(l))
        .join('\n')}\n`,
    );
    const first = await runCli(['run', plan, '--only', 'list.jsonl'], { cwd: dir, env });
    expect(first.code, first.stdout + first.stderr).toBe(3);
    expect(storageOf(db, 'project', 5)).toBe('nfs-1');
    const before = (await ourMoves(broken.url)).length;

    const fixed = await restartSandbox(sim, broken, options);
    const again = await runCli(['run', plan, '--only', 'list.jsonl', '--retry-quarantined'], {
      cwd: dir,
      env: sandboxEnv(fixed.url),
    });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const after = await ourMoves(fixed.url);
    expect(after.length).toBe(before + 1);
    expect(after.filter((m) => m === 'project:5')).toHaveLength(2);
    expect(storageOf(db, 'project', 5)).toBe('cluster');
    expect(storageOf(db, 'project', 2)).toBe('nfs-1');
    expect(storageOf(db, 'project', 7)).toBe('nfs-1');
  });
});
