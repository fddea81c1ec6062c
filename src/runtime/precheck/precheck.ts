/**
 * The checkpoint's whole-file check, started before the run's modules load. Opening a checkpoint
 * runs SQLite's quick_check, which reads every page (about 0.3 s at a million items); loading the
 * run's modules takes as long or longer. `startPrecheck` runs the check in a worker thread while the
 * main thread loads them: it finds the checkpoint the way the run will (the plan's name and
 * `checkpoint:` field, or `--state`) and checks it as a reader. The run uses the verdict only for
 * the very file it then opens, and only when the file was there to check: a damaged file is
 * refused with the worker's words, before a byte is written; a sound one is opened without a
 * second quick_check. Anything else (no file yet, a plan the worker cannot read, a worker that
 * fails) leaves the run to check the file itself, as before.
 *
 * This module is loaded before the run's: it imports nothing but node's own modules.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CheckpointProblem } from '../../store/errors.js';

/** What the worker needs to find the checkpoint as `run` will. */
export interface PrecheckInput {
  planFile: string;
  statePath?: string | undefined;
  dryRun: boolean;
  cwd: string;
}

/** The verdict on `file`: sound (`checked`), or unusable with the problem and the message opening it gives. */
export interface Precheck {
  file: string;
  /** The file was there and was checked whole. */
  checked: boolean;
  problem?: CheckpointProblem;
  message?: string;
}

/**
 * Where bin/shardmove found tsx when it runs the TypeScript sources (a clone without a current
 * build): a worker thread does not inherit the main thread's loader, so it registers tsx itself.
 */
export const TSX_API_ENV = 'SHARDMOVE_TSX_API';

/** Registers tsx in the worker when the sources run as TypeScript, then loads the worker's module. */
const SHIM = `const { workerData, parentPort } = require('node:worker_threads');
(async () => {
  if (workerData.tsx) (await import(workerData.tsx)).register();
  await import(workerData.entry);
})().catch(() => parentPort.postMessage(null));`;

/** Starts the check in a worker thread; resolves to its verdict, or null when it has none. Never rejects. */
export function startPrecheck(input: PrecheckInput): Promise<Precheck | null> {
  try {
    // The compiled worker beside the compiled code; running the sources, the TypeScript beside them.
    const compiled = new URL('./precheck-worker.js', import.meta.url);
    const built = existsSync(fileURLToPath(compiled));
    const tsx = built ? null : (process.env[TSX_API_ENV] ?? null);
    if (!built && tsx === null) return Promise.resolve(null);
    const entry = built ? compiled.href : compiled.href.replace(/\.js$/, '.ts');
    const worker = new Worker(SHIM, { eval: true, workerData: { entry, tsx, input } });
    // A command that ends before it looks at the verdict does not wait for the worker.
    worker.unref();
    return new Promise((resolve) => {
      worker.once('message', (m: Precheck | null) => resolve(m));
      worker.once('error', () => resolve(null));
      worker.once('exit', () => resolve(null));
    });
  } catch {
    return Promise.resolve(null);
  }
}
