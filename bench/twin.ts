/**
 * `npm run bench:twin`: the twin at scale. A finished dry run's checkpoint with
 * BENCH_TWIN_ITEMS projects (default 1,000,000) is made quickly: a real dry run against a small
 * sandbox, then the items written into its checkpoint with the store's own recordPage (sizes
 * log-normal, 1% hidden and 0.5% pending deletion by the census' own tables). Then it measures, each
 * in its own process: `shardmove twin` (wall time, peak RSS, the files' sizes), and the sandbox
 * loading the twin's seed until its ready line, in memory and with --db (wall time, peak RSS).
 * Target: the sandbox loads a million-item twin in under 20 s, the 1M seeding budget. Prints a
 * table; takes about a minute.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { ItemRecord } from '../src/api/types.js';
import { BENCH_TOKEN, ROOT, startSandboxProc, writePlan, writeSeed } from './bench-procs.js';

const ITEMS = Number(process.env.BENCH_TWIN_ITEMS ?? 1_000_000);
const BIN = join(ROOT, 'bin', 'shardmove');

interface Measured {
  wallMs: number;
  peakRssMb: number;
  stdout: string;
}

/** Runs `bin/shardmove ...args` to its end (or, with `untilReady`, to its ready line, then stops it), sampling VmHWM. */
function measure(args: string[], untilReady = false): Promise<Measured> {
  const started = performance.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let peakKb = 0;
  const sample = () => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (m) peakKb = Math.max(peakKb, Number(m[1]));
    } catch {
      // ended between samples
    }
  };
  const timer = setInterval(sample, 25);
  let stdout = '';
  return new Promise((resolve, reject) => {
    let wallMs = 0;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      stdout += `${line}\n`;
      if (untilReady && line.startsWith('{"event":"ready"')) {
        wallMs = performance.now() - started;
        sample();
        child.kill('SIGTERM');
      }
    });
    child.once('exit', (code) => {
      clearInterval(timer);
      if (!untilReady && code !== 0) reject(new Error(`shardmove ${args[0]} exited with ${code}`));
      resolve({ wallMs: wallMs || performance.now() - started, peakRssMb: peakKb / 1024, stdout });
    });
  });
}

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

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-bench-twin-'));
  try {
    process.stderr.write(
      `a dry run against a small sandbox, then ${ITEMS.toLocaleString('en')} projects written into its checkpoint...\n`,
    );
    const sandbox = await startSandboxProc([
      '--seed',
      writeSeed(dir, { projects: 10, snippets: 2, groups: 2, storages: { 'nfs-1': 1 } }),
    ]);
    const plan = writePlan(dir, 'twin-bench', {
      url: sandbox.url,
      from: ['nfs-1'],
      kinds: ['projects', 'snippets', 'groups'],
      concurrency: 50,
      pollInterval: '1s',
      backoff: '1s',
    });
    const state = join(dir, 'twin-bench.dry-run.db');
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
    for (let from = 1001; from <= 1000 + ITEMS; from += 1000) {
      const page: ItemRecord[] = [];
      for (let id = from; id < from + 1000 && id <= 1000 + ITEMS; id++) {
        page.push({
          kind: 'projects',
          id,
          storage: 'nfs-1',
          name: `group-${id % 977}/project-${id}`,
          sizeBytes: size(),
        });
        if (id % 100 === 0) hidden.push(id);
        if (id % 200 === 7) pending.push(id);
      }
      store.recordPage('projects', 'nfs-1', 1, page, Date.now());
    }
    store.shape.flagItems('projects', hidden, 'hidden');
    store.shape.flagItems('projects', pending, 'pending_delete');
    store.close();
    const setupMs = performance.now() - t0;

    const out = join(dir, 'twin.yaml');
    const twin = await measure(['twin', plan, '--state', state, '--out', out]);
    const seedBytes = statSync(out).size;
    const itemsBytes = statSync(join(dir, 'twin.items.jsonl')).size;
    const inMemory = await measure(['sandbox', '--seed', out, '--port', '0'], true);
    const onDisk = await measure(['sandbox', '--seed', out, '--port', '0', '--db', join(dir, 'twin-sandbox.db')], true);
    const estimate = /estimate \(dry run\): (.*)/.exec(twin.stdout)?.[1] ?? '?';

    const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
    const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    process.stdout.write(
      [
        `twin of a dry run with ${ITEMS.toLocaleString('en')} projects (checkpoint written in ${s(setupMs)})`,
        `| | wall | peak RSS |`,
        `|---|---|---|`,
        `| shardmove twin | ${s(twin.wallMs)} | ${twin.peakRssMb.toFixed(0)} MB |`,
        `| sandbox loads the twin, in memory (to ready) | ${s(inMemory.wallMs)} | ${inMemory.peakRssMb.toFixed(0)} MB |`,
        `| sandbox loads the twin, --db on disk (to ready) | ${s(onDisk.wallMs)} | ${onDisk.peakRssMb.toFixed(0)} MB |`,
        `seed ${(seedBytes / 1024).toFixed(1)} KiB, items file ${mb(itemsBytes)} (${(itemsBytes / ITEMS).toFixed(1)} bytes per item); target: load < 20 s`,
        `estimate (dry run): ${estimate}`,
        '',
      ].join('\n'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
