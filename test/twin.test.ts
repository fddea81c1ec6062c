/**
 * The twin: a dry run against sandbox A, `shardmove twin`, sandbox B on the twin's
 * seed, then a real run of the same plan against B. Judged from the sandboxes' own databases: B
 * holds the same counts and project sizes per kind and source storage as A, the same hidden and
 * pending-delete projects, and none of A's names, paths, users, tokens, URL or host. Then the
 * command's refusals, each on a copy of the dry run's checkpoint.
 *
 * On the in-process harness (test/support/sim-harness.ts): A and B are sandboxes on one simulated
 * clock in this process and every command goes through the executable's command line, so the runs'
 * moves and polls cost no real time. The printed rehearsal's two lines stay what they are: run by
 * `sh` with `shardmove` on the PATH (its subject is the command lines as an operator pastes them);
 * its production instance and the commands before them are in this process.
 */
import {
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { parseDocument } from 'yaml';
import { openDatabase } from '../src/sandbox/db.js';
import { applySeed, loadSeed, parseSeed } from '../src/sandbox/seed.js';
import { parseSeedItems } from '../src/sandbox/seed-items.js';
import { ITEMS_HEADER, itemLine, renderTwinSeed } from '../src/twin/seed-text.js';
import type { TwinSeedInput } from '../src/twin/seed-text.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { ADMIN_TOKEN, BIN, fromDb, sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import type { CliResult } from './support/cli-harness.js';
import { FakeClock } from './support/fake-clock.js';
import { SIM_START } from './support/sim-harness.js';
import { commandsOn } from './support/sim-harness.js';
import { startSimSandbox } from './support/sim-speedb.js';

const TWIN_TOKEN = 'glpat-twin-rehearsal-admin-0001';
const SOURCES = ['nfs-1', 'nfs-2', 'default'];
/** A's own names, which must not reach the twin. */
const SECRET_NAMES = [
  'payroll-service',
  'acme-internal',
  'old-website',
  'acme-legacy',
  'kernel-mirror',
  'acme-finance-wiki',
  'Alice Liddell',
  'Bob Builder',
  'ops-admin',
];

/** A's and B's clock, and the commands in this process on it. */
const clock = new FakeClock(SIM_START);
const runCli = commandsOn(clock).shardmove;

let dir: string;
let a: RunningSandbox;
let aDb: string;
let plan: string;
let dryState: string;
let dryRunOut: string;

beforeAll(async () => {
  dir = tempDir('twin');
  const seedFile = writeSeed(dir, { projects: 120, snippets: 15, groups: 8 });
  const doc = parseDocument(readFileSync(seedFile, 'utf8'));
  doc.setIn(['inventory', 'generate', 'hidden_fraction'], 0.1);
  doc.setIn(['inventory', 'generate', 'pending_delete_fraction'], 0.05);
  doc.setIn(
    ['inventory', 'projects'],
    doc.createNode([
      { id: 500, name: 'payroll-service', namespace: 'acme-internal', storage: 'nfs-2', size_mb: 3500, hidden: true },
      { id: 501, name: 'old-website', namespace: 'acme-legacy', storage: 'nfs-1', size_mb: 0.5, pending_delete: true },
      { id: 502, name: 'kernel-mirror', namespace: 'acme-internal', storage: 'cluster', size_mb: 900 },
    ]),
  );
  doc.setIn(
    ['inventory', 'groups'],
    doc.createNode([{ id: 50, name: 'acme-finance-wiki', storage: 'nfs-1', pending_delete: true }]),
  );
  writeFileSync(seedFile, doc.toString());
  aDb = join(dir, 'a.db');
  // On 127.0.0.2, so that A's host is not the rehearsal's 127.0.0.1 and its absence from the seed means something.
  a = await startSandbox({ host: '127.0.0.2', seed: seedFile, db: aDb, clock });
  plan = writePlan(dir, { name: 'twin-it', from: SOURCES, concurrency: 20 });
  const dry = await runCli(['run', plan, '--dry-run'], { cwd: dir, env: sandboxEnv(a.url) });
  expect(dry.code, dry.stdout + dry.stderr).toBe(0);
  dryRunOut = dry.stdout;
  dryState = join(dir, 'state', 'twin-it.dry-run.db');
}, 60_000);

afterAll(async () => {
  await a?.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Per kind and storage: count and (projects) summed size in bytes as the API reports it
 * (`statistics.repository_size`, whole bytes); hidden and pending-delete project ids.
 */
function shape(db: string, storages: string[]) {
  const rows = fromDb<{ kind: string; storage: string; n: number; bytes: number }>(
    db,
    `SELECT kind, storage, COUNT(*) AS n, SUM(ROUND(size_mb * 1048576)) AS bytes FROM items WHERE storage IN (${storages.map(() => '?').join(',')}) GROUP BY kind, storage ORDER BY kind, storage`,
    ...storages,
  );
  const flagged = (col: string) =>
    fromDb<{ id: number }>(
      db,
      `SELECT id FROM items WHERE kind = 'project' AND ${col} = 1 AND storage IN (${storages.map(() => '?').join(',')}) ORDER BY id`,
      ...storages,
    ).map((r) => r.id);
  return {
    counts: rows.map((r) => ({
      kind: r.kind,
      storage: r.storage,
      n: r.n,
      ...(r.kind === 'project' ? { bytes: r.bytes } : {}),
    })),
    hidden: flagged('hidden'),
    pending: flagged('pending_delete'),
  };
}

/** Every file in `d` (not below it) with its bytes; a symlink as where it points. */
function filesIn(d: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(d, { withFileTypes: true })
      .filter((e) => !e.isDirectory())
      .map((e) => [
        e.name,
        e.isSymbolicLink() ? `-> ${readlinkSync(join(d, e.name))}` : readFileSync(join(d, e.name), 'base64'),
      ]),
  );
}

/** A copy of the dry run's checkpoint (and its WAL, if the run left one) to change or break. */
function copyOfDryRun(name: string): string {
  const file = join(dir, `${name}.db`);
  copyFileSync(dryState, file);
  if (existsSync(`${dryState}-wal`)) copyFileSync(`${dryState}-wal`, `${file}-wal`);
  return file;
}

describe('shardmove twin', () => {
  it(
    "writes a seed with A's shape and none of its names; the same plan then runs on B, which holds what A held",
    { timeout: 120_000 },
    async () => {
      const outDir = join(dir, 'out dir');
      mkdirSync(outDir);
      const twin = await runCli(['twin', plan, '--out', join('out dir', 'twin seed.yaml')], { cwd: dir });
      expect(twin.code, twin.stdout + twin.stderr).toBe(0);
      const seedFile = join(outDir, 'twin seed.yaml');
      const itemsFile = join(outDir, 'twin seed.items.jsonl');
      const text = readFileSync(seedFile, 'utf8') + readFileSync(itemsFile, 'utf8');

      // Nothing of A: names, namespaces, users, tokens, its URL and host.
      const aSeed = loadSeed(join(dir, 'seed.yaml'));
      const secrets = [
        ...SECRET_NAMES,
        a.url,
        new URL(a.url).host,
        new URL(a.url).hostname,
        ...aSeed.users.flatMap((u) => [u.username, u.name ?? u.username]),
        ...aSeed.credentials.flatMap((c) =>
          [c.value, c.access_token, c.refresh_token].filter((v): v is string => v !== undefined),
        ),
        ...aSeed.applications.flatMap((x) => [x.uid, x.secret]),
      ];
      expect(secrets.filter((s) => text.includes(s))).toEqual([]);
      expect(readFileSync(seedFile, 'utf8')).toMatch(/^# shardmove twin of the instance behind plan "twin-it"/);
      expect(readFileSync(seedFile, 'utf8')).toContain(
        '#   fork networks: none (the dry run recorded no project with a fork among the sources)',
      );

      // B on the twin's seed, on the rehearsal's address, at a hundred times the speed.
      const bDb = join(dir, 'b.db');
      const b = await startSimSandbox(clock, { seed: seedFile, db: bDb, speed: 200, workers: 20 });
      const fromA = shape(aDb, SOURCES);
      const fromB = shape(bDb, SOURCES);
      expect(fromB).toEqual(fromA);
      expect(fromA.hidden).toContain(500);
      expect(fromA.pending).toContain(501);
      // Items on the destination are not in a dry run's listing, so not in the twin.
      expect(fromDb(bDb, "SELECT id FROM items WHERE storage = 'cluster'")).toEqual([]);

      // The exact plan, pointed at B by its ${VAR}s, with a checkpoint of its own.
      const run = await runCli(['run', plan, '--state', 'state/twin-it.twin.db'], {
        cwd: dir,
        env: { SHARDMOVE_URL: b.url, SHARDMOVE_TOKEN: TWIN_TOKEN },
      });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      const moved = fromDb<{ kind: string; storage: string; n: number }>(
        bDb,
        `SELECT i.kind, m.source AS storage, COUNT(*) AS n FROM moves m JOIN items i ON i.kind = m.kind AND i.id = m.item_id
       WHERE m.state = 'finished' AND i.storage = 'cluster' GROUP BY i.kind, m.source ORDER BY i.kind, m.source`,
      );
      expect(moved).toEqual(fromA.counts.map(({ kind, storage, n }) => ({ kind, storage, n })));
      const hiddenMoved = fromDb<{ id: number }>(
        bDb,
        "SELECT id FROM items WHERE kind = 'project' AND hidden = 1 AND storage = 'cluster' ORDER BY id",
      ).map((r) => r.id);
      expect(hiddenMoved).toEqual(fromA.hidden);

      // The dry run's estimate beside the rehearsal's span, from B's own move records.
      const [span] = fromDb<{ first: string; last: string }>(
        bDb,
        "SELECT MIN(created_at) AS first, MAX(updated_at) AS last FROM moves WHERE state = 'finished'",
      );
      const estimate = /estimate \(dry run\): (.*)/.exec(twin.stdout)?.[1];
      expect(estimate).toBeDefined();
      expect(dryRunOut).toContain('estimated duration:');
      console.log(
        `estimate (dry run): ${estimate}; rehearsal span: ${((Date.parse(span!.last) - Date.parse(span!.first)) / 1000).toFixed(1)} s at --speed 200`,
      );
    },
  );

  it('refuses to replace files without --force, a missing directory, and no --out (exit 2), writing nothing', async () => {
    const out = join(dir, 'exists.yaml');
    writeFileSync(out, 'mine\n');
    const refused = await runCli(['twin', plan, '--out', out], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('exists; pass --force to replace it');
    expect(readFileSync(out, 'utf8')).toBe('mine\n');
    const forced = await runCli(['twin', plan, '--out', out, '--force'], { cwd: dir });
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(out, 'utf8')).toContain('items_file: "exists.items.jsonl"');

    const itemsOnly = join(dir, 'items-left.yaml');
    writeFileSync(join(dir, 'items-left.items.jsonl'), 'mine\n');
    expect((await runCli(['twin', plan, '--out', itemsOnly], { cwd: dir })).code).toBe(2);
    expect(existsSync(itemsOnly)).toBe(false);

    const missing = await runCli(['twin', plan, '--out', join('no such dir', 'twin.yaml')], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('does not exist');
    expect((await runCli(['twin', plan], { cwd: dir })).code).toBe(2);
  });

  it("refuses a real run's checkpoint (exit 4), and one a live run holds (exit 4)", async () => {
    const real = join(dir, 'real.db');
    const store = openCheckpoint(real);
    store.claimMode('run');
    store.close();
    const res = await runCli(['twin', plan, '--state', real, '--out', 'real-twin.yaml'], { cwd: dir });
    expect(res.code, res.stderr).toBe(4);
    expect(res.stderr).toContain('holds a real run');
    expect(existsSync(join(dir, 'real-twin.yaml'))).toBe(false);

    const locked = copyOfDryRun('locked');
    const db = openCheckpoint(locked);
    db.acquireLock({ pid: process.pid, host: hostname(), startedAt: Date.now() }, () => true);
    try {
      const held = await runCli(['twin', plan, '--state', locked, '--out', 'locked-twin.yaml'], { cwd: dir });
      expect(held.code, held.stderr).toBe(4);
      expect(held.stderr).toContain('is locked by pid');
    } finally {
      db.releaseLock();
      db.close();
    }
  });

  it('refuses an --out that is the checkpoint, its -wal or the plan, however it is spelt, even with --force (exit 2), writing nothing', async () => {
    const cases = join(dir, 'inputs');
    mkdirSync(join(cases, 'sub'), { recursive: true });
    const victim = join(cases, 'victim.db');
    copyFileSync(dryState, victim);
    // Beside it: a checkpoint whose name is what the items file of `also.yaml` would be.
    const itemsVictim = join(cases, 'also.items.jsonl');
    copyFileSync(dryState, itemsVictim);
    symlinkSync(victim, join(cases, 'link.yaml'));
    linkSync(victim, join(cases, 'hard.yaml'));
    symlinkSync(victim, join(cases, 'state-link.db'));
    // A name a careless or hostile operator might give: a leading dash, quotes, a backtick, a space.
    const odd = "-it's `odd` here.db";
    copyFileSync(dryState, join(cases, odd));
    const planCopy = join(cases, 'plan.yaml');
    copyFileSync(plan, planCopy);
    const before = filesIn(cases);
    const tries: Array<[string, string, string]> = [
      ['victim.db', victim, 'the checkpoint'],
      [victim, victim, 'the checkpoint'],
      ['./sub/../victim.db', victim, 'the checkpoint'],
      ['link.yaml', victim, 'the checkpoint'],
      ['hard.yaml', victim, 'the checkpoint'],
      ['victim.db', join(cases, 'state-link.db'), 'the checkpoint'],
      ['victim.db-wal', victim, "the checkpoint's -wal file"],
      ['sub/../state-link.db-shm', join(cases, 'state-link.db'), "the checkpoint's -shm file"],
      ['plan.yaml', victim, 'the plan'],
      ['also.yaml', itemsVictim, 'the checkpoint'],
      [odd, `./${odd}`, 'the checkpoint'],
      [`${odd}-wal`, join(cases, odd), "the checkpoint's -wal file"],
    ];
    for (const [out, state, what] of tries) {
      const r = await runCli(['twin', planCopy, '--state', state, '--out', out, '--force'], { cwd: cases });
      expect(r.code, `--out ${out}: ${r.stderr}`).toBe(2);
      expect(r.stderr, `--out ${out}`).toContain(`is ${what}`);
      expect(r.stderr).toContain('which twin uses; write it somewhere else');
    }
    const after = filesIn(cases);
    expect(after).toEqual(before);
  });

  it('refuses no checkpoint, a corrupt one and an unfinished dry run (exit 1)', async () => {
    const none = await runCli(['twin', plan, '--state', 'nothing.db', '--out', 'x.yaml'], { cwd: dir });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no checkpoint at');

    const corrupt = join(dir, 'corrupt.db');
    writeFileSync(corrupt, 'this is not SQLite, just text long enough to look like a file'.repeat(100));
    const bad = await runCli(['twin', plan, '--state', corrupt, '--out', 'x.yaml'], { cwd: dir });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('is not a shardmove checkpoint');

    const unfinished = copyOfDryRun('unfinished');
    const store = openCheckpoint(unfinished);
    const saved = store.loadRun()!;
    const snap = saved.snapshot as { status: string; value: string; context: { step: string } };
    store.saveRun({
      ...saved,
      snapshot: { ...snap, status: 'active', value: 'drain', context: { ...snap.context, step: 'drain' } },
    });
    store.close();
    const half = await runCli(['twin', plan, '--state', unfinished, '--out', 'x.yaml'], { cwd: dir });
    expect(half.code).toBe(1);
    expect(half.stderr).toContain('has not finished (it stopped at drain)');
    // The dry run to run again is this one: the plan and the checkpoint given, as a shell reads them.
    expect(half.stderr).toContain(`run \`shardmove run ${plan} --dry-run --state ${unfinished}\` again`);
    expect(existsSync(join(dir, 'x.yaml'))).toBe(false);
  });

  it('writes a seed the sandbox loads when the dry run found nothing to move', async () => {
    const empty = copyOfDryRun('empty');
    const store = openCheckpoint(empty);
    (store as unknown as { db: { exec(sql: string): void } }).db.exec('DELETE FROM items');
    store.close();
    const res = await runCli(['twin', plan, '--state', empty, '--out', 'empty.yaml'], { cwd: dir });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('items: 0');
    const db = openDatabase();
    applySeed(db, loadSeed(join(dir, 'empty.yaml')), Date.now());
    expect(fromMemory(db)).toBe(0);
  });
});

describe("the twin's seed format, as the sandbox reads it", () => {
  const input = (over: Partial<TwinSeedInput>): TwinSeedInput => ({
    planName: 'p',
    checkpointName: 'p.dry-run.db',
    finishedAt: null,
    version: '16.2.0',
    enterprise: true,
    access: {},
    byRecords: [],
    sources: ['nfs-1'],
    destination: 'cluster',
    weights: { 'nfs-1': 100 },
    counts: [],
    unlistable: [],
    estimate: { ms: 0, basis: 'count', assumptions: 'nothing to move', concurrency: 10 },
    itemsFile: 'p.items.jsonl',
    ...over,
  });
  const lines = [
    ITEMS_HEADER,
    itemLine('projects', 7, '"nfs-1"', 5, true, false),
    itemLine('groups', 2, '"nfs 2"', null, false, true),
  ].join('\n');

  it.each([
    [
      'EE, tier unknown, an unlistable project, a storage with a space',
      input({ unlistable: [7], sources: ['nfs-1', 'nfs 2'] }),
      { edition: 'ee', tier: 'ultimate' },
    ],
    [
      'EE Free',
      input({ access: { groups: 'unsupported' }, sources: ['nfs-1', 'nfs 2'] }),
      { edition: 'ee', tier: 'free' },
    ],
    [
      'CE, release unknown',
      input({ enterprise: false, version: null, sources: ['nfs-1', 'nfs 2'] }),
      { edition: 'ce', tier: 'free', version: '17.11.0' },
    ],
  ])('%s', (_name, seedInput, expected) => {
    const seed = parseSeed(renderTwinSeed(seedInput));
    expect(seed.instance).toMatchObject(expected);
    const parsed = parseSeedItems(lines, 'p.items.jsonl', seed);
    // Hidden projects do not exist on CE: the sandbox refuses them, and a CE census finds none.
    expect(parsed.problems).toEqual(
      seedInput.enterprise === false
        ? ['p.items.jsonl:2: project 7: hidden projects exist only in the enterprise edition (edition: ee)']
        : [],
    );
    expect(seed.users.map((u) => u.username)).toEqual(['twin-admin']);
  });
});

function fromMemory(db: ReturnType<typeof openDatabase>): number {
  return (db.prepare('SELECT COUNT(*) AS n FROM items').get() as { n: number }).n;
}

describe("twin's printed rehearsal, followed as printed", () => {
  it(
    'for a plan with a literal url and a token_file, moves everything on the twin and nothing on production',
    { timeout: 120_000 },
    async () => {
      const root = tempDir('twin-printed');
      onTestFinished(() => rmSync(root, { recursive: true, force: true }));
      // Production: a sandbox of its own, on another address than the rehearsal's.
      const prodDb = join(root, 'production.db');
      const production = await startSimSandbox(clock, {
        host: '127.0.0.2',
        db: prodDb,
        seed: writeSeed(root, { projects: 12, snippets: 2, groups: 2 }),
      });
      // A plan that names its instance as production plans do: neither from a variable.
      const plans = join(root, "ops 'plans'");
      mkdirSync(plans);
      const planFile = join(plans, 'retire `x`.yaml');
      const text = readFileSync(writePlan(plans, { name: 'retire', concurrency: 4 }), 'utf8')
        .replace('url: ${SHARDMOVE_URL}', `url: ${production.url}`)
        .replace('token: ${SHARDMOVE_TOKEN}', 'token_file: token.txt');
      writeFileSync(planFile, text);
      writeFileSync(join(plans, 'token.txt'), `${ADMIN_TOKEN}\n`, { mode: 0o600 });
      const planArg = join("ops 'plans'", 'retire `x`.yaml');
      const dry = await runCli(['run', planArg, '--dry-run'], { cwd: root });
      expect(dry.code, dry.stdout + dry.stderr).toBe(0);
      const twin = await runCli(['twin', planArg, "--out=-twin 'seed'.yaml"], { cwd: root });
      expect(twin.code, twin.stdout + twin.stderr).toBe(0);
      const printed = twin.stdout.split('\n');
      const at = printed.indexOf(
        'rehearse the same plan on it (docs/sandbox.md, "Rehearsing on a twin of your instance"):',
      );
      const [sandboxLine, runLine] = printed.slice(at + 1, at + 3).map((l) => l.trim());
      expect(sandboxLine).toContain("--port 0 --url-file './-twin '\\''seed'\\''.url' ");
      expect(runLine).toMatch(/^SHARDMOVE_TWIN_URL="\$\(cat .*\)" SHARDMOVE_TWIN_TOKEN=\S+ shardmove run /);

      // `shardmove` on the PATH, as an operator has it; both lines exactly as printed, with 8081 taken
      // (the twin listens on a free port and tells the run where), the twin's database beside it.
      const taken = createServer();
      await new Promise<void>((done) => taken.listen(8081, '127.0.0.1', done).once('error', () => done()));
      onTestFinished(() => new Promise<void>((done) => taken.close(() => done())));
      const bin = join(root, 'bin');
      mkdirSync(bin);
      symlinkSync(BIN, join(bin, 'shardmove'));
      const env = { PATH: `${bin}:${process.env.PATH ?? ''}`, NO_COLOR: '1' };
      const twinDb = join(root, 'twin.db');
      const rehearsal = await startShell(`${sandboxLine!} --db ${twinDb}`, root, env);
      onTestFinished(() => rehearsal.stop());
      const run = await runShell(runLine!, root, env);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(readFileSync(join(root, "-twin 'seed'.url"), 'utf8')).toBe(`${rehearsal.url}\n`);

      const count = (db: string) => fromDb<{ n: number }>(db, 'SELECT COUNT(*) AS n FROM moves')[0]!.n;
      expect(count(prodDb)).toBe(0);
      expect(count(twinDb)).toBe(16);
      // The rehearsal's checkpoint is beside the rehearsal plan; the plan's folder holds only its dry run's.
      expect(existsSync(join(root, 'state', 'retire.twin.db'))).toBe(true);
      expect(readdirSync(join(plans, 'state')).sort()).toEqual(['retire.dry-run.db', 'retire.dry-run.log']);
    },
  );
});

/** Runs a command line through `sh -c` to its end. */
function runShell(line: string, cwd: string, env: Record<string, string>): Promise<CliResult> {
  const child = spawn('sh', ['-c', line], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += String(c)));
  child.stderr.on('data', (c) => (stderr += String(c)));
  return new Promise((done) => child.on('exit', (code) => done({ code, stdout, stderr })));
}

/** Starts a sandbox command line through `sh -c` and waits for its ready line. */
async function startShell(
  line: string,
  cwd: string,
  env: Record<string, string>,
): Promise<{ url: string; stop(): Promise<void> }> {
  const child = spawn('sh', ['-c', `exec ${line}`], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += String(c)));
  const url = await new Promise<string>((done, fail) => {
    createInterface({ input: child.stdout }).once('line', (l) => done((JSON.parse(l) as { url: string }).url));
    child.once('exit', (code) => fail(new Error(`${line}: exited ${code}: ${stderr}`)));
  });
  return {
    url,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}
