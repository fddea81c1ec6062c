/**
 * A finished dry run's checkpoint with `items` projects, made quickly: a real dry run against a
 * small sandbox, then the items written into its checkpoint with the store's own recordPage (sizes
 * log-normal around 40 MB, 1% hidden and 0.5% pending deletion by the census' own tables). For the
 * benchmarks that read a checkpoint at scale (`bench:twin`, `bench:serve`).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { ItemRecord } from '../src/api/types.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { BENCH_TOKEN, ROOT, startSandboxProc, writePlan, writeSeed } from './bench-procs.js';

const BIN = join(ROOT, 'bin', 'shardmove');

/** A log-normal size in bytes around 40 MB, capped at 20 GB, from a seeded generator. */
function sizes(seed: number): () => number {
  let a = seed >>> 0;
  const rand = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => {
    const z = Math.sqrt(-2 * Math.log(Math.max(rand(), 1e-9))) * Math.cos(2 * Math.PI * rand());
    return Math.round(Math.min(20e9, 40e6 * Math.exp(z)));
  };
}

/** The plan, its dry run's checkpoint (`<name>.dry-run.db` in `dir`) and how long writing the items took. */
export async function bigDryRun(
  dir: string,
  name: string,
  items: number,
): Promise<{ plan: string; state: string; setupMs: number }> {
  const sandbox = await startSandboxProc([
    '--seed',
    writeSeed(dir, { projects: 10, snippets: 2, groups: 2, storages: { 'nfs-1': 1 } }),
  ]);
  const plan = writePlan(dir, name, {
    url: sandbox.url,
    from: ['nfs-1'],
    kinds: ['projects', 'snippets', 'groups'],
    concurrency: 50,
    pollInterval: '1s',
    backoff: '1s',
  });
  const state = join(dir, `${name}.dry-run.db`);
  const dry = await new Promise<number | null>((resolve) => {
    spawn(process.execPath, [BIN, 'run', plan, '--dry-run', '--state', state], {
      cwd: ROOT,
      env: { ...process.env, BENCH_TOKEN },
      stdio: 'ignore',
    }).once('exit', resolve);
  });
  await sandbox.stop();
  if (dry !== 0) throw new Error(`dry run exited with ${dry}`);
  const t0 = performance.now();
  const store = openCheckpoint(state);
  const size = sizes(42);
  const hidden: number[] = [];
  const pending: number[] = [];
  for (let from = 1001; from <= 1000 + items; from += 1000) {
    const page: ItemRecord[] = [];
    for (let id = from; id < from + 1000 && id <= 1000 + items; id++) {
      page.push({ kind: 'projects', id, storage: 'nfs-1', name: `group-${id % 977}/project-${id}`, sizeBytes: size() });
      if (id % 100 === 0) hidden.push(id);
      if (id % 200 === 7) pending.push(id);
    }
    store.recordPage('projects', 'nfs-1', 1, page, Date.now());
  }
  store.shape.flagItems('projects', hidden, 'hidden');
  store.shape.flagItems('projects', pending, 'pending_delete');
  store.close();
  return { plan, state, setupMs: performance.now() - t0 };
}
