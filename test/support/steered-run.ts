/**
 * A real run (the runtime in-process) against the in-process sandbox, steered the way an operator
 * steers one with `shardmove control` (a second connection to the same checkpoint): the cap is
 * lowered, the run paused and unpaused, the cap given back to the plan. The HTML report's browser
 * test and the docs screenshot (bench/report-screenshot.ts) both use it.
 */
import { Writable } from 'node:stream';
import type { Seed } from '../../src/sandbox/seed-schema.js';
import type { FaultOptions } from '../../src/sandbox/faults.js';
import { startSandbox } from '../../src/sandbox/index.js';
import { executeRun } from '../../src/runtime/run.js';
import type { RunOutcome } from '../../src/runtime/types.js';
import { openCheckpoint } from '../../src/store/checkpoint.js';
import { ADMIN_TOKEN } from './cli-harness.js';

export interface SteeredRunOptions {
  planFile: string;
  statePath: string;
  cwd: string;
  seed?: string | Seed;
  workers: number;
  moveDurationMs: number;
  faults: Partial<FaultOptions>;
  /** Moved items at which the cap drops to `lowCap`, and at which the run pauses for `pauseMs`. */
  capAt: number;
  lowCap: number;
  pauseAt: number;
  pauseMs: number;
  /** Called while the run is paused (e.g. to take a report of a live run). */
  whilePaused?: () => void | Promise<void>;
}

const quiet = () => new Writable({ write: (_c, _e, cb) => cb() });

/** Runs the plan to its end, steering it on the way; returns the outcome. */
export async function steeredRun(o: SteeredRunOptions): Promise<RunOutcome> {
  const sandbox = await startSandbox({
    workers: o.workers,
    moveDurationMs: o.moveDurationMs,
    faults: o.faults,
    ...(o.seed ? { seed: o.seed } : {}),
  });
  // Created (and migrated) now, so the operator's connection can open it before the run does.
  const control = openCheckpoint(o.statePath);
  let phase: 'cap' | 'pause' | 'done' = 'cap';
  let steering: Promise<void> = Promise.resolve();
  const moved = () =>
    control
      .summary(Date.now())
      .counts.filter((c) => c.state === 'moved')
      .reduce((a, c) => a + c.n, 0);
  const timer = setInterval(() => {
    if (phase === 'cap' && moved() >= o.capAt) {
      control.writeControl({ concurrency: o.lowCap }, Date.now());
      phase = 'pause';
    } else if (phase === 'pause' && moved() >= o.pauseAt) {
      phase = 'done';
      control.writeControl({ paused: true }, Date.now());
      steering = (async () => {
        await new Promise((r) => setTimeout(r, o.pauseMs / 2));
        await o.whilePaused?.();
        await new Promise((r) => setTimeout(r, o.pauseMs / 2));
        control.writeControl({ paused: false, concurrency: null }, Date.now());
      })();
    }
  }, 25);
  try {
    return await executeRun({
      planFile: o.planFile,
      statePath: o.statePath,
      dryRun: false,
      acceptPlanChange: false,
      env: { SHARDMOVE_URL: sandbox.url, SHARDMOVE_TOKEN: ADMIN_TOKEN },
      cwd: o.cwd,
      signal: new AbortController().signal,
      stdout: quiet(),
      stderr: quiet(),
    });
  } finally {
    clearInterval(timer);
    await steering;
    control.close();
    await sandbox.close();
  }
}
