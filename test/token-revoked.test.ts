/**
 * A credential revoked in the middle of a run: a personal access token through DELETE /admin/token
 * by another admin (as an operator or a security tool would), an OAuth pair in the sandbox's own
 * records (GitLab's /admin/token cannot revoke OAuth tokens). The run stops with exit 1 and an error
 * that names the problem but not the value, the checkpoint stays intact, and `run` with a new
 * credential resumes and completes without scheduling any item a second time.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { SandboxMove } from './support/cli-harness.js';
import { flat, invariantViolations, movesOf, runCli, storagesOf, tempDir } from './support/cli-harness.js';
import type { AuthStyle } from './support/secrets-harness.js';
import { SECRETS, findLeaks, startLoggedSandbox, writeSecretPlan, writeSecretSeed } from './support/secrets-harness.js';

const KINDS = ['project', 'snippet', 'group'] as const;
const ITEMS = 40 + 15 + 8;
/** A fresh OAuth pair, as an operator would get by authorizing again. */
const NEW_PAIR = { access: 'Sx7Qm+NewAcc/Pq2Wn6Rv8Ct1=', refresh: 'Sx7Qm+NewRef/Jm4Xb7Kd3Gs9=' };

type KindMove = SandboxMove & { kind: (typeof KINDS)[number] };

/** Every move the sandbox recorded, of every kind. */
async function allMoves(url: string): Promise<KindMove[]> {
  return (await Promise.all(KINDS.map(async (kind) => (await movesOf(url, kind)).map((m) => ({ ...m, kind }))))).flat();
}

interface Case {
  auth: AuthStyle;
  /** The environment of the first run. */
  env: Record<string, string>;
  /** Revokes the run's credential, in the middle of the run. */
  revoke(url: string, sandboxDb: string): Promise<void>;
  /** What the report must say. */
  problem: string;
  /** Provides a new credential; returns the environment of the resumed run. */
  renew(work: string, sandboxDb: string): Record<string, string>;
  secrets: string[];
}

/** Runs, revokes once 5 moves are finished, checks the stop, renews, resumes, checks the sandbox's moves. */
async function revokedMidRun(name: string, c: Case): Promise<void> {
  const root = tempDir(name);
  const work = join(root, 'work');
  mkdirSync(work);
  const sandboxDb = join(root, 'sandbox.db');
  const sandbox = await startLoggedSandbox([
    '--seed',
    writeSecretSeed(root, { projects: 40 }),
    '--db',
    sandboxDb,
    '--move-duration',
    '300',
    '--workers',
    '5',
  ]);
  onTestFinished(async () => {
    await sandbox.stop();
    rmSync(root, { recursive: true, force: true });
  });
  const { plan } = writeSecretPlan(work, { auth: c.auth, concurrency: 5 });
  const url = { SHARDMOVE_URL: sandbox.url };

  const first = runCli(['run', plan], { cwd: work, env: { ...url, ...c.env } });
  const until = Date.now() + 30_000;
  while ((await allMoves(sandbox.url)).filter((m) => m.state === 'finished').length < 5 && Date.now() < until)
    await new Promise((r) => setTimeout(r, 50));
  await c.revoke(sandbox.url, sandboxDb);
  const stopped = await first;
  expect(stopped.code, stopped.stderr).toBe(1);
  expect(stopped.stdout).toContain('FAILED');
  expect(flat(stopped.stdout)).toContain(c.problem);
  expect(findLeaks('first run', stopped.stdout + stopped.stderr, c.secrets)).toEqual([]);

  // The checkpoint is whole and says where the run stopped.
  const file = join(work, 'state', 'it.db');
  const raw = new Database(file, { readonly: true });
  expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
  raw.close();
  const store = openCheckpoint(file, { readOnly: true });
  const finished = store
    .readEvents(0, 1_000_000)
    .filter((e) => e.type === 'run.finished')
    .at(-1);
  store.close();
  expect(finished?.data['outcome']).toBe('failed');
  const status = await runCli(['status', plan, '--json'], { cwd: work });
  expect(status.code, status.stderr).toBe(0);
  expect((JSON.parse(status.stdout) as { state: string }).state).toBe('failed');

  const before = await allMoves(sandbox.url);
  expect(before.length).toBeGreaterThanOrEqual(5);
  expect(before.length).toBeLessThan(ITEMS);

  const resumed = await runCli(['run', plan], { cwd: work, env: { ...url, ...c.renew(work, sandboxDb) } });
  expect(resumed.code, resumed.stderr).toBe(0);
  expect(resumed.stdout).toContain('DONE');
  for (const kind of ['projects', 'snippets', 'groups'] as const) {
    expect(
      [...(await storagesOf(sandbox.url, kind)).values()].filter((s) => s !== 'cluster'),
      kind,
    ).toEqual([]);
  }
  // Nothing fails in this sandbox, so exactly one move per item; the moves of the first run are kept.
  const after = await allMoves(sandbox.url);
  const perItem = new Map<string, number>();
  for (const m of after) perItem.set(`${m.kind}:${m.itemId}`, (perItem.get(`${m.kind}:${m.itemId}`) ?? 0) + 1);
  expect([...perItem].filter(([, n]) => n > 1)).toEqual([]);
  expect(after.length).toBe(ITEMS);
  const key = (m: KindMove) => `${m.kind}#${m.id}`;
  expect(before.every((b) => after.some((m) => key(m) === key(b)))).toBe(true);
  for (const kind of KINDS) expect(invariantViolations(await movesOf(sandbox.url, kind), 'cluster'), kind).toEqual([]);
  expect(findLeaks('resumed run', resumed.stdout + resumed.stderr, c.secrets)).toEqual([]);
  expect(findLeaks('sandbox log', sandbox.output(), c.secrets)).toEqual([]);
}

describe('a credential revoked mid-run', { timeout: 90_000 }, () => {
  it('personal token: stops with exit 1 naming the problem; a new token in the environment resumes with no move scheduled twice', async () => {
    await revokedMidRun('token-revoked-pat', {
      auth: 'env',
      env: { SHARDMOVE_TOKEN: SECRETS.pat },
      async revoke(url) {
        const res = await fetch(`${url}/api/v4/admin/token`, {
          method: 'DELETE',
          headers: { 'PRIVATE-TOKEN': SECRETS.revoker, 'content-type': 'application/json' },
          body: JSON.stringify({ token: SECRETS.pat }),
        });
        expect(res.status).toBe(204);
      },
      problem: 'the token was revoked',
      renew: () => ({ SHARDMOVE_TOKEN: SECRETS.patNext }),
      secrets: [SECRETS.pat, SECRETS.patNext, SECRETS.revoker],
    });
  });

  it('OAuth pair: the refresh fails, exit 1 says to re-authorize; a new pair in the token files resumes', async () => {
    await revokedMidRun('token-revoked-oauth', {
      auth: 'oauth',
      env: {},
      revoke(_url, sandboxDb) {
        const db = new Database(sandboxDb);
        try {
          db.pragma('busy_timeout = 5000');
          expect(
            db.prepare("UPDATE credentials SET revoked = 1 WHERE type = 'oauth' AND revoked = 0").run().changes,
          ).toBe(1);
        } finally {
          db.close();
        }
        return Promise.resolve();
      },
      problem: 're-authorize and update the token files',
      renew(work, sandboxDb) {
        const db = new Database(sandboxDb);
        try {
          db.pragma('busy_timeout = 5000');
          const now = Date.now();
          db.prepare(
            `INSERT INTO credentials (type, value, refresh_token, user_id, application_id, name, scopes, expires_at_ms, created_at, updated_at)
            VALUES ('oauth', ?, ?, 1, 1, 'reauthorized', '["api","sudo"]', ?, ?, ?)`,
          ).run(
            NEW_PAIR.access,
            NEW_PAIR.refresh,
            now + 7_200_000,
            new Date(now).toISOString(),
            new Date(now).toISOString(),
          );
        } finally {
          db.close();
        }
        writeFileSync(join(work, 'access.txt'), `${NEW_PAIR.access}\n`, { mode: 0o600 });
        writeFileSync(join(work, 'refresh.txt'), `${NEW_PAIR.refresh}\n`, { mode: 0o600 });
        return {};
      },
      secrets: [SECRETS.oauthAccess, SECRETS.oauthRefresh, SECRETS.clientSecret, NEW_PAIR.access, NEW_PAIR.refresh],
    });
  });
});
