/**
 * `shardmove token inspect | revoke` against the in-process sandbox: all 14 token types of the spec
 * on every release of its Versioning section (with the feature flags it names), each revoke's effect
 * checked in the sandbox's own database, and neither the token nor a reset's new value in any output.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import { loadSeed } from '../src/sandbox/seed.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { runTokenCommand } from '../src/cli/token.js';
import type { TokenCommandOptions } from '../src/cli/token.js';
import { BIN } from './support/cli-harness.js';
import { execFile } from 'node:child_process';

const ROOT = 'glpat-sandbox-root-api-sudo-0001';
const ALICE = 'glpat-sandbox-alice-api-00000006';

/** The 14 types, the seed's token of each, and the spec's Versioning section: when POST and DELETE learned it. */
const TYPES: Array<{
  kind: string;
  token: string;
  post: string;
  del: string | null;
  action: 'revoke' | 'reset' | 'delete';
  flag?: string;
}> = [
  { kind: 'personal', token: ALICE, post: '17.5', del: '17.7', action: 'revoke' },
  { kind: 'impersonation', token: 'glpat-sandbox-impersonate-alice8', post: '17.5', del: '17.7', action: 'revoke' },
  { kind: 'project_access', token: 'glpat-sandbox-project-1-bot-0009', post: '17.5', del: '17.7', action: 'revoke' },
  { kind: 'group_access', token: 'glpat-sandbox-group-1-bot-000010', post: '17.5', del: '17.7', action: 'revoke' },
  { kind: 'deploy', token: 'gldt-sandbox-deploy-0001', post: '17.5', del: '17.7', action: 'revoke' },
  { kind: 'feed', token: 'glft-sandbox-feed-alice-0001', post: '17.6', del: '17.7', action: 'reset' },
  { kind: 'oauth_secret', token: 'gloas-sandbox-application-secret-0001', post: '17.7', del: '17.9', action: 'reset' },
  { kind: 'cluster_agent', token: 'glagent-sandbox-agent-0001', post: '17.7', del: '17.9', action: 'revoke' },
  { kind: 'runner', token: 'glrt-sandbox-runner-0001', post: '17.7', del: '17.9', action: 'reset' },
  {
    kind: 'pipeline_trigger',
    token: 'glptt-sandbox-trigger-0001',
    post: '17.7',
    del: '17.10',
    action: 'revoke',
    flag: 'token_api_expire_pipeline_triggers',
  },
  { kind: 'job', token: 'glcbt-sandbox-job-project-1-0001', post: '17.9', del: null, action: 'revoke' },
  { kind: 'feature_flags_client', token: 'glffct-sandbox-ffclient-0001', post: '17.9', del: '17.9', action: 'reset' },
  {
    kind: 'session',
    token: '_service_session=sandbox-session-alice-0001',
    post: '17.9',
    del: '17.11',
    action: 'delete',
  },
  { kind: 'incoming_email', token: 'glimt-sandbox-incoming-alice-01', post: '17.9', del: '17.9', action: 'reset' },
];

const minor = (v: string) => Number(v.split('.')[1]);
const dir = mkdtempSync(join(tmpdir(), 'shardmove-token-'));
const sandboxes: RunningSandbox[] = [];
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

async function sandbox(
  version: string,
  flags: Record<string, boolean> = {},
  change: (s: Seed) => void = () => {},
): Promise<RunningSandbox> {
  const s = structuredClone(loadSeed());
  s.inventory = {};
  s.instance.version = version;
  s.instance.feature_flags = flags;
  change(s);
  const sb = await startSandbox({ seed: s });
  sandboxes.push(sb);
  return sb;
}

interface Outcome {
  code: number | string;
  stdout: string;
  stderr: string;
  message: string;
}

/** Runs the command in-process with the token on standard input (or a file) and captures everything. */
async function token(
  sb: RunningSandbox,
  opts: Partial<TokenCommandOptions> & { action: 'inspect' | 'revoke' },
  value: string,
  env: Record<string, string> = {},
): Promise<Outcome> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c) => (out += String(c)));
  stderr.on('data', (c) => (err += String(c)));
  const ctx = {
    stdout,
    stderr,
    cwd: dir,
    signal: new AbortController().signal,
    env: { GITLAB_URL: sb.url, GITLAB_TOKEN: ROOT, ...env },
    stdin: Readable.from([`${value}\n`]),
  };
  try {
    const code = await runTokenCommand({ json: false, ...opts }, ctx);
    return { code, stdout: out, stderr: err, message: '' };
  } catch (e) {
    return { code: (e as { code?: string }).code ?? 'thrown', stdout: out, stderr: err, message: (e as Error).message };
  }
}

const row = (sb: RunningSandbox, id: number) =>
  sb.state.db.prepare('SELECT value, revoked, expires_at_ms FROM credentials WHERE id = ?').get(id) as
    { value: string; revoked: number; expires_at_ms: number | null } | undefined;
const idOf = (sb: RunningSandbox, value: string) =>
  (
    sb.state.db.prepare('SELECT id FROM credentials WHERE value = ?').get(value.replace('_service_session=', '')) as
      { id: number } | undefined
  )?.id;
const appSecret = (sb: RunningSandbox) =>
  (sb.state.db.prepare('SELECT secret FROM applications WHERE id = 1').get() as { secret: string }).secret;

/** Nothing the command printed or threw holds the token, or the value a reset issued. */
function expectNoSecret(o: Outcome, ...secrets: Array<string | undefined>): void {
  for (const s of secrets) {
    if (!s) continue;
    const body = s.replace('_service_session=', '');
    for (const text of [o.stdout, o.stderr, o.message]) expect(text).not.toContain(body);
  }
}

const RELEASES: Array<{ version: string; flags: Record<string, boolean> }> = [
  { version: '17.5.0', flags: { admin_agnostic_token_finder: true } },
  { version: '17.6.0', flags: { admin_agnostic_token_finder: true } },
  { version: '17.7.0', flags: { admin_agnostic_token_finder: true, api_admin_token_revoke: true } },
  { version: '17.8.0', flags: { api_admin_token_revoke: true } },
  { version: '17.9.0', flags: {} },
  { version: '17.10.0', flags: { token_api_expire_pipeline_triggers: true } },
  { version: '17.10.0', flags: {} },
  { version: '17.11.0', flags: { token_api_expire_pipeline_triggers: true } },
];

describe('shardmove token: every type on every release of the spec', { timeout: 60_000 }, () => {
  for (const { version, flags } of RELEASES) {
    it(`${version} ${JSON.stringify(flags)}: inspect, then revoke, each of the 14 types`, async () => {
      const sb = await sandbox(version, flags);
      const v = minor(version);
      for (const t of TYPES) {
        const id = idOf(sb, t.token);
        const before = { cred: id === undefined ? undefined : row(sb, id), secret: appSecret(sb) };
        const inspect = await token(sb, { action: 'inspect', json: true }, t.token);
        expectNoSecret(inspect, t.token);
        if (v < minor(t.post)) {
          expect(inspect.code, `${t.kind} inspect on ${version}`).toBe('SHARDMOVE_TOKEN_UNSUPPORTED');
          expect(inspect.message).toMatch(new RegExp(`identified from ${t.post}; the instance runs ${version}`));
          continue;
        }
        expect(inspect.code, `${t.kind} inspect on ${version}: ${inspect.message}`).toBe(0);
        const info = JSON.parse(inspect.stdout) as Record<string, unknown>;
        expect(info.kind).toBe(t.kind);
        expect(Object.keys(info)).toEqual([
          'type',
          'kind',
          'id',
          'owner',
          'scopes',
          'expires_at',
          'last_used_at',
          'state',
          'action_on_revoke',
          'record',
        ]);
        expect(info.action_on_revoke).toBe(t.del === null ? 'none' : t.action);

        const revoke = await token(sb, { action: 'revoke', json: true, showNewValue: false }, t.token);
        const after = { cred: id === undefined ? undefined : row(sb, id), secret: appSecret(sb) };
        expectNoSecret(revoke, t.token, after.cred?.value, after.secret);
        if (v < 7) {
          expect(revoke.code, t.kind).toBe('SHARDMOVE_TOKEN_ENDPOINT_UNAVAILABLE');
          expect(revoke.message).toMatch(/DELETE \/admin\/token came in 17\.7/);
          continue;
        }
        const flagOff = t.flag !== undefined && !flags[t.flag];
        if (t.del === null || v < minor(t.del) || flagOff) {
          expect(revoke.code, `${t.kind} revoke on ${version}: ${revoke.message}`).toBe('SHARDMOVE_TOKEN_UNSUPPORTED');
          if (t.del === null) expect(revoke.message).toMatch(/cannot be revoked through this endpoint/);
          else if (v < minor(t.del))
            expect(revoke.message).toMatch(new RegExp(`from ${t.del}; the instance runs ${version}`));
          else expect(revoke.message).toMatch(new RegExp(`needs the feature flag ${t.flag}`));
          expect(row(sb, id!)).toEqual(before.cred);
          continue;
        }
        expect(revoke.code, `${t.kind} revoke on ${version}: ${revoke.message}`).toBe(0);
        const said = JSON.parse(revoke.stdout) as Record<string, unknown>;
        expect([said.kind, said.action, said.new_value_returned]).toEqual([t.kind, t.action, false]);
        expect(said).not.toHaveProperty('new_value');
        // The effect, as the sandbox's database records it.
        if (t.kind === 'oauth_secret') expect(after.secret).not.toBe(before.secret);
        else if (t.action === 'delete') expect(after.cred).toBeUndefined();
        else if (t.action === 'reset') expect(after.cred!.value).not.toBe(before.cred!.value);
        else if (t.kind === 'pipeline_trigger') expect(after.cred!.expires_at_ms).not.toBeNull();
        else expect(after.cred!.revoked).toBe(1);
        expect(said.old_value_now).toBe(
          t.action === 'revoke' ? (t.kind === 'pipeline_trigger' ? 'expired' : 'revoked') : 'gone',
        );
      }
    });
  }
});

describe("shardmove token: the spec's failure cases", { timeout: 60_000 }, () => {
  it('an instance older than 17.5, and 17.5 to 17.7 with the feature flag off', async () => {
    const old = await token(await sandbox('17.4.0'), { action: 'inspect' }, ALICE);
    expect([old.code, old.message]).toEqual([
      'SHARDMOVE_TOKEN_ENDPOINT_UNAVAILABLE',
      'token inspect: the instance runs 17.4.0; the admin token endpoint came in 17.5',
    ]);
    const off = await token(await sandbox('17.6.0'), { action: 'inspect' }, ALICE);
    expect(off.code).toBe('SHARDMOVE_TOKEN_ENDPOINT_UNAVAILABLE');
    expect(off.message).toMatch(/behind the feature flag admin_agnostic_token_finder, which is off/);
    const revokeOff = await token(await sandbox('17.8.0'), { action: 'revoke' }, ALICE);
    expect(revokeOff.code).toBe('SHARDMOVE_TOKEN_ENDPOINT_UNAVAILABLE');
    expect(revokeOff.message).toMatch(/DELETE \/admin\/token is behind the feature flag api_admin_token_revoke/);
  });

  it('not found, an unknown prefix, a previous custom prefix, a non-admin caller', async () => {
    const sb = await sandbox('17.11.0');
    const missing = await token(sb, { action: 'inspect' }, 'glpat-no-such-token-anywhere-000');
    expect(missing.code).toBe('SHARDMOVE_TOKEN_NOT_FOUND');
    expect(missing.message).toMatch(/no such token \(404\)/);
    expectNoSecret(missing, 'glpat-no-such-token-anywhere-000');
    const old = await token(sb, { action: 'revoke' }, 'acme-sandbox-root-old-prefix-007');
    expect(old.code).toBe('SHARDMOVE_TOKEN_UNSUPPORTED');
    expect(old.message).toMatch(
      /starts with "acme-", which is not glpat-\. A personal, project or group access token minted under a previous custom prefix/,
    );
    expectNoSecret(old, 'acme-sandbox-root-old-prefix-007');
    const junk = await token(sb, { action: 'inspect' }, 'just-some-text');
    expect(junk.code).toBe('SHARDMOVE_TOKEN_UNSUPPORTED');
    const alice = await token(sb, { action: 'inspect' }, 'glft-sandbox-feed-alice-0001', { GITLAB_TOKEN: ALICE });
    expect(alice.code).toBe('SHARDMOVE_TOKEN_FORBIDDEN');
    expect(alice.message).toMatch(/not an administrator's/);
    expectNoSecret(alice, 'glft-sandbox-feed-alice-0001', ALICE);
  });

  it('the table shows every field; a plan names the instance', async () => {
    const sb = await sandbox('17.11.0');
    const plan = join(dir, 'plan.yaml');
    writeFileSync(
      plan,
      `version: 1\nname: t\ninstance:\n  url: \${U}\n  token: \${T}\nmove:\n  from: [nfs-1]\n  to: cluster\n`,
    );
    const o = await token(sb, { action: 'inspect', plan }, ALICE, {
      U: sb.url,
      T: ROOT,
      GITLAB_URL: '',
      GITLAB_TOKEN: '',
    });
    expect(o.code, o.message).toBe(0);
    expect(o.stdout.split('\n').map((l) => l.split(/\s{2,}|\s(?=\S)/)[0])).toEqual([
      'type',
      'owner',
      'id',
      'scopes',
      'expires',
      'last',
      'state',
      'on',
      '',
    ]);
    expect(o.stdout).toMatch(/^type {7}personal access token\nowner {6}alice\n/);
    expect(o.stdout).toMatch(/\nstate {6}active\non revoke {2}revoke\n$/);
    expectNoSecret(o, ALICE, ROOT);
  });
});

describe('shardmove token as a process', { timeout: 30_000 }, () => {
  const cli = (args: string[], env: Record<string, string>, input?: string) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
      const child = execFile(
        process.execPath,
        [BIN, ...args],
        { cwd: dir, env: { PATH: process.env.PATH, ...env } },
        (err, stdout, stderr) =>
          done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
      );
      child.stdin?.end(input ?? '');
    });

  it('reads the token from stdin, refuses it as an argument, and never echoes it', async () => {
    const sb = await sandbox('17.11.0');
    const env = { GITLAB_URL: sb.url, GITLAB_TOKEN: ROOT };
    const ok = await cli(['token', 'revoke'], env, `${ALICE}\n`);
    expect([ok.code, ok.stdout]).toEqual([
      0,
      expect.stringMatching(/^revoked: personal access token of alice \(id \d+\)\n/),
    ]);
    const argv = await cli(['token', 'inspect', ALICE], env);
    expect(argv.code).toBe(2);
    expect(argv.stderr).not.toContain(ALICE.slice(6));
    const file = join(dir, 'feed.txt');
    writeFileSync(file, 'glft-sandbox-feed-alice-0001\n', { mode: 0o600 });
    const reset = await cli(['token', 'revoke', '--token-file', file, '--show-new-value'], env);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toMatch(/^reset: feed token of alice\n.*\nnew value: not returned by the instance/);
    for (const o of [ok, argv, reset]) expect(o.stdout + o.stderr).not.toMatch(/sandbox-alice-api|sandbox-feed-alice/);
    const empty = await cli(['token', 'inspect'], env, '');
    expect([empty.code, empty.stderr]).toEqual([2, 'shardmove: token: standard input is empty\n']);
  });
});
