/**
 * Secrets hygiene, end to end: full runs with known, distinctive credential values (a personal token
 * from the environment and from a file, an OAuth pair that the sandbox rotates every 2 s), including
 * a dry run, failing runs, an interrupted and a resumed run, `validate` and `status`. Afterwards every
 * byte the runs wrote (checkpoint .db/-wal/-shm before and after a WAL checkpoint, the log, the temp
 * directory, stdout and stderr of every process, the sandbox's own log) and the command lines of
 * the CLI's process tree are searched for those values in raw and encoded forms: zero hits.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { CliResult } from './support/cli-harness.js';
import { BIN, invariantViolations, movesOf, runCli, storagesOf, tempDir } from './support/cli-harness.js';
import type { AuthStyle, LoggedSandbox } from './support/secrets-harness.js';
import {
  SECRETS, checkpointAndDump, commandLinesOfTree, filesUnder, findLeaks, sandboxOauthTokens, scanTree, startLoggedSandbox, writeSecretPlan,
  writeSecretSeed,
} from './support/secrets-harness.js';

const ALL_KNOWN: string[] = Object.values(SECRETS);

interface Scenario {
  sandbox: LoggedSandbox;
  sandboxDb: string;
  /** The CLI's working directory: plans, token files, state/, tmp/. */
  work: string;
  /** Token files: the only files under `work` allowed to hold a secret. */
  tokenFiles: Set<string>;
  /** Everything printed by CLI processes, labelled. */
  outputs: { label: string; text: string }[];
  /** Command lines seen in the CLI's process tree while it ran. */
  argv: string[];
  run(label: string, args: string[], env?: Record<string, string>, onStart?: (pid: number) => void): Promise<CliResult>;
}

/** A sandbox process (own DB and log, outside the scanned tree) and a working directory for the CLI. */
async function scenario(name: string, sandboxArgs: string[], seed: Parameters<typeof writeSecretSeed>[1]): Promise<Scenario> {
  const root = tempDir(name);
  const sandboxDir = join(root, 'sandbox');
  const work = join(root, 'work');
  mkdirSync(sandboxDir);
  mkdirSync(join(work, 'tmp'), { recursive: true });
  const sandboxDb = join(sandboxDir, 'sandbox.db');
  const sandbox = await startLoggedSandbox(['--seed', writeSecretSeed(sandboxDir, seed), '--db', sandboxDb, ...sandboxArgs], { LOG_LEVEL: 'debug' });
  onTestFinished(async () => {
    await sandbox.stop();
    rmSync(root, { recursive: true, force: true });
  });
  const s: Scenario = {
    sandbox,
    sandboxDb,
    work,
    tokenFiles: new Set(),
    outputs: [],
    argv: [],
    async run(label, args, env = {}, onStart) {
      let timer: NodeJS.Timeout | undefined;
      const r = await runCli(args, {
        cwd: work,
        // Debug logging writes every request to the log: the most there is to leak.
        env: { SHARDMOVE_URL: sandbox.url, LOG_LEVEL: 'debug', TMPDIR: join(work, 'tmp'), ...env },
        onStart: (child) => {
          const pid = child.pid!;
          const look = () => s.argv.push(...commandLinesOfTree(pid));
          look();
          timer = setInterval(look, 200);
          onStart?.(pid);
        },
      });
      clearInterval(timer);
      s.outputs.push({ label: `${label} stdout`, text: r.stdout }, { label: `${label} stderr`, text: r.stderr });
      return r;
    },
  };
  return s;
}

/** Searches everything the scenario's processes wrote or printed; returns the hits (must be none). */
function leaksOf(s: Scenario, secrets: readonly string[]): { leaks: string[]; scanned: string[] } {
  const leaks: string[] = [];
  const before = scanTree(s.work, secrets, s.tokenFiles);
  leaks.push(...before.leaks);
  // SQLite may keep old page images in the WAL; after a checkpoint, the main file holds everything.
  const dbs = before.files.filter((f) => /\.db$/.test(f));
  for (const db of dbs) leaks.push(...findLeaks(`${db} (rows)`, checkpointAndDump(db), secrets));
  leaks.push(...scanTree(s.work, secrets, s.tokenFiles).leaks.map((l) => `after checkpoint: ${l}`));
  for (const o of s.outputs) leaks.push(...findLeaks(o.label, o.text, secrets));
  leaks.push(...findLeaks('sandbox log', s.sandbox.output(), secrets));
  leaks.push(...findLeaks('command lines', s.argv.join('\n'), secrets));
  return { leaks, scanned: before.files };
}

async function movesFinished(url: string): Promise<number> {
  const res = await fetch(`${url}/api/v4/project_repository_storage_moves?per_page=100`, { headers: { 'PRIVATE-TOKEN': SECRETS.revoker } });
  return ((await res.json()) as { state: string }[]).filter((m) => m.state === 'finished').length;
}

/** Sends SIGINT to `pid` once the sandbox has finished `n` project moves (or after 15 s). */
function interruptAfterMoves(url: string, n: number): (pid: number) => void {
  return (pid) => {
    void (async () => {
      const until = Date.now() + 15_000;
      while (Date.now() < until && (await movesFinished(url)) < n) await new Promise((r) => setTimeout(r, 50));
      process.kill(pid, 'SIGINT');
    })();
  };
}

async function expectCompleted(url: string) {
  for (const kind of ['projects', 'snippets', 'groups'] as const) {
    expect([...(await storagesOf(url, kind)).values()].filter((st) => st !== 'cluster'), kind).toEqual([]);
  }
  for (const kind of ['project', 'snippet', 'group'] as const) expect(invariantViolations(await movesOf(url, kind), 'cluster'), kind).toEqual([]);
}

function planFor(s: Scenario, auth: AuthStyle, opts: Omit<Parameters<typeof writeSecretPlan>[1], 'auth'> = {}, dir = s.work): string {
  mkdirSync(dir, { recursive: true });
  const { plan, tokenFiles } = writeSecretPlan(dir, { auth, ...opts });
  for (const f of tokenFiles) s.tokenFiles.add(f);
  return plan;
}

describe('no secret value in anything a run writes or prints', { timeout: 120_000 }, () => {
  it('the scanner finds a secret raw, URL-encoded, base64 inside a larger blob and truncated', () => {
    const v = SECRETS.oauthAccess;
    expect(findLeaks('raw', `x${v}y`, [v])).toHaveLength(1);
    expect(findLeaks('url', `a=${encodeURIComponent(v)}&b`, [v])).toHaveLength(1);
    for (const pre of ['', 'u:', 'id:']) expect(findLeaks('basic', `Basic ${Buffer.from(`${pre}${v}`).toString('base64')}`, [v]), pre).toHaveLength(1);
    expect(findLeaks('truncated', `${v.slice(3, 18)}...`, [v])).toHaveLength(1);
    expect(findLeaks('clean', 'Sx7Qm and OaAcc and [REDACTED]', [v])).toEqual([]);
  });

  it('personal token from the environment: validate, dry run, a failing run, SIGINT, resume, status', async () => {
    const s = await scenario('secrets-env', ['--move-duration', '80', '--workers', '10'], { projects: 40 });
    const plan = planFor(s, 'env');
    const env = { SHARDMOVE_TOKEN: SECRETS.pat };

    expect((await s.run('validate', ['validate', plan], env)).code).toBe(0);
    const dry = await s.run('dry run', ['run', plan, '--dry-run'], env);
    expect(dry.code, dry.stderr).toBe(0);

    // A token the instance never issued: the run fails at pre-flight, naming the problem, not the value.
    const badPlan = planFor(s, 'env', { name: 'bad' });
    const bad = await s.run('failing run', ['run', badPlan], { SHARDMOVE_TOKEN: SECRETS.unknown });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('the token was not accepted');

    const interrupted = await s.run('interrupted run', ['run', plan], env, interruptAfterMoves(s.sandbox.url, 3));
    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect((await s.run('status (interrupted)', ['status', plan], env)).code).toBe(0);

    const resumed = await s.run('resumed run', ['run', plan], env);
    expect(resumed.code, resumed.stderr).toBe(0);
    await expectCompleted(s.sandbox.url);
    const status = await s.run('status', ['status', plan, '--json'], env);
    expect((JSON.parse(status.stdout) as { state: string }).state).toBe('done');
    expect((await s.run('status of the failed run', ['status', badPlan], env)).code).toBe(0);

    const { leaks, scanned } = leaksOf(s, ALL_KNOWN);
    // The scan saw the checkpoints and logs of all three plans.
    for (const f of ['it.db', 'it.log', 'it.dry-run.db', 'bad.db', 'bad.log']) expect(scanned).toContain(join(s.work, 'state', f));
    expect(s.argv.length).toBeGreaterThan(0);
    expect(leaks).toEqual([]);
  });

  it('personal token from token_file, bulk mode', async () => {
    const s = await scenario('secrets-file', ['--move-duration', '30', '--workers', '50'], { projects: 40 });
    const plan = planFor(s, 'file', { mode: 'bulk' });
    expect((await s.run('validate', ['validate', plan])).code).toBe(0);
    // token_file: /dev/stdin reads the token from a pipe (here the shell's, as an operator would type it).
    const stdinPlan = join(s.work, 'stdin.yaml');
    writeFileSync(stdinPlan, readFileSync(plan, 'utf8').replace('token_file: pat.txt', 'token_file: /dev/stdin').replace('name: it', 'name: stdin'));
    const piped = spawnSync('sh', ['-c', `printf '%s\\n' "$T" | "${process.execPath}" "${BIN}" validate stdin.yaml`], { cwd: s.work, encoding: 'utf8', env: { ...process.env, T: SECRETS.pat, SHARDMOVE_URL: s.sandbox.url } });
    expect(piped.status, piped.stderr).toBe(0);
    s.outputs.push({ label: 'validate from stdin', text: piped.stdout + piped.stderr });
    const r = await s.run('run', ['run', plan]);
    expect(r.code, r.stderr).toBe(0);
    await expectCompleted(s.sandbox.url);
    expect((await s.run('status --json', ['status', plan, '--json'])).code).toBe(0);
    expect(readFileSync(join(s.work, 'pat.txt'), 'utf8').trim()).toBe(SECRETS.pat);
    expect(leaksOf(s, ALL_KNOWN).leaks).toEqual([]);
  });

  it('OAuth rotated every 2 s, interrupted and resumed, and a failing refresh: no old or new pair anywhere but the token files', async () => {
    const s = await scenario('secrets-oauth', ['--move-duration', '150', '--workers', '5'], { projects: 30, snippets: 6, groups: 4, oauthTtlSeconds: 2 });
    const plan = planFor(s, 'oauth', { concurrency: 5 });
    expect((await s.run('validate', ['validate', plan])).code).toBe(0);
    const interrupted = await s.run('interrupted run', ['run', plan], {}, interruptAfterMoves(s.sandbox.url, 15));
    expect(interrupted.code, interrupted.stderr).toBe(130);
    const resumed = await s.run('resumed run', ['run', plan]);
    expect(resumed.code, resumed.stderr).toBe(0);
    await expectCompleted(s.sandbox.url);
    expect((await s.run('status --json', ['status', plan, '--json'])).code).toBe(0);

    // By now the seeded pair is revoked (rotated): a refresh with a wrong client secret must fail cleanly.
    const badPlan = planFor(s, 'oauth', { name: 'bad', clientSecret: SECRETS.wrongClientSecret }, join(s.work, 'bad'));
    const bad = await s.run('failing refresh', ['run', badPlan]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('OAuth token refresh failed');

    const issued = sandboxOauthTokens(s.sandboxDb);
    expect(issued.refreshes).toBeGreaterThanOrEqual(2);
    // The token files hold the newest pair; every pair is a secret everywhere else.
    const newest = issued.values.slice(-2);
    expect(readFileSync(join(s.work, 'access.txt'), 'utf8').trim()).toBe(newest[0]);
    expect(readFileSync(join(s.work, 'refresh.txt'), 'utf8').trim()).toBe(newest[1]);
    expect(filesUnder(s.work).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(leaksOf(s, [...ALL_KNOWN, ...issued.values]).leaks).toEqual([]);
  });

  it('no command-line option takes a token, and a token typed as an argument is not echoed', async () => {
    const dir = tempDir('secrets-argv');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const main = readFileSync(join(import.meta.dirname, '..', 'src', 'cli', 'main.ts'), 'utf8');
    const options = [...main.matchAll(/\.option\('([^']+)'/g)].map((m) => m[1]!);
    expect(options.length).toBeGreaterThan(5);
    expect(options.filter((o) => /token|secret|password|auth|credential|key/i.test(o))).toEqual([]);
    for (const args of [['run', 'plan.yaml', `--token=${SECRETS.pat}`], ['run', 'plan.yaml', '--private-token', SECRETS.pat], ['validate', SECRETS.pat]]) {
      const r = await runCli(args, { cwd: dir });
      expect(r.code).toBe(2);
      expect(findLeaks(args.join(' '), r.stdout + r.stderr, [SECRETS.pat])).toEqual([]);
    }
  });
});
