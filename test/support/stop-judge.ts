/**
 * What the tests of a stop from outside share: the checkpoint as the judge reads it (its events,
 * the stop request in its control row), and a run started into a held sandbox with its moves in
 * flight.
 */
import { existsSync, lstatSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect, onTestFinished } from 'vitest';
import type { AuditEvent } from '../../src/events/vocabulary.js';
import { openCheckpoint } from '../../src/store/checkpoint.js';
import type { CliResult } from './cli-harness.js';
import { runCli, sandboxEnv, tempDir, writePlan } from './cli-harness.js';
import { ended } from './held-sandbox.js';
import type { HeldSandbox } from './held-sandbox.js';
import { until } from './until.js';

/** The checkpoint's audit events, oldest first ([] while it does not exist yet). */
export function eventsOf(file: string): AuditEvent[] {
  if (!existsSync(file)) return [];
  try {
    const store = openCheckpoint(file, { readOnly: true, busyTimeoutMs: 10_000 });
    try {
      return store.readEvents(0, 1_000_000);
    } finally {
      store.close();
    }
  } catch {
    return [];
  }
}

/** The entry at `path` (not followed), or null. */
export function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** The stop request the checkpoint's control row holds. */
export function stopInRow(file: string) {
  const store = openCheckpoint(file, { readOnly: true });
  try {
    return store.readControl().stop ?? null;
  } finally {
    store.close();
  }
}

/**
 * What the judge of every stop checks in the checkpoint: no move was started after the run saw the
 * stop (`run.stopping`; the drain's cap reads the same row, and launches in the tick it read it).
 */
export function intentsAfterStop(events: readonly AuditEvent[]): number {
  const seen = events.findIndex((e) => e.type === 'run.stopping');
  expect(seen, 'the run saw the stop').toBeGreaterThanOrEqual(0);
  return events.slice(seen).filter((e) => e.type === 'move.intent' || e.type === 'bulk.intent').length;
}

export const has = (file: string, type: string) => () => Promise.resolve(eventsOf(file).some((e) => e.type === type));

export function setup(prefix: string, concurrency = 4): { dir: string; plan: string; file: string } {
  const dir = tempDir(prefix);
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, plan: writePlan(dir, { concurrency }), file: join(dir, 'state', 'it.db') };
}

/** Starts `run` and waits until `n` moves of it are in flight in the held sandbox. */
export async function runWithMovesInFlight(
  held: HeldSandbox,
  dir: string,
  args: string[],
  n: number,
): Promise<{ run: Promise<CliResult>; pid: () => number; stdout: () => string }> {
  let pid = 0;
  let out = '';
  const run = runCli(args, {
    cwd: dir,
    env: sandboxEnv(held.url),
    onStart: (c) => {
      pid = c.pid ?? 0;
      // What the run has printed so far, read while it goes on.
      c.stdout?.on('data', (chunk) => (out += String(chunk)));
    },
  });
  const inFlight = await until(
    async () => (await held.moves()).filter((m) => !ended(m)).length,
    (k) => k >= n,
    30_000,
  );
  expect(inFlight).toBe(n);
  return { run, pid: () => pid, stdout: () => out };
}
