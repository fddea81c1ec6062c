/**
 * Row 6: the demo as `npm start` runs it (`bin/shardmove demo`, plans/demo.yaml against its
 * in-process sandbox), and the share of its run during which fewer slots were held than the cap
 * while an item was due, read from the checkpoint's event log by src/report/idle-slots.ts. It
 * depends on the machine's load, so it is the benchmark's to print, not a test's to assert.
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { idleSlots } from '../src/report/idle-slots.js';
import type { IdleSlots } from '../src/report/idle-slots.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { BenchConfig } from './bench-rows.js';
import { ROOT } from './bench-procs.js';

export interface DemoIdleRow extends IdleSlots {
  code: number | null;
  /** The machine's 1-minute load average when the demo ended. */
  load: number;
}

export async function demoIdleRow(c: BenchConfig): Promise<DemoIdleRow> {
  const state = join(c.dir, 'demo.db');
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bin', 'shardmove'), 'demo', '--state', state], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-5000);
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) process.stderr.write(`demo exited ${code}:\n${stderr}\n`);
  const load = loadavg()[0] ?? 0;
  const store = openCheckpoint(state, { readOnly: true });
  try {
    return { ...idleSlots(store.readEvents(0, 1_000_000)), code, load };
  } finally {
    store.close();
  }
}
