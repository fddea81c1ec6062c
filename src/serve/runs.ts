/**
 * The runs a console serves: checkpoints named by plans, by `--state`, or found under `--state-dir`.
 * Each has a short id (a hash of its path, stable across restarts of the console) for its URLs.
 * Finding them only reads directory entries; a checkpoint is opened read-only at each look.
 */
import { createHash } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PlanGiven } from '../runtime/status.js';

export interface ServedRun {
  id: string;
  /** The checkpoint file, absolute. */
  file: string;
  /** The plan it was named by, when one was given (null: found under --state-dir or given by --state). */
  planFile: string | null;
  /** The plan's name and cap, when the plan was read. */
  plan: PlanGiven | null;
}

/** Directories looked into below --state-dir (a plan's `state/` inside a project's folder is two down). */
const DEPTH = 3;

export function runId(file: string): string {
  return createHash('sha256').update(file).digest('hex').slice(0, 12);
}

export function servedRun(file: string, planFile: string | null, plan: PlanGiven | null): ServedRun {
  const abs = resolve(file);
  return { id: runId(abs), file: abs, planFile, plan };
}

/**
 * The checkpoints under `dir`: regular files named `*.db` (a FIFO or a device of that name is never
 * opened: reading one would hang the console), down to DEPTH directories, in name order. A
 * directory that cannot be read is named in `skipped`, not fatal.
 */
export function checkpointsUnder(dir: string): { files: string[]; skipped: string[] } {
  const files: string[] = [];
  const skipped: string[] = [];
  const walk = (at: string, depth: number): void => {
    let names: string[];
    try {
      names = readdirSync(at).sort();
    } catch (err) {
      skipped.push(`${at}: ${(err as Error).message}`);
      return;
    }
    for (const name of names) {
      const path = join(at, name);
      let st;
      try {
        st = statSync(path);
      } catch {
        continue;
      }
      if (st.isDirectory()) {
        if (depth < DEPTH) walk(path, depth + 1);
      } else if (st.isFile() && name.endsWith('.db')) files.push(resolve(path));
    }
  };
  walk(dir, 1);
  return { files, skipped };
}

/** The runs in the order given, each checkpoint once (the first naming wins). */
export function uniqueRuns(runs: readonly ServedRun[]): ServedRun[] {
  const seen = new Set<string>();
  return runs.filter((r) => !seen.has(r.id) && seen.add(r.id));
}
