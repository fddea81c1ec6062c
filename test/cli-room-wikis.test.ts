/**
 * Room counts every repository a project move copies: its repository, its wiki
 * (`statistics.wiki_size`) and an allowance for its design repository. Projects whose repositories
 * fit on the destination and whose repositories plus wikis do not are refused in pre-flight, the
 * refusal naming the wiki bytes; judged from the exit code, the message and the sandbox's own
 * records (no move, the weights as they were).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { flat, runCli, sandboxEnv, tempDir, writeChangedSeed } from './support/cli-harness.js';
import { writeProjectsPlan } from './support/projects-plan.js';

const MIB = 2 ** 20;

/** Three 100 MiB projects on nfs-1, two of them with a 200 MiB wiki: 300 MiB of repositories, 700 MiB in all. */
function seed(dir: string): string {
  return writeChangedSeed(dir, { projects: 3, snippets: 1, groups: 1 }, (doc) => {
    doc.deleteIn(['inventory', 'generate']);
    doc.setIn(
      ['inventory', 'projects'],
      doc.createNode([
        { id: 1, name: 'with-wiki-a', storage: 'nfs-1', size_mb: 100, wiki_mb: 200 },
        { id: 2, name: 'with-wiki-b', storage: 'nfs-1', size_mb: 100, wiki_mb: 200 },
        { id: 3, name: 'no-wiki', storage: 'nfs-1', size_mb: 100 },
      ]),
    );
    doc.setIn(['inventory', 'snippets'], doc.createNode([]));
    doc.setIn(['inventory', 'groups'], doc.createNode([{ id: 1, name: 'g1', storage: 'default' }]));
    doc.setIn(['instance', 'storage_capacity'], doc.createNode({ cluster: 500 * MIB }));
  });
}

describe('room for project wikis (in-process sandbox, CLI process)', { timeout: 120_000 }, () => {
  let sandbox: RunningSandbox | null = null;
  let dir = '';
  afterEach(async () => {
    await sandbox?.close();
    sandbox = null;
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports each wiki as statistics.wiki_size, in bytes', async () => {
    dir = tempDir('wiki-stats');
    sandbox = await startSandbox({ seed: seed(dir), workers: 1, moveDurationMs: 10 });
    const res = await fetch(`${sandbox.url}/api/v4/projects/1?statistics=true`, {
      headers: { 'PRIVATE-TOKEN': sandboxEnv(sandbox.url).SHARDMOVE_TOKEN ?? '' },
    });
    const stats = ((await res.json()) as { statistics: Record<string, number> }).statistics;
    expect(stats.repository_size).toBe(100 * MIB);
    expect(stats.wiki_size).toBe(200 * MIB);
    expect(stats.storage_size).toBe(300 * MIB);
  });

  it('refuses projects whose repositories fit and whose repositories and wikis do not, naming the wiki bytes', async () => {
    dir = tempDir('wiki-room');
    const sb = (sandbox = await startSandbox({ seed: seed(dir), workers: 1, moveDurationMs: 10 }));
    const before = sb.state.db.prepare("SELECT value FROM meta WHERE key = 'settings'").get();
    const file = writeProjectsPlan(dir, ['cluster'], {
      name: 'wikis',
      extra: ['capacity:', '  storages: {cluster: {free: 500MiB}}'],
    });
    const run = await runCli(['run', file, '--state', join(dir, 'run.db')], { cwd: dir, env: sandboxEnv(sb.url) });
    const out = flat(run.stdout + run.stderr);
    expect(run.code, out).toBe(1);
    expect(out).toMatch(/the drain does not fit on cluster/);
    expect(out).toContain(`the wikis of 2 project(s), ${400 * MIB} bytes (400.0 MiB, statistics.wiki_size)`);
    expect(out).toMatch(/design repository allowance of 1\.0 MiB each \(3 project\(s\)\)/);
    expect((sb.state.db.prepare('SELECT count(*) AS n FROM moves').get() as { n: number }).n).toBe(0);
    expect(sb.state.db.prepare("SELECT value FROM meta WHERE key = 'settings'").get()).toEqual(before);
  });
});
