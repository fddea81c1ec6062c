/**
 * `shardmove revert` and fork networks: a forward run that drained two sources
 * into two destinations, keeping each network together, then a revert. Every member is pinned to
 * the storage it came from, so each network goes back as it was: judged from the sandbox's own
 * records (each project's storage and checksum, the pools per network and storage).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { ADMIN_TOKEN, runCli, sandboxEnv, tempDir, writeChangedSeed } from './support/cli-harness.js';

interface Pool {
  network: number;
  storage: string;
  members: number[];
}

async function poolsOf(url: string): Promise<string[]> {
  const res = await fetch(`${url}/-/sandbox/pools`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  expect(res.status).toBe(200);
  return ((await res.json()) as Pool[])
    .map((p) => `${p.network}@${p.storage}: ${[...p.members].sort((a, b) => a - b).join(',')}`)
    .sort();
}

function projects(sandbox: RunningSandbox): Map<number, string> {
  const rows = sandbox.state.db
    .prepare(`SELECT id, storage, checksum FROM items WHERE kind = 'project' ORDER BY id`)
    .all() as { id: number; storage: string; checksum: string }[];
  return new Map(rows.map((r) => [r.id, `${r.storage} ${r.checksum}`]));
}

describe('shardmove revert of a drain that kept fork networks together', { timeout: 120_000 }, () => {
  let sandbox: RunningSandbox | null = null;
  let dir: string;
  afterEach(async () => {
    await sandbox?.close();
    sandbox = null;
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends every member back to its own storage: the networks, their pools and the checksums are as before', async () => {
    dir = tempDir('revert-forks');
    const seedFile = writeChangedSeed(dir, { projects: 40, snippets: 1, groups: 1 }, (doc) => {
      doc.setIn(['inventory', 'generate', 'storages'], doc.createNode({ 'nfs-1': 0.5, 'nfs-2': 0.5 }));
      doc.setIn(['inventory', 'generate', 'public_fraction'], 1);
      doc.setIn(['inventory', 'generate', 'fork_networks'], doc.createNode({ count: 5, max_forks: 3 }));
    });
    sandbox = await startSandbox({ seed: seedFile, workers: 6, moveDurationMs: 20 });
    const plan = join(dir, 'forks.yaml');
    writeFileSync(
      plan,
      [
        'version: 1',
        'name: forks',
        'instance:',
        '  url: ${SHARDMOVE_URL}',
        '  token: ${SHARDMOVE_TOKEN}',
        'move:',
        '  from: [nfs-1, nfs-2]',
        '  to: [cluster, default]',
        '  kinds: [projects]',
        '  concurrency: 6',
        'capacity:',
        '  storages: {cluster: {free: 1TiB}, default: {free: 1TiB}}',
        'poll: { interval: 100ms }',
        'retry: { max_attempts: 2, backoff: 100ms }',
        '',
      ].join('\n'),
    );
    const env = sandboxEnv(sandbox.url);
    const before = projects(sandbox);
    const poolsBefore = await poolsOf(sandbox.url);
    expect(poolsBefore.length).toBeGreaterThanOrEqual(3);

    const forward = await runCli(['run', plan], { cwd: dir, env });
    expect(forward.code, forward.stdout + forward.stderr).toBe(0);
    const moved = projects(sandbox);
    expect([...moved.values()].every((v) => v.startsWith('cluster ') || v.startsWith('default '))).toBe(true);

    const revert = await runCli(['revert', plan, '--yes'], { cwd: dir, env });
    expect(revert.code, revert.stdout + revert.stderr).toBe(0);
    expect(projects(sandbox)).toEqual(before);
    expect(await poolsOf(sandbox.url)).toEqual(poolsBefore);
  });
});
