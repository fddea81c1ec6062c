/**
 * Secrets hygiene, end to end (personal token from the environment): a dry run, a failing
 * run, an interrupted and a resumed run, status. Afterwards every byte the runs wrote (checkpoint
 * .db/-wal/-shm before and after a WAL checkpoint, the log, the temp directory, stdout and stderr of
 * every process, the sandbox's own log) and the command lines of the CLI's process tree are searched
 * for the known values in raw and encoded forms: zero hits. OAuth and token_file: secrets-oauth.test.ts.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { flat, runCli, tempDir } from './support/cli-harness.js';
import { SECRETS, findLeaks } from './support/secrets-harness.js';
import {
  ALL_KNOWN,
  expectCompleted,
  interruptAfterMoves,
  leaksOf,
  planFor,
  scenario,
} from './support/secrets-scenario.js';

describe('no secret value in anything a run writes or prints', { timeout: 120_000 }, () => {
  it('the scanner finds a secret raw, URL-encoded, base64 inside a larger blob and truncated', () => {
    const v = SECRETS.oauthAccess;
    expect(findLeaks('raw', `x${v}y`, [v])).toHaveLength(1);
    expect(findLeaks('url', `a=${encodeURIComponent(v)}&b`, [v])).toHaveLength(1);
    for (const pre of ['', 'u:', 'id:'])
      expect(findLeaks('basic', `Basic ${Buffer.from(`${pre}${v}`).toString('base64')}`, [v]), pre).toHaveLength(1);
    expect(findLeaks('truncated', `${v.slice(3, 18)}...`, [v])).toHaveLength(1);
    expect(findLeaks('clean', 'Sx7Qm and OaAcc and [REDACTED]', [v])).toEqual([]);
  });

  it('personal token from the environment: dry run, a failing run, SIGINT, resume, status', async () => {
    const s = await scenario('secrets-env', ['--move-duration', '80', '--workers', '10'], { projects: 40 });
    const plan = planFor(s, 'env');
    const env = { SHARDMOVE_TOKEN: SECRETS.pat };

    const dry = await s.run('dry run', ['run', plan, '--dry-run'], env);
    expect(dry.code, dry.stderr).toBe(0);

    // A token the instance never issued: the run fails at pre-flight, naming the problem, not the value.
    const badPlan = planFor(s, 'env', { name: 'bad' });
    const bad = await s.run('failing run', ['run', badPlan], { SHARDMOVE_TOKEN: SECRETS.unknown });
    expect(bad.code).toBe(1);
    expect(flat(bad.stdout)).toContain('the token was not accepted');

    const interrupted = await s.run('interrupted run', ['run', plan], env, interruptAfterMoves(s.sandbox.url, 3));
    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect((await s.run('status (interrupted)', ['status', plan], env)).code).toBe(0);

    const resumed = await s.run('resumed run', ['run', plan], env);
    expect(resumed.code, resumed.stderr).toBe(0);
    await expectCompleted(s.sandbox.url);
    const status = await s.run('status', ['status', plan, '--json'], env);
    expect((JSON.parse(status.stdout) as { state: string }).state).toBe('done');

    const { leaks, scanned } = leaksOf(s, ALL_KNOWN);
    // The scan saw the checkpoints and logs of all three plans.
    for (const f of ['it.db', 'it.log', 'it.dry-run.db', 'bad.db', 'bad.log'])
      expect(scanned).toContain(join(s.work, 'state', f));
    expect(s.argv.length).toBeGreaterThan(0);
    expect(leaks).toEqual([]);
  });

  it('no command-line option takes a token, and a token typed as an argument is not echoed', async () => {
    const dir = tempDir('secrets-argv');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const main = readFileSync(join(import.meta.dirname, '..', 'src', 'cli', 'main.ts'), 'utf8');
    const options = [...main.matchAll(/\.option\('([^']+)'/g)].map((m) => m[1]!);
    expect(options.length).toBeGreaterThan(5);
    // A path to a file that holds a secret (`--token-file <file>`) is fine; the secret itself is not.
    expect(
      options.filter((o) => /token|secret|password|auth|credential|key/i.test(o) && !/-file <file>$/.test(o)),
    ).toEqual([]);
    expect(options).toContain('--token-file <file>');
    for (const args of [
      ['run', 'plan.yaml', `--token=${SECRETS.pat}`],
      ['run', 'plan.yaml', '--private-token', SECRETS.pat],
      ['validate', SECRETS.pat],
      ['token', 'revoke', SECRETS.pat],
      ['token', 'inspect', `--token=${SECRETS.pat}`],
    ]) {
      const r = await runCli(args, { cwd: dir });
      expect(r.code).toBe(2);
      expect(findLeaks(args.join(' '), r.stdout + r.stderr, [SECRETS.pat])).toEqual([]);
    }
  });
});
