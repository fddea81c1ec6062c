/**
 * A checkpoint that is no checkpoint (a text file, a database cut in half, a
 * directory), or one the command cannot write, is refused by every command with one line naming the
 * file and the problem and a documented exit code, never a stack trace; the file is left exactly as
 * it was and nothing is created beside it. `status` and `report` read where the directory is not
 * writable. The CLI runs through its command line in this process (runCommandLine), and as a process
 * of its own where it runs as another user.
 *
 * Permissions: as root chmod stops nothing, so there the CLI runs as uid/gid 65534 (nobody) over
 * files that root owns; otherwise chmod takes the write bits away from this user. Both take the same
 * chmods, so the same test runs either way.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  linkSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { CopyCheckpoint } from '../src/store/copy-checkpoint.js';
import type { RunMode } from '../src/store/types.js';
import type { CliResult } from './support/cli-harness.js';
import { BIN, tempDir } from './support/cli-harness.js';
import { eventLogPage, overwritePage } from './support/damaged-checkpoint.js';
import { commandHere } from './support/sim-speeda.js';

const ROOT_USER = process.getuid?.() === 0;
const NOBODY = { uid: 65534, gid: 65534 };
/** As root, whether this system lets a child process run as another user (a user namespace may not). */
const CAN_SWITCH = !ROOT_USER || spawnSync(process.execPath, ['-e', ''], NOBODY).status === 0;
const NO_SWITCH =
  'running as root, and a child process cannot switch to uid 65534 here: chmod alone would not stop root';
if (!CAN_SWITCH) console.warn(`cli-bad-checkpoint.test.ts: permission tests skipped: ${NO_SWITCH}`);

/** The plan's instance is never reached: every command stops at the checkpoint. */
const ENV = { SHARDMOVE_URL: 'http://127.0.0.1:9', SHARDMOVE_TOKEN: 'glpat-not-used-0000000000' };

let base: string;
let plan: string;
let copyPlan: string;

/**
 * One command line: as another user (`asOther`) the compiled CLI as a process of uid 65534 (a
 * process's own identity, which only a process has); otherwise in this process through the same
 * command line (cli/main.ts runCommandLine, ./support/sim-speeda.ts commandHere) over the same
 * files, since what these show (one line, its exit code, the files left as they were) is not a process's.
 */
function cli(args: string[], opts: { asOther?: boolean } = {}): Promise<CliResult> {
  if (!opts.asOther) return commandHere(args, { cwd: base, env: { ...process.env, ...ENV } });
  return cliProcess(args, opts);
}

/** The compiled CLI as a process, as uid/gid 65534 when `asOther` and this test runs as root. */
function cliProcess(args: string[], opts: { asOther?: boolean } = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: base,
    env: { ...process.env, ...ENV },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(opts.asOther && ROOT_USER ? NOBODY : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += String(c)));
  child.stderr.on('data', (c) => (stderr += String(c)));
  return new Promise((done) => child.on('exit', (code) => done({ code, stdout, stderr })));
}

/** A real checkpoint with a run and enough events to span many pages; `mode`: the kind of run it is. */
/**
 * The test's plan under another name, beside it: a checkpoint of plan `name` is that plan's, and
 * every command refuses it under another plan.
 */
function planNamed(name: string): string {
  const file = join(base, `${name}.yaml`);
  writeFileSync(file, readFileSync(plan, 'utf8').replace(/^name: bad$/m, `name: ${name}`));
  openUp(file);
  return file;
}

function writeCheckpoint(file: string, planName = 'bad', mode?: RunMode): void {
  const cp = openCheckpoint(file);
  if (mode) cp.claimMode(mode);
  cp.saveRun({ planName, planHash: 'h', machineVersion: 1, snapshot: { value: 'drain' } });
  cp.batch(() => {
    for (let i = 0; i < 500; i++) cp.appendEvent('run.restart', { reason: `${i} ${'x'.repeat(200)}` }, i);
  });
  cp.close();
}

/** Every entry under `dir` with a digest of its content: what "nothing changed" is checked against. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    const st = lstatSync(p);
    out[name] = st.isDirectory()
      ? `dir:${JSON.stringify(snapshot(p))}`
      : `${st.mode.toString(8)}:${createHash('sha256').update(readFileSync(p)).digest('hex')}`;
  }
  return out;
}

/** Makes `path` readable (and traversable) by uid 65534 when the test runs as root. */
function openUp(path: string): void {
  chmodSync(path, statSync(path).isDirectory() ? 0o755 : 0o644);
}

beforeAll(() => {
  // Short: main.ts masks token-looking text in messages, and "shardmove-bad-checkpoint-aB3xYz"
  // (a word, a dash, 20+ mixed-case characters with a digit) looks like a custom-prefix token.
  base = tempDir('badcp');
  openUp(base);
  plan = join(base, 'plan.yaml');
  writeFileSync(
    plan,
    [
      'version: 1',
      'name: bad',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      'move:',
      '  from: [nfs-1]',
      '  to: cluster',
      '  kinds: [projects]',
      '',
    ].join('\n'),
  );
  openUp(plan);
  mkdirSync(join(base, 'source'));
  copyPlan = join(base, 'copy.yaml');
  writeFileSync(
    copyPlan,
    `version: 1\nname: cp\ncopy:\n  method: rsync\n  source: { path: ${join(base, 'source')} }\n  target: { path: ${join(base, 'target')} }\n`,
  );
  openUp(copyPlan);
});

afterAll(() => {
  // Give the write bits back, or a non-root user could not remove what a test made read-only.
  const walk = (p: string) => {
    if (!existsSync(p) || lstatSync(p).isSymbolicLink()) return;
    chmodSync(p, statSync(p).isDirectory() ? 0o755 : 0o644);
    if (statSync(p).isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
  };
  walk(base);
  rmSync(base, { recursive: true, force: true });
});

/** SQLite's page size, as the checkpoints are written (the default). */

/** The ways a file at the checkpoint's path is no checkpoint, each in a directory of its own. */
const BAD: Record<string, { make: (file: string) => void; problem: (what: string) => string | RegExp }> = {
  'a text file': {
    make: (file: string) => writeFileSync(file, 'hello, this is not a database\n'),
    problem: (what: string) => `is not a ${what}: file is not a database`,
  },
  'a database cut in half': {
    make: (file: string) => {
      writeCheckpoint(file);
      truncateSync(file, Math.floor(statSync(file).size / 2));
    },
    problem: (what: string) =>
      `is not a usable ${what}: database disk image is malformed (truncated or damaged; it was left as it is: restore it from a copy, or move it aside)`,
  },
  'a directory': {
    make: (file: string) => mkdirSync(file),
    problem: (what: string) => `is not a ${what}: it is a directory`,
  },
  // The header intact, the length right: SQLite opens it and finds the page only when a query reads it.
  'a database with one page overwritten inside': {
    make: (file: string) => {
      writeCheckpoint(file);
      overwritePage(file, eventLogPage(file));
    },
    // quick_check names the page, or SQLite gives up on it as malformed: either way, one line.
    problem: (what: string) =>
      new RegExp(
        `is not a usable ${what}: (SQLite's quick_check finds it damaged \\(Tree \\d+ page \\d+: [^\\n]+\\); it was left as it is|database disk image is malformed \\(truncated or damaged; it was left as it is): restore it from a copy, or move it aside\\)?$`,
      ),
  },
};

const MOVE_COMMANDS = [
  ['run'],
  ['run', '--dry-run'],
  ['status'],
  ['report', '--json'],
  ['unlock', '--yes'],
  ['control'],
  ['control', '--pause'],
  ['weights', 'restore'],
  ['weights', 'restore', '--yes'],
  ['twin', '--out', 'twin-of-bad.yaml'],
];

/** `line` is the whole message after `shardmove: `, or a pattern for the end of it (after the file). */
function expectOneClearLine(r: CliResult, label: string, line: string | RegExp): void {
  expect(r.stderr, label).not.toContain('internal error');
  expect(r.stderr, label).not.toMatch(/\n\s+at /);
  if (typeof line === 'string') expect(r.stderr, label).toBe(`shardmove: ${line}\n`);
  else {
    expect(r.stderr.split('\n'), label).toHaveLength(2);
    expect(r.stderr.replace(/\n$/, ''), label).toMatch(line);
  }
  expect(r.code, label).toBe(1);
}

/** The expected message for `file`: the text, or a pattern whose start is the file's name. */
const about = (file: string, problem: string | RegExp): string | RegExp =>
  typeof problem === 'string'
    ? `${file} ${problem}`
    : new RegExp(`^shardmove: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} ${problem.source}`);

describe(
  'a checkpoint that is no checkpoint: one clear line, exit 1, the file left as it was',
  { timeout: 120_000 },
  () => {
    for (const [kind, bad] of Object.entries(BAD)) {
      it(`${kind}: run, status, report, unlock, control, weights restore and copy refuse it and change nothing`, async () => {
        const dir = join(base, kind.replace(/\W+/g, '-'));
        mkdirSync(dir);
        const file = join(dir, 'state.db');
        bad.make(file);
        const before = snapshot(dir);
        // A few at a time: the machines running this suite are shared.
        for (const args of MOVE_COMMANDS) {
          const cmd =
            args[0] === 'weights' ? [...args.slice(0, 2), plan, ...args.slice(2)] : [args[0]!, plan, ...args.slice(1)];
          const r = await cli([...cmd, '--state', file]);
          expectOneClearLine(r, args.join(' '), about(file, bad.problem('shardmove checkpoint')));
          expect(snapshot(dir), `${args.join(' ')} changed ${dir}`).toEqual(before);
        }
        expect(existsSync(join(base, 'twin-of-bad.yaml'))).toBe(false);
        // One after the other: two processes refusing the same file at once can race on the empty -wal
        // SQLite creates (each takes it for the other's), and leave it; harmless, but not "as it was".
        const copied = await cli(['copy', copyPlan, '--state', file]);
        const copyStatus = await cli(['status', copyPlan, '--state', file]);
        expectOneClearLine(copied, 'copy', about(file, bad.problem('shardmove copy checkpoint')));
        expectOneClearLine(copyStatus, 'status of a copy', about(file, bad.problem('shardmove copy checkpoint')));
        expect(snapshot(dir)).toEqual(before);
        expect(existsSync(join(base, 'target'))).toBe(false);
      });
    }

    it('the default paths (state/<name>.db, state/<name>.copy.db) are named the same way', async () => {
      const state = join(base, 'state');
      mkdirSync(state, { recursive: true });
      writeFileSync(join(state, 'bad.db'), 'not sqlite');
      writeFileSync(join(state, 'cp.copy.db'), 'not sqlite either');
      const before = snapshot(state);
      const [run, copy] = await Promise.all([cli(['run', plan]), cli(['copy', copyPlan])]);
      expectOneClearLine(run, 'run', `${join(state, 'bad.db')} is not a shardmove checkpoint: file is not a database`);
      expectOneClearLine(
        copy,
        'copy',
        `${join(state, 'cp.copy.db')} is not a shardmove copy checkpoint: file is not a database`,
      );
      expect(snapshot(state)).toEqual(before);
      rmSync(state, { recursive: true });
    });

    it('a move checkpoint given to copy, and a copy checkpoint given to run, say which they are', async () => {
      const dir = join(base, 'swapped');
      mkdirSync(dir);
      const move = join(dir, 'move.db');
      writeCheckpoint(move);
      const copy = join(dir, 'copy.db');
      const raw = new Database(copy);
      raw.exec('CREATE TABLE copy_run (id INTEGER PRIMARY KEY)');
      raw.pragma('user_version = 1');
      raw.close();
      const before = snapshot(dir);
      const [toCopy, toRun] = await Promise.all([
        cli(['copy', copyPlan, '--state', move]),
        cli(['run', plan, '--state', copy]),
      ]);
      expectOneClearLine(
        toCopy,
        'copy',
        `${move} is not a shardmove copy checkpoint: it is a move checkpoint (shardmove run), not a copy checkpoint`,
      );
      expectOneClearLine(
        toRun,
        'run',
        `${copy} is not a shardmove checkpoint: it is a copy checkpoint (shardmove copy), not a move checkpoint`,
      );
      expect(snapshot(dir)).toEqual(before);
    });
  },
);

describe('a checkpoint this user cannot write', { timeout: 60_000 }, () => {
  it.skipIf(!CAN_SWITCH)(
    'run refuses a read-only checkpoint file (mode 0444) with one line, and writes nothing',
    async () => {
      const dir = join(base, 'ro-file');
      mkdirSync(dir);
      const file = join(dir, 'state.db');
      writeCheckpoint(file);
      chmodSync(file, 0o444);
      chmodSync(dir, 0o777);
      const before = snapshot(dir);
      const r = await cli(['run', plan, '--state', file], { asOther: true });
      expectOneClearLine(r, 'run', `cannot write the shardmove checkpoint ${file}: the file is read-only`);
      // Nor the -wal and -shm that SQLite makes before the first write is refused, nor the run's log.
      expect(snapshot(dir)).toEqual(before);
    },
  );

  it.skipIf(!CAN_SWITCH)(
    'run and control --pause refuse a checkpoint in a directory they cannot write; unlock, with nothing to remove, reads it',
    async () => {
      const dir = join(base, 'ro-dir');
      mkdirSync(dir);
      const file = join(dir, 'state.db');
      writeCheckpoint(file);
      openUp(file);
      chmodSync(dir, 0o555);
      const before = snapshot(dir);
      const why = `cannot write the shardmove checkpoint ${file}: its directory ${dir} is not writable (SQLite keeps its -wal and -shm files beside it)`;
      const [run, unlock, control, fresh] = await Promise.all([
        cli(['run', plan, '--state', file], { asOther: true }),
        cli(['unlock', plan, '--yes', '--state', file], { asOther: true }),
        cli(['control', plan, '--pause', '--state', file], { asOther: true }),
        cli(['run', plan, '--state', join(dir, 'new.db')], { asOther: true }),
      ]);
      expectOneClearLine(run, 'run', why);
      expectOneClearLine(control, 'control --pause', why);
      expectOneClearLine(fresh, 'run (new checkpoint)', why.replaceAll(file, join(dir, 'new.db')));
      // unlock reads first: there is no lock, so it has nothing to write.
      expect(unlock.code, unlock.stderr).toBe(0);
      expect(snapshot(dir)).toEqual(before);
    },
  );
});

describe("status and report read where the checkpoint's directory is not writable", { timeout: 60_000 }, () => {
  const leftovers = () => readdirSync(tmpdir()).filter((n) => n.startsWith('shardmove-read-'));

  it.skipIf(!CAN_SWITCH)(
    'after a clean stop (no -wal) and after kill -9 (a -wal with the last commits, no -shm)',
    async () => {
      const clean = join(base, 'ro-read-clean');
      mkdirSync(clean);
      writeCheckpoint(join(clean, 'state.db'), 'cleanly-stopped');

      // What kill -9 leaves: the last commits in the -wal, the main file without them, no -shm.
      const crashed = join(base, 'ro-read-crashed');
      mkdirSync(crashed);
      const work = join(base, 'crash-work');
      mkdirSync(work);
      writeCheckpoint(join(work, 'state.db'), 'before-the-crash');
      const writer = new Database(join(work, 'state.db'));
      writer.pragma('wal_autocheckpoint = 0');
      writer.prepare(`UPDATE run SET plan_name = 'after-the-crash' WHERE id = 1`).run();
      copyFileSync(join(work, 'state.db'), join(crashed, 'state.db'));
      copyFileSync(join(work, 'state.db-wal'), join(crashed, 'state.db-wal'));
      writer.close();

      // And through a symlink, whose -wal is beside the file it points to.
      const linked = join(base, 'ro-read-linked');
      mkdirSync(linked);
      symlinkSync(join(crashed, 'state.db'), join(linked, 'state.db'));
      for (const dir of [clean, crashed, linked]) {
        for (const f of readdirSync(dir)) if (!lstatSync(join(dir, f)).isSymbolicLink()) openUp(join(dir, f));
        chmodSync(dir, 0o555);
      }
      const before = { clean: snapshot(clean), crashed: snapshot(crashed) };
      const tmpBefore = leftovers();
      // Each read under its own plan: the name the -wal holds is the plan the crashed checkpoint is of now.
      const [cleanPlan, crashedPlan] = [planNamed('cleanly-stopped'), planNamed('after-the-crash')];
      const [status, report, statusAfterCrash, reportAfterCrash, control, viaLink] = await Promise.all([
        cli(['status', cleanPlan, '--state', join(clean, 'state.db')], { asOther: true }),
        cli(['report', cleanPlan, '--json', '--state', join(clean, 'state.db')], { asOther: true }),
        cli(['status', crashedPlan, '--json', '--state', join(crashed, 'state.db')], { asOther: true }),
        cli(['report', crashedPlan, '--json', '--state', join(crashed, 'state.db')], { asOther: true }),
        cli(['control', cleanPlan, '--state', join(clean, 'state.db')], { asOther: true }),
        cli(['status', crashedPlan, '--json', '--state', join(linked, 'state.db')], { asOther: true }),
      ]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/^Plan cleanly-stopped: /);
      expect(report.code, report.stderr).toBe(0);
      expect((JSON.parse(report.stdout) as { plan: string }).plan).toBe('cleanly-stopped');
      expect(control.code, control.stderr).toBe(0);
      // The -wal's commits are read, not just the main file's older state.
      expect(statusAfterCrash.code, statusAfterCrash.stderr).toBe(0);
      expect((JSON.parse(statusAfterCrash.stdout) as { plan: string }).plan).toBe('after-the-crash');
      expect(reportAfterCrash.code, reportAfterCrash.stderr).toBe(0);
      expect((JSON.parse(reportAfterCrash.stdout) as { plan: string }).plan).toBe('after-the-crash');
      expect(viaLink.code, viaLink.stderr).toBe(0);
      expect((JSON.parse(viaLink.stdout) as { plan: string }).plan).toBe('after-the-crash');
      expect(snapshot(clean)).toEqual(before.clean);
      expect(snapshot(crashed)).toEqual(before.crashed);
      // The private copies they read are gone.
      expect(leftovers()).toEqual(tmpBefore);
    },
  );
});

describe("reading commands leave a sound checkpoint's directory as they found it", { timeout: 120_000 }, () => {
  /** Where twin is told to write (it refuses first): a directory anyone may write. */
  let outs: string;
  beforeAll(() => {
    outs = join(base, 'twin-outs');
    mkdirSync(outs);
    chmodSync(outs, 0o777);
  });

  /** A real run's checkpoint and a copy's, closed cleanly (no -wal, no -shm): what a stopped run leaves. */
  function soundCheckpoints(dir: string): { file: string; copyFile: string } {
    mkdirSync(dir);
    const file = join(dir, 'state.db');
    writeCheckpoint(file, 'bad', 'run');
    const copyFile = join(dir, 'copy.db');
    const cp = CopyCheckpoint.open(copyFile);
    cp.startRun('cp', 'h', 'rsync', 1);
    cp.setPhase('done', 2);
    cp.close();
    for (const f of [dir, file, copyFile]) openUp(f);
    return { file, copyFile };
  }

  /** The commands that only read a checkpoint; twin refuses a real run's (exit 4). */
  const readers = (file: string, copyFile: string): Array<[string[], number]> => [
    [['twin', plan, '--state', file, '--out', join(outs, 'twin-of-real.yaml')], 4],
    [['status', plan, '--state', file], 0],
    [['report', plan, '--json', '--state', file], 0],
    [['control', plan, '--state', file], 0],
    [['status', copyPlan, '--state', copyFile], 0],
    [['copy', copyPlan, '--dry-run', '--state', copyFile], 0],
  ];

  it('twin refusing a real run, status, report, control and a copy dry run leave no -wal or -shm', async () => {
    const dir = join(base, 'sound');
    const { file, copyFile } = soundCheckpoints(dir);
    const before = snapshot(dir);
    for (const [args, code] of readers(file, copyFile)) {
      const r = await cli(args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(code);
      expect(snapshot(dir), `${args[0]} changed ${dir}`).toEqual(before);
    }
    expect(readdirSync(outs)).toEqual([]);
  });

  it('the same through a symlink to the checkpoint: nothing beside the link, nothing beside the file', async () => {
    const dir = join(base, 'sound-linked');
    const { file, copyFile } = soundCheckpoints(dir);
    const links = join(base, 'sound-links');
    mkdirSync(links);
    symlinkSync(file, join(links, 'state.db'));
    symlinkSync(copyFile, join(links, 'copy.db'));
    const before = { dir: snapshot(dir), links: readdirSync(links) };
    for (const [args, code] of readers(join(links, 'state.db'), join(links, 'copy.db'))) {
      const r = await cli(args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(code);
    }
    expect(snapshot(dir)).toEqual(before.dir);
    expect(readdirSync(links)).toEqual(before.links);
  });

  it.skipIf(!CAN_SWITCH)(
    'a checkpoint this user cannot write, in a directory it can: read from a private copy, nothing left',
    async () => {
      const dir = join(base, 'sound-ro-file');
      const { file, copyFile } = soundCheckpoints(dir);
      chmodSync(file, 0o444);
      chmodSync(copyFile, 0o444);
      chmodSync(dir, 0o777);
      const before = snapshot(dir);
      const tmpBefore = readdirSync(tmpdir()).filter((n) => n.startsWith('shardmove-read-'));
      for (const [args, code] of readers(file, copyFile)) {
        const r = await cli(args, { asOther: true });
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(code);
      }
      expect(snapshot(dir)).toEqual(before);
      expect(readdirSync(tmpdir()).filter((n) => n.startsWith('shardmove-read-'))).toEqual(tmpBefore);
    },
  );
});

describe('an output named after a file the command reads', { timeout: 120_000 }, () => {
  it('report --html, run and revert --events and --metrics-file: exit 2, nothing read or written', async () => {
    const dir = join(base, 'outputs');
    mkdirSync(dir);
    const file = join(dir, 'state.db');
    writeCheckpoint(file, 'bad', 'run');
    symlinkSync(file, join(dir, 'link.db'));
    linkSync(file, join(dir, 'hard.db'));
    const before = snapshot(dir);
    const planBefore = readFileSync(plan, 'utf8');
    const tries: Array<[string[], string]> = [
      [['report', plan, '--state', file, '--html', file], `report: --html ${file} is the checkpoint ${file}`],
      [['report', plan, '--state', file, '--html', join(dir, 'link.db')], 'is the checkpoint'],
      [['report', plan, '--state', file, '--html', `${file}-wal`], "is the checkpoint's -wal file"],
      [['report', plan, '--state', file, '--html', plan], `is the plan ${plan}`],
      [['run', plan, '--state', file, '--events', join(dir, 'hard.db')], 'run: --events'],
      [['run', plan, '--state', file, '--metrics-file', `${dir}/./state.db`], 'is the checkpoint'],
      [['run', plan, '--state', file, '--events', join(dir, 'state.log')], "is the run's log"],
      [['revert', plan, '--state', file, '--events', file], 'revert: --events'],
      [['revert', plan, '--state', file, '--metrics-file', join(dir, 'state.revert.db')], 'is the checkpoint'],
    ];
    for (const [args, message] of tries) {
      const r = await cli(args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stderr).toContain('write it somewhere else');
      expect(snapshot(dir), args.join(' ')).toEqual(before);
    }
    expect(readFileSync(plan, 'utf8')).toBe(planBefore);
  });
});

describe('report --html to a place no file can be written', { timeout: 60_000 }, () => {
  let file: string;
  beforeAll(() => {
    const dir = join(base, 'html');
    mkdirSync(dir);
    file = join(dir, 'state.db');
    writeCheckpoint(file);
    openUp(file);
  });

  it('names the path and exits 2, before reading the checkpoint, and writes nothing', async () => {
    const missing = join(base, 'missing', 'dir', 'r.html');
    const [r, toDir] = await Promise.all([
      cli(['report', plan, '--state', file, '--html', missing]),
      cli(['report', plan, '--state', file, '--html', base]),
    ]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      `shardmove: report: --html ${missing}: the directory ${join(base, 'missing', 'dir')} does not exist\n`,
    );
    expect(existsSync(join(base, 'missing'))).toBe(false);
    expect(toDir.code, toDir.stderr).toBe(2);
    expect(toDir.stderr).toBe(`shardmove: report: --html ${base} is a directory; name a file\n`);
  });

  it.skipIf(!CAN_SWITCH)('a directory this user cannot write: exit 2, no file', async () => {
    const dir = join(base, 'html-ro');
    mkdirSync(dir);
    chmodSync(dir, 0o555);
    const r = await cli(['report', plan, '--state', file, '--html', join(dir, 'r.html')], { asOther: true });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(`shardmove: report: --html ${join(dir, 'r.html')}: the directory ${dir} is not writable\n`);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('a symlinked checkpoint and a path with spaces work as any other', { timeout: 60_000 }, () => {
  it('status, report and control read and write through them; the link stays a link', async () => {
    const real = join(base, 'real place');
    mkdirSync(real);
    const file = join(real, 'my run.db');
    writeCheckpoint(file, 'spaced');
    const plan = planNamed('spaced');
    const links = join(base, 'links');
    mkdirSync(links);
    const link = join(links, 'state.db');
    symlinkSync(file, link);
    const [status, report] = await Promise.all([
      cli(['status', plan, '--state', file]),
      cli(['report', plan, '--json', '--state', link]),
    ]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^Plan spaced: /);
    expect(report.code, report.stderr).toBe(0);
    const paused = await cli(['control', plan, '--pause', '--state', link]);
    expect(paused.code, paused.stderr).toBe(0);
    const after = await cli(['status', plan, '--json', '--state', file]);
    expect((JSON.parse(after.stdout) as { control: { paused: boolean } }).control.paused).toBe(true);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    // SQLite keeps its -wal and -shm beside the real file, never beside the link.
    expect(readdirSync(links)).toEqual(['state.db']);
  });
});
