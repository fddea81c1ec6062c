/**
 * What commands write, end to end through the CLI: a dry run run again never replaces the list an
 * operator reviewed (without --force); no output (--items, --events, --metrics-file, report --html,
 * twin --out, revert's) ever replaces or writes through anything but a regular file: FIFOs,
 * symlinks (to a file, dangling, named with a space and a leading dash) and device nodes (made in a
 * temporary folder by the test, as root; never /dev's own) are refused before any work and stay as
 * they were; two live runs given one --metrics-file: the second is refused, naming the first.
 *
 * The reviewed list on the in-process harness (test/support/sim-harness.ts: a sandbox on a
 * simulated clock); the refusals of outputs through the executable's command line in this process
 * (`commandHere`: nothing they test is a process of its own, and no instance is contacted). The two
 * live runs stay separate processes: the second must name the first by its pid.
 */
import { execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { moveTotal, runCli, sandboxEnv, tempDir, writePlan } from './support/cli-harness.js';
import { startHeldSandbox } from './support/held-sandbox.js';
import { commandHere, seededSimulation } from './support/sim-speeda.js';
import { until } from './support/until.js';

const isRoot = process.getuid?.() === 0;

const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

describe('a reviewed list is never replaced by a dry run run again', { timeout: 120_000 }, () => {
  it('refuses to overwrite it without --force, before any work; --only then moves what the review kept', async () => {
    const { dir, env, sim } = await seededSimulation('reviewed', { projects: 10, snippets: 0, groups: 0 });
    const { sandbox } = sim;
    const runCli = sim.shardmove;
    const plan = writePlan(dir, { from: ['nfs-1', 'nfs-2', 'default'] });
    mkdirSync(join(dir, 'p'));
    const list = join(dir, 'p', 'list.jsonl');
    const dry = ['run', plan, '--dry-run', '--items', 'p/list.jsonl'];
    const first = await runCli(dry, { cwd: dir, env });
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const all = lines(list);
    expect(all.length).toBeGreaterThan(2);
    // The review keeps one item.
    writeFileSync(list, `${all.slice(0, 2).join('\n')}\n`);
    const reviewed = readFileSync(list, 'utf8');

    const again = await runCli(dry, { cwd: dir, env });
    expect(again.code, again.stdout + again.stderr).toBe(2);
    expect(again.stderr).toContain(
      'run: --items p/list.jsonl exists (it may be a list you reviewed); pass --force to replace it, or name another file',
    );
    expect(again.stdout).toBe('');
    expect(readFileSync(list, 'utf8')).toBe(reviewed);
    expect((await runCli(['run', plan, '--force'], { cwd: dir, env })).stderr).toMatch(
      /--force replaces a list that exists: it goes with --dry-run --items FILE/,
    );

    const only = await runCli(['run', plan, '--only', 'p/list.jsonl'], { cwd: dir, env });
    expect(only.code, only.stdout + only.stderr).toBe(0);
    expect(await moveTotal(sandbox.url)).toBe(1);

    // --force replaces it: what a new review starts from.
    const forced = await runCli([...dry, '--force', '--state', join(dir, 'again.db')], { cwd: dir, env });
    expect(forced.code, forced.stdout + forced.stderr).toBe(0);
    expect(lines(list).length).toBe(all.length - 1);
  });
});

describe('outputs are regular files, never anything else at their name', { timeout: 300_000 }, () => {
  /** A folder with a plan (its instance is never contacted) and things that are not regular files. */
  function setup() {
    const dir = tempDir('outputs');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const plan = writePlan(dir);
    const precious = join(dir, 'precious.txt');
    writeFileSync(precious, 'precious\n');
    const fifo = (name: string) => {
      execFileSync('mkfifo', [join(dir, name)]);
      return name;
    };
    const link = (name: string, to = precious) => {
      symlinkSync(to, join(dir, name));
      return name;
    };
    const device = (name: string) => {
      // The same device as /dev/full, but this test's own node: a failure can only replace it.
      execFileSync('mknod', [join(dir, name), 'c', '1', '7']);
      return name;
    };
    const env = { SHARDMOVE_URL: 'http://127.0.0.1:9', SHARDMOVE_TOKEN: 'glpat-never-used-000000' };
    const cli = (...args: string[]) => commandHere(args, { cwd: dir, env: { ...process.env, ...env } });
    return { dir, plan, precious, fifo, link, device, cli };
  }

  it('refuses a FIFO, a symlink to a file, a dangling symlink and a device for every output, exit 2, each left as it was', async () => {
    const { dir, plan, precious, fifo, link, device, cli } = setup();
    const cases: { args: string[]; path: string; flag: string }[] = [];
    const at = (flag: string, path: string, ...args: string[]) => cases.push({ args, path, flag });
    at('--items', fifo('l.jsonl'), 'run', plan, '--dry-run', '--items', 'l.jsonl');
    at('--items', link('-a list.jsonl'), 'run', plan, '--dry-run', '--items=-a list.jsonl');
    at('--metrics-file', fifo('m.prom'), 'run', plan, '--metrics-file', 'm.prom');
    at('--metrics-file', link('dangling.prom', join(dir, 'nowhere')), 'run', plan, '--metrics-file', 'dangling.prom');
    at('--metrics-file', link('r.prom'), 'revert', plan, '--metrics-file', 'r.prom');
    at('--events', fifo('e.jsonl'), 'run', plan, '--events', 'e.jsonl');
    at('--events', link('e2.jsonl'), 'revert', plan, '--events', 'e2.jsonl');
    at('--html', fifo('r.html'), 'report', plan, '--html', 'r.html');
    at('--html', link('-r 2.html'), 'report', plan, '--html=-r 2.html');
    at('--out', link('seed.yaml'), 'twin', plan, '--out', 'seed.yaml', '--force');
    // --force replaces a list that is there, never anything but a regular file.
    at('--items', fifo('forced.jsonl'), 'run', plan, '--dry-run', '--items', 'forced.jsonl', '--force');
    if (isRoot) {
      at('--items', device('full.jsonl'), 'run', plan, '--dry-run', '--items', 'full.jsonl', '--force');
      at('--html', device('full.html'), 'report', plan, '--html', 'full.html');
      at('--metrics-file', device('full.prom'), 'run', plan, '--metrics-file', 'full.prom');
    }
    const before = readdirSync(dir).sort();
    for (const c of cases) {
      const r = await cli(...c.args);
      expect(r.code, `${c.args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(`${c.flag} ${c.path.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')} is a (FIFO|symlink|character device)`),
      );
      const st = lstatSync(join(dir, c.path));
      expect(st.isFile(), c.path).toBe(false);
    }
    expect(readFileSync(precious, 'utf8')).toBe('precious\n');
    // Nothing else written: no checkpoint, no temporary file, no owner record.
    expect(readdirSync(dir).sort()).toEqual(before);
  });

  it("refuses a run's log that is a symlink or a FIFO at its name beside the checkpoint, before creating the checkpoint", async () => {
    const { dir, plan, fifo, link, precious, cli } = setup();
    for (const [name, what] of [
      [link('-l it.log'), 'a symlink'],
      [fifo('f.log'), 'a FIFO'],
    ] as const) {
      const state = name.replace(/\.log$/, '.db');
      const r = await cli('run', plan, '--dry-run', `--state=${state}`);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stderr).toContain(`the run's log ${join(dir, name)} is ${what}`);
      expect(existsSync(join(dir, state))).toBe(false);
      expect(lstatSync(join(dir, name)).isFile()).toBe(false);
    }
    expect(readFileSync(precious, 'utf8')).toBe('precious\n');
  });

  it('refuses sandbox --db at a symlink, a FIFO or a symlinked -wal file, exit 2, each left as it was', async () => {
    const { dir, fifo, link, precious, cli } = setup();
    link('-w s.db-wal');
    for (const [db, shown] of [
      [link('l.db'), 'l.db is a symlink'],
      [fifo('f.db'), 'f.db is a FIFO'],
      ['-w s.db', '-w s.db-wal is a symlink'],
    ] as const) {
      const r = await cli('sandbox', '--port', '0', `--db=${db}`);
      expect(r.code, r.stdout + r.stderr).toBe(2);
      expect(r.stderr).toContain(`sandbox --db ${db}: ${join(dir, shown)}`);
      expect(r.stdout).toBe('');
    }
    expect(readFileSync(precious, 'utf8')).toBe('precious\n');
  });

  it("refuses twin's items file when it is a symlink, even with --force; and - where an output is a file", async () => {
    const { dir, plan, link, cli } = setup();
    link('seed.items.jsonl');
    const twin = await cli('twin', plan, '--out', 'seed.yaml', '--force');
    expect(twin.code).toBe(2);
    expect(twin.stderr).toMatch(/twin: the items file of --out .*seed\.items\.jsonl is a symlink/);
    expect(lstatSync(join(dir, 'seed.items.jsonl')).isSymbolicLink()).toBe(true);
    for (const args of [
      ['run', plan, '--dry-run', '--items', '-', '--items-format', 'jsonl'],
      ['run', plan, '--metrics-file', '-'],
      ['twin', plan, '--out', '-'],
    ]) {
      const r = await cli(...args);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/names a file; it cannot be - \(standard output\)/);
    }
    const both = await cli('report', plan, '--html', '-', '--json');
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--html - and --json both write to standard output/);
    expect(existsSync(join(dir, '-'))).toBe(false);
  });
});

describe('two live runs given one --metrics-file', { timeout: 120_000 }, () => {
  it('refuses the second at its start, naming the first; the first keeps the file, and frees it at its end', async () => {
    const dir = tempDir('metrics-owner');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const held = await startHeldSandbox(dir, { projects: 6, snippets: 0, groups: 0 });
    const env = sandboxEnv(held.url);
    const plan = writePlan(dir, { concurrency: 2 });
    const metrics = join(dir, 'textfile', 'shardmove.prom');
    let first: ChildProcess | undefined;
    const run = runCli(['run', plan, '--metrics-file', metrics], {
      cwd: dir,
      env,
      onStart: (c) => (first = c),
    });
    // The first run has moves in flight, held by the sandbox, and has written its metrics.
    await until(
      async () => (await held.moves()).length > 0 && existsSync(metrics),
      (x) => x,
      30_000,
    );
    const written = readFileSync(metrics, 'utf8');
    expect(written).toMatch(/plan="it"/);

    const second = await runCli(['run', plan, '--dry-run', '--metrics-file', metrics], { cwd: dir, env });
    expect(second.code, second.stdout + second.stderr).toBe(4);
    expect(second.stderr).toContain(
      `--metrics-file ${metrics} is kept by another run: plan it (plan file ${plan}, checkpoint ${join(dir, 'state', 'it.db')}), pid ${first!.pid}`,
    );
    expect(second.stderr).not.toMatch(/internal error/);
    // The second run wrote nothing there: no series of its own (a dry run's are plan="it.dry-run").
    expect(readFileSync(metrics, 'utf8')).not.toMatch(/it\.dry-run/);

    const done = await held.pumpUntil(run);
    expect(done.code, done.stdout + done.stderr).toBe(0);
    expect(readdirSync(join(dir, 'textfile'))).toEqual(['shardmove.prom']);
    const later = await runCli(['run', plan, '--dry-run', '--metrics-file', metrics], { cwd: dir, env });
    expect(later.code, later.stdout + later.stderr).toBe(0);
    expect(readFileSync(metrics, 'utf8')).toMatch(/plan="it\.dry-run"/);
  });
});
