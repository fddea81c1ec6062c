/**
 * Room counts what really lands, judged from the sandbox's own records (its moves,
 * its settings, and what its node_exporter says is available on the destination): a moving member
 * of a fork network lands with its pool's objects on every release, the pool is copied once onto
 * the destination on releases that copy pools, and a fork of a fork is standalone. A plan that fits
 * by the members' own sizes but not by what lands is refused before any write; one that fits by
 * what lands really fits.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { runCli, sandboxEnv, tempDir, writeChangedSeed } from './support/cli-harness.js';
import { writeProjectsPlan } from './support/projects-plan.js';
import { filesystemValue } from './support/sandbox-exporters.js';

const MIB = 2 ** 20;

/**
 * On nfs-1: root 1 (500 MiB, public: its pool is 500 MiB), its direct forks 2 and 3 (300 MiB each)
 * and a fork of fork 2, project 4 (100 MiB, in no pool). Their own sizes make 1200 MiB; what lands
 * is 1000 + 800 + 800 + 100 = 2700 MiB, and 3200 MiB with the pool copy of 16.3 and later.
 * `cluster`, empty, has `roomMib`.
 */
function seed(dir: string, version: string, roomMib: number): string {
  return writeChangedSeed(dir, { projects: 4, snippets: 1, groups: 1 }, (doc) => {
    doc.deleteIn(['inventory', 'generate']);
    doc.setIn(['instance', 'version'], version);
    doc.setIn(
      ['inventory', 'projects'],
      doc.createNode([
        { id: 1, name: 'root', storage: 'nfs-1', visibility: 'public', size_mb: 500 },
        { id: 2, name: 'fork-a', storage: 'nfs-1', visibility: 'public', size_mb: 300, forked_from: 1 },
        { id: 3, name: 'fork-b', storage: 'nfs-1', visibility: 'public', size_mb: 300, forked_from: 1 },
        { id: 4, name: 'fork-of-a', storage: 'nfs-1', visibility: 'public', size_mb: 100, forked_from: 2 },
      ]),
    );
    doc.setIn(['inventory', 'snippets'], doc.createNode([]));
    doc.setIn(['inventory', 'groups'], doc.createNode([{ id: 1, name: 'g1', storage: 'default' }]));
    doc.setIn(['instance', 'storage_capacity'], doc.createNode({ cluster: roomMib * MIB }));
    // 16.3 to 16.5 follow the flag: on here, so that they copy the pool as 16.6 and later do.
    if (/^16\.[345]\./.test(version))
      doc.setIn(['instance', 'feature_flags'], doc.createNode({ replicate_object_pool_on_move: true }));
  });
}

describe('room for fork networks counts what lands (in-process sandbox, CLI process)', { timeout: 120_000 }, () => {
  let sandbox: RunningSandbox | null = null;
  let dir = '';
  afterEach(async () => {
    await sandbox?.close();
    sandbox = null;
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (name: string, version: string, roomMib: number) => {
    dir = tempDir(name);
    sandbox = await startSandbox({ seed: seed(dir, version, roomMib), workers: 2, moveDurationMs: 40 });
    const file = writeProjectsPlan(dir, ['cluster'], {
      name: 'room',
      extra: ['capacity:', `  storages: {cluster: {free: ${roomMib}MiB}}`],
    });
    return { sb: sandbox, file };
  };

  const moves = (sb: RunningSandbox) =>
    sb.state.db.prepare('SELECT item_id, state, fate FROM moves ORDER BY id').all() as {
      item_id: number;
      state: string;
      fate: string;
    }[];
  const settings = (sb: RunningSandbox) =>
    sb.state.db.prepare("SELECT value FROM meta WHERE key = 'settings'").get() as { value: string } | undefined;

  /** Runs the plan while sampling the destination's available bytes; returns the run and the lowest sample. */
  async function runSampling(sb: RunningSandbox, file: string) {
    let low = Number.POSITIVE_INFINITY;
    let running = true;
    const sampler = (async () => {
      while (running) {
        low = Math.min(low, (await filesystemValue(sb, 'node_filesystem_avail_bytes', 'cluster')) ?? low);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const run = await runCli(['run', file, '--state', join(dir, 'run.db')], { cwd: dir, env: sandboxEnv(sb.url) });
    running = false;
    await sampler;
    low = Math.min(low, (await filesystemValue(sb, 'node_filesystem_avail_bytes', 'cluster')) ?? low);
    return { run, low };
  }

  it('refuses, before any write, a plan that fits by its members own sizes but not with the pool they land with', async () => {
    const { sb, file } = await start('room-refused', '17.11.0', 2000);
    const before = settings(sb);
    const dry = await runCli(['run', file, '--dry-run', '--state', join(dir, 'dry.db')], {
      cwd: dir,
      env: sandboxEnv(sb.url),
    });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    // The dry run's fit line and the refusal: the same numbers.
    expect(dry.stdout).toContain('room on cluster: needs 3.1 GiB + keep_free 0 B, free 2.0 GiB: DOES NOT FIT');
    const run = await runCli(['run', file, '--state', join(dir, 'run.db')], { cwd: dir, env: sandboxEnv(sb.url) });
    expect(run.code, run.stdout + run.stderr).toBe(1);
    // What lands, and the four projects' design repository allowances (1 MiB each).
    expect(run.stdout).toContain(`the drain does not fit on cluster: it needs ${3204 * MIB} bytes (3.1 GiB)`);
    expect(run.stdout).toContain('SHARDMOVE_PREFLIGHT_CAPACITY');
    expect(moves(sb)).toEqual([]);
    expect(settings(sb)).toEqual(before);
  });

  it('runs a plan that fits what lands: no move runs out of room and the destination never fills', async () => {
    const { sb, file } = await start('room-fits', '17.11.0', 3300);
    const { run, low } = await runSampling(sb, file);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain('room on cluster: needs 3.1 GiB + keep_free 0 B, free 3.2 GiB: fits');
    expect(moves(sb).map((m) => `${m.item_id} ${m.state} ${m.fate}`)).toEqual([
      '1 finished ok',
      '2 finished ok',
      '3 finished ok',
      '4 finished ok',
    ]);
    expect(low).toBeGreaterThan(0);
    // What landed is what pre-flight counted: 100 MiB are left.
    expect(await filesystemValue(sb, 'node_filesystem_avail_bytes', 'cluster')).toBe(100 * MIB);
  });

  it.each([
    ['16.2.0', 2700, 2750],
    ['16.5.0', 3200, 3250],
  ])('on %s counts what that release lands (%d MiB) and fits in %d MiB', async (version, landsMib, roomMib) => {
    const { sb, file } = await start(`room-${version}`, version, roomMib);
    const { run, low } = await runSampling(sb, file);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(moves(sb).every((m) => m.state === 'finished' && m.fate === 'ok')).toBe(true);
    expect(low).toBeGreaterThan(0);
    expect(await filesystemValue(sb, 'node_filesystem_avail_bytes', 'cluster')).toBe((roomMib - landsMib) * MIB);
  });
});
