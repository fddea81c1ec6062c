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
import { bigDryRun } from './big-checkpoint.js';
import { ROOT } from './bench-procs.js';

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

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-bench-twin-'));
  try {
    process.stderr.write(
      `a dry run against a small sandbox, then ${ITEMS.toLocaleString('en')} projects written into its checkpoint...\n`,
    );
    const { plan, state, setupMs } = await bigDryRun(dir, 'twin-bench', ITEMS);

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
