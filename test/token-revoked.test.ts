/**
 * A personal access token revoked in the middle of a run (DELETE /admin/token by another admin, as
 * an operator or a security tool would): the run stops with exit 1 and an error that names the
 * problem but not the token, the checkpoint stays intact, and `run` with a new token in the
 * environment resumes and completes without scheduling any item a second time.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { SandboxMove } from './support/cli-harness.js';
import { invariantViolations, movesOf, runCli, storagesOf, tempDir } from './support/cli-harness.js';
import { SECRETS, findLeaks, startLoggedSandbox, writeSecretPlan, writeSecretSeed } from './support/secrets-harness.js';

const KINDS = ['project', 'snippet', 'group'] as const;

type KindMove = SandboxMove & { kind: (typeof KINDS)[number] };

/** Every move the sandbox recorded, of every kind. */
async function allMoves(url: string): Promise<KindMove[]> {
  return (await Promise.all(KINDS.map(async (kind) => (await movesOf(url, kind)).map((m) => ({ ...m, kind }))))).flat();
}

async function finishedMoves(url: string): Promise<number> {
  return (await allMoves(url)).filter((m) => m.state === 'finished').length;
}

describe('a personal token revoked mid-run', { timeout: 60_000 }, () => {
  it('stops with exit 1 naming the problem; a new token resumes and completes with no move scheduled twice', async () => {
    const root = tempDir('token-revoked');
    const work = join(root, 'work');
    mkdirSync(work);
    const sandbox = await startLoggedSandbox(['--seed', writeSecretSeed(root, { projects: 40 }), '--db', join(root, 'sandbox.db'), '--move-duration', '300', '--workers', '5']);
    onTestFinished(async () => {
      await sandbox.stop();
      rmSync(root, { recursive: true, force: true });
    });
    const { plan } = writeSecretPlan(work, { auth: 'env', concurrency: 5 });
    const env = { SHARDMOVE_URL: sandbox.url };

    const first = runCli(['run', plan], { cwd: work, env: { ...env, SHARDMOVE_TOKEN: SECRETS.pat } });
    const until = Date.now() + 30_000;
    while ((await finishedMoves(sandbox.url)) < 5 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    const revoke = await fetch(`${sandbox.url}/api/v4/admin/token`, {
      method: 'DELETE',
      headers: { 'PRIVATE-TOKEN': SECRETS.revoker, 'content-type': 'application/json' },
      body: JSON.stringify({ token: SECRETS.pat }),
    });
    expect(revoke.status).toBe(204);
    const stopped = await first;
    expect(stopped.code, stopped.stderr).toBe(1);
    expect(stopped.stdout).toContain('FAILED');
    expect(stopped.stdout).toContain('the token was revoked');
    expect(stopped.stdout).toContain('run the same command again');
    expect(findLeaks('first run', stopped.stdout + stopped.stderr, [SECRETS.pat])).toEqual([]);

    // The checkpoint is whole and says where the run stopped.
    const file = join(work, 'state', 'it.db');
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
    raw.close();
    const store = openCheckpoint(file, { readOnly: true });
    const events = store.readEvents(0, 1_000_000);
    store.close();
    const finished = events.filter((e) => e.type === 'run.finished').at(-1);
    expect(finished?.data['state']).toBe('failed');
    const status = await runCli(['status', plan, '--json'], { cwd: work });
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as { state: string }).state).toBe('failed');

    const before = await allMoves(sandbox.url);
    expect(before.length).toBeGreaterThanOrEqual(5);
    expect(before.length).toBeLessThan(63);

    const resumed = await runCli(['run', plan], { cwd: work, env: { ...env, SHARDMOVE_TOKEN: SECRETS.patNext } });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('DONE');
    for (const kind of ['projects', 'snippets', 'groups'] as const) {
      expect([...(await storagesOf(sandbox.url, kind)).values()].filter((s) => s !== 'cluster'), kind).toEqual([]);
    }
    const after = await allMoves(sandbox.url);
    // Nothing fails in this sandbox, so exactly one move per item; the moves of the first run are kept.
    const perItem = new Map<string, number>();
    for (const m of after) perItem.set(`${m.kind}:${m.itemId}`, (perItem.get(`${m.kind}:${m.itemId}`) ?? 0) + 1);
    expect([...perItem].filter(([, n]) => n > 1)).toEqual([]);
    expect(after.length).toBe(40 + 15 + 8);
    const key = (m: KindMove) => `${m.kind}#${m.id}`;
    expect(before.every((b) => after.some((m) => key(m) === key(b)))).toBe(true);
    for (const kind of KINDS) expect(invariantViolations(await movesOf(sandbox.url, kind), 'cluster'), kind).toEqual([]);
    expect(findLeaks('sandbox log', sandbox.output(), [SECRETS.pat, SECRETS.patNext, SECRETS.revoker])).toEqual([]);
  });
});
