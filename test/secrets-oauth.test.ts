/**
 * Secrets hygiene, end to end, for a token from token_file (and from stdin) and for an OAuth pair the
 * sandbox rotates every 1 s: the scan of test/secrets.test.ts, with every pair the sandbox issued.
 * Both stay separate processes: the scan reads the command lines of the CLI's process tree, the
 * token comes through a shell's pipe on /dev/stdin, and the OAuth run is interrupted by SIGINT. They
 * wait less by construction: bulk jobs queued 100 ms (not the sandbox's 2 s), shorter moves and tokens.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from './support/cli-harness.js';
import { SECRETS, filesUnder, sandboxOauthTokens } from './support/secrets-harness.js';
import {
  ALL_KNOWN,
  expectCompleted,
  interruptAfterMoves,
  leaksOf,
  planFor,
  scenario,
} from './support/secrets-scenario.js';

describe('no secret value in anything a run writes or prints: token_file, stdin, OAuth', { timeout: 120_000 }, () => {
  it('personal token from token_file, bulk mode', async () => {
    const s = await scenario('secrets-file', ['--move-duration', '30', '--workers', '50', '--bulk-delay', '100ms'], {
      projects: 40,
    });
    const plan = planFor(s, 'file', { mode: 'bulk' });
    expect((await s.run('validate', ['validate', plan])).code).toBe(0);
    // token_file: /dev/stdin reads the token from a pipe (here the shell's, as an operator would type it).
    const stdinPlan = join(s.work, 'stdin.yaml');
    writeFileSync(
      stdinPlan,
      readFileSync(plan, 'utf8')
        .replace('token_file: pat.txt', 'token_file: /dev/stdin')
        .replace('name: it', 'name: stdin'),
    );
    const piped = spawnSync('sh', ['-c', `printf '%s\\n' "$T" | "${process.execPath}" "${BIN}" validate stdin.yaml`], {
      cwd: s.work,
      encoding: 'utf8',
      env: { ...process.env, T: SECRETS.pat, SHARDMOVE_URL: s.sandbox.url },
    });
    expect(piped.status, piped.stderr).toBe(0);
    s.outputs.push({ label: 'validate from stdin', text: piped.stdout + piped.stderr });
    const r = await s.run('run', ['run', plan]);
    expect(r.code, r.stderr).toBe(0);
    await expectCompleted(s.sandbox.url);
    expect((await s.run('status --json', ['status', plan, '--json'])).code).toBe(0);
    expect(readFileSync(join(s.work, 'pat.txt'), 'utf8').trim()).toBe(SECRETS.pat);
    expect(leaksOf(s, ALL_KNOWN).leaks).toEqual([]);
  });

  it('OAuth rotated every 1 s, interrupted and resumed, and a failing refresh: no old or new pair anywhere but the token files', async () => {
    // At least two token lifetimes by construction, however fast the orchestrator: the sandbox runs
    // at most 5 moves at once, so 40 items of 350 ms each take 8 x 0.35 = 2.8 s of its own time,
    // and its tokens live 1 s.
    const s = await scenario('secrets-oauth', ['--move-duration', '350', '--workers', '5'], {
      projects: 30,
      snippets: 6,
      groups: 4,
      oauthTtlSeconds: 1,
    });
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
});
